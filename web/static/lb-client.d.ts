// TypeScript declarations of lb-client.js (docs/js-client.md), protocol lb.v1 (v1.2).

/** A ranked entry of top, view, page and rank answers; avatar and country come from profiles (v1.1). */
export interface Entry {
  rank: number;
  member: string;
  score: number;
  name?: string;
  avatar?: string;
  country?: string;
  /** The meta of the event that set the score (docs/lists.md), when it had one. */
  meta?: Record<string, unknown>;
}

export interface Welcome {
  type: 'welcome';
  member: string;
  role: 'player' | 'spectator' | 'server' | 'admin';
  node: string;
  server_time: number;
  exp: number;
  limits: { max_message: number; rate: number };
}

export interface Ack {
  type: 'ack';
  id: string;
  board: string;
  member: string;
  score: number;
  /** v1.3 (R24): absent, with prev_rank, on a sharded board unless its ack_rank is "global"; the rank comes from a view, a rank request or REST reads. */
  rank?: number;
  /** null when the member was new; absent when rank is. */
  prev_rank?: number | null;
  duplicate: boolean;
  seq: number;
  period?: number;
  /** v1.2 (§12): the member's cohort on a cohort board; rank and prev_rank are then within it. */
  cohort?: string;
  /** v1.2 (§12): the member's tier on a league board. */
  tier?: string;
  /** v1.3 (§18): the board's cap let only `applied` of the delta through. */
  capped?: true;
  /** v1.3 (§18): with `capped`, the part of the delta applied. */
  applied?: number;
  /** v1.3 (§17): on a region board, the member's region (its profile's country, ZZ for none) and its rank there. */
  region?: string;
  region_rank?: number;
  /** v1.3 (§16): true when the member is held: hidden from everyone but itself and admins. */
  held?: boolean;
}

export interface TopFrame {
  type: 'top';
  board: string;
  seq: number;
  entries: Entry[];
  total: number;
  ts: number;
  /** v1.1: the last frame of a period or board that became final. */
  final?: boolean;
  period?: number;
  /** v1.2 (§12): the frame is this cohort's standings (a subscription with cohort). */
  cohort?: string;
  /** v1.3 (§17): the frame is this region's standings (a subscription with region). */
  region?: string;
}

export interface ViewFrame {
  type: 'view';
  board: string;
  member: string;
  rank: number | null;
  score: number | null;
  around: Entry[];
  seq: number;
  ts: number;
}

/** v1.2 (§11): the listed members that have an entry, in rank order, with their global ranks and meta. */
export interface MembersFrame {
  type: 'members';
  board: string;
  entries: Entry[];
  total: number;
  seq: number;
  ts: number;
}

/** One history event of GET …/members/{member}/history (docs/lists.md), newest first. */
export interface HistoryEvent {
  id: string;
  delta?: number;
  value?: number;
  score: number;
  at: number;
  meta?: Record<string, unknown>;
}

export type BoardState = 'scheduled' | 'open' | 'closing' | 'final' | 'deleted';

/** v1.1 (R19): a board's lifecycle; times are the server's unix ms. */
export interface BoardFrame {
  type: 'board';
  board: string;
  state: BoardState;
  period?: number;
  starts_at?: number | null;
  ends_at?: number | null;
  final_at?: number | null;
  ts: number;
  /** v1.2 (§14): open subscriptions to the board over every node, when the frame carries them. */
  viewers?: number;
}

export interface Page {
  type: 'page';
  id: string;
  board: string;
  offset: number;
  entries: Entry[];
  total: number;
}

export interface RankReply {
  type: 'rank';
  id: string;
  board: string;
  member: string;
  rank: number | null;
  score: number | null;
  around: Entry[];
  /** v1.2 (§12): on a cohort board, the member's cohort (rank and around are within it) and, on a league board, its tier. */
  cohort?: string;
  tier?: string;
  /** v1.3 (§17): on a region board, when the member has an entry: its region and its rank there (rank and around stay the board's). */
  region?: string;
  region_rank?: number;
}

export type Status = 'idle' | 'connecting' | 'open' | 'reconnecting' | 'closed';

export type ErrorCode =
  | 'bad_request' | 'unauthorized' | 'token_expired' | 'forbidden' | 'unknown_board' | 'invalid_board'
  | 'invalid_member' | 'invalid_score' | 'out_of_range' | 'delta_too_large' | 'board_closed'
  | 'idempotency_conflict' | 'rate_limited' | 'unavailable' | 'internal'
  | 'banned' | 'limit_reached' | 'read_only' | 'rejected'
  | 'closed' | 'timeout' | 'too_many_pending' | 'unsubscribed' | 'token_failed';

export class LBError extends Error {
  constructor(code: ErrorCode | string, message?: string, retryAfterMs?: number);
  code: ErrorCode | string;
  retryAfterMs?: number;
  /** Why: a board_closed error's reason (R30), or a rejected score's, the board's validation hook's words (v1.3, §16). */
  reason?: string;
  cause?: unknown;
}

export interface TokenInfo {
  attempt: number;
  lastCode: number;
  welcomed: boolean;
  refresh: boolean;
}

export interface Options {
  url?: string;
  token?: string | ((info: TokenInfo) => string | Promise<string>);
  minDelay?: number;
  maxDelay?: number;
  requestTimeout?: number;
  maxPending?: number;
  scoreRetries?: number;
  refreshBefore?: number;
  idPrefix?: string;
  WebSocket?: unknown;
  random?: () => number;
  now?: () => number;
  setTimeout?: (f: () => void, ms: number) => unknown;
  clearTimeout?: (t: unknown) => void;
}

export interface Events {
  status: Status;
  welcome: Welcome;
  top: TopFrame;
  view: ViewFrame;
  members: MembersFrame;
  board: BoardFrame;
  final: TopFrame;
  error: LBError;
  close: { code: number; reason: string; welcomed: boolean };
  /** drain: the wait is a draining node's reconnect_after_ms (§15), not a backoff. */
  reconnecting: { attempt: number; delay: number; drain: boolean };
  /** The node drains (§15): the client reconnects after reconnectAfterMs. */
  draining: { reconnectAfterMs: number };
  /** Every subscribe's answer, re-subscribes after a reconnect included (§15). */
  subscribed: Subscribed;
}

/** A subscribe's answer: the board's stream, and whether a re-subscribe resumed it (§15). */
export interface Subscribed {
  board: string;
  epoch: string;
  resumed: boolean;
}

export class LBClient {
  constructor(opts?: Options);
  readonly status: Status;
  readonly unackedScores: number;
  url: string;
  welcome: Welcome | null;
  exp: number;
  lastFrameAt: number;
  boards: Map<string, BoardFrame>;
  finals: Map<string, TopFrame>;
  serverNow(): number;
  on<K extends keyof Events>(type: K, fn: (value: Events[K]) => void): () => void;
  connect(): void;
  close(): void;
  reconnectNow(): void;
  request(fields: Record<string, unknown>): Promise<any>;
  score(board: string, opts: { delta?: number; value?: number; member?: string; id?: string; at?: number; meta?: Record<string, unknown> }): Promise<Ack>;
  subscribe(board: string, opts?: { top?: number; around?: number; member?: string; members?: string[]; meta?: boolean; cohort?: string; region?: string }): Promise<{ type: 'subscribed'; id: string; board: string; epoch: string; resumed?: boolean }>;
  unsubscribe(board: string): Promise<{ type: 'unsubscribed'; id: string; board: string }>;
  page(board: string, opts?: { offset?: number; limit?: number; period?: number | 'previous' }): Promise<Page>;
  rank(board: string, member: string, opts?: { around?: number; period?: number | 'previous' }): Promise<RankReply>;
  auth(token: string): Promise<{ type: 'authed'; id: string; exp: number }>;
}

export const ERROR_TEXT: Readonly<Record<ErrorCode, string>>;
export const BOARD_STATES: readonly BoardState[];
/** The longest single timer the client arms (2^31-1 ms); longer waits are chained (R31). */
export const MAX_TIMER_MS: number;
export function avatarURL(entry: Partial<Entry> | null | undefined): string;
export function flagEmoji(country: string | null | undefined): string;
/** A board config's tier: exactly one of top_rank and top_percent. */
export interface Tier {
  name: string;
  top_rank?: number;
  top_percent?: number;
}
export function tierOf(tiers: Tier[] | null | undefined, rank: number, total: number): string;
export default LBClient;
