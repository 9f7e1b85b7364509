// Shared helpers of the spectator, player and overlay pages: tokens, the
// board list, the connection badge, error texts. Tokens stay in memory (or in
// the URL fragment, which browsers never send); they are never put in a query
// string or in storage.

import { ERROR_TEXT } from '/lb-client.js';

/** Whether the gateway runs with --dev (the handler fills the meta tag). */
export const dev = document.querySelector('meta[name="lb-dev"]')?.content === 'true';

const boardRE = /^[A-Za-z0-9_.-]{1,64}$/;

/** The ?board= parameter when it is a valid board id, else ''. */
export function boardParam() {
  const b = new URLSearchParams(location.search).get('board') || '';
  return boardRE.test(b) ? b : '';
}

export function validBoard(b) {
  return boardRE.test(b);
}

/**
 * The ?cohort= of the page (docs/leagues.md): one cohort of a cohort board
 * ("3", "silver-3"), '' when absent or not an id.
 */
export function cohortParam() {
  const c = new URLSearchParams(location.search).get('cohort') || '';
  return boardRE.test(c) ? c : '';
}

/** How a page names a cohort: "Group 3", "Group silver-3". */
export function cohortName(c) {
  return 'Group ' + c;
}

/**
 * An error for the page: the contract's short text, the code, and the
 * server's own message when it says more (which field, which limit).
 */
export function errorText(err) {
  const text = ERROR_TEXT[err.code] || err.message || err.code;
  const said = err.message && err.message !== text && err.message !== err.code ? ` — ${err.message}` : '';
  return `${text} (${err.code})${said}`;
}

/** The token in the fragment (#token=…), or ''. */
export function fragmentToken() {
  return new URLSearchParams(location.hash.slice(1)).get('token') || '';
}

/**
 * Whether the page has no token to connect with: not --dev, and no #token=.
 * It still tries once (a --public-read gateway lets spectators in without
 * one), but a refusal is then final: retrying would send nothing new.
 */
export function noToken() {
  return !dev && !fragmentToken();
}

/** The hint a page without a token shows. */
export const NO_TOKEN_HINT = 'This page needs a token: add #token=<your JWT> to the address. ' +
  'The token stays in the fragment, which the browser never sends to a server.';

// A token added to the fragment of a page opened without one is taken by
// loading the page again.
const openedWithoutToken = noToken();
addEventListener('hashchange', () => {
  if (openedWithoutToken && !noToken()) location.reload();
});

/** A link to another page of this site that keeps the fragment (and so the token). */
export function link(path, params) {
  const q = new URLSearchParams(params).toString();
  return path + (q ? '?' + q : '') + location.hash;
}

/** The claims of a JWT, {} when unreadable (the server checks it anyway). */
function tokenClaims(token) {
  try {
    const part = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(part)) || {};
  } catch {
    return {};
  }
}

/** The `exp` claim of a JWT (unix seconds), 0 when unreadable. */
export function tokenExp(token) {
  return tokenClaims(token).exp || 0;
}

/** The role a JWT claims ('player' when it says none, as the gateway reads it). */
export function tokenRole(token) {
  return tokenClaims(token).role || 'player';
}

/** The gateway did not answer at all (fetch's network error). */
export class Unreachable extends Error {
  constructor(cause) {
    super('the gateway cannot be reached');
    this.name = 'Unreachable';
    this.cause = cause;
  }
}

/** POST /api/v1/dev/token (only answered in --dev). */
export async function devToken(sub, role, name) {
  const body = { sub, role };
  if (name) body.name = name;
  let r;
  try {
    r = await fetch('/api/v1/dev/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      cache: 'no-store',
    });
  } catch (err) {
    throw new Unreachable(err);
  }
  if (!r.ok) throw new Error(`dev token: HTTP ${r.status}`);
  const j = await r.json();
  if (!j.token) throw new Error('dev token: no token in the answer');
  return j.token;
}

/**
 * A token function for LBClient. In --dev it fetches a token for (sub, role,
 * name) and fetches again when the last one failed to connect (the gateway
 * restarted with a new secret), was rejected as expired, or is near its end.
 * Otherwise it returns the fragment's token.
 */
export function tokenSource({ sub, role, name }) {
  let cached = '';
  return async (info = {}) => {
    // A token in the fragment wins, in --dev too: it says who the page is.
    if (!dev || fragmentToken()) return fragmentToken();
    const stale =
      !cached ||
      info.refresh ||
      info.lastCode === 4001 ||
      (info.attempt > 0 && !info.welcomed) ||
      tokenExp(cached) * 1000 < Date.now() + 120_000;
    if (stale) cached = await devToken(sub, role, name);
    return cached;
  };
}

/** GET /api/v1/boards, tolerant of an array or {"boards": [...]}, of ids or objects. */
export async function listBoards(token) {
  const r = await fetch('/api/v1/boards', {
    headers: token ? { Authorization: 'Bearer ' + token } : {},
    cache: 'no-store',
  });
  if (!r.ok) throw new Error(`board list: HTTP ${r.status}`);
  const j = await r.json();
  const list = Array.isArray(j) ? j : Array.isArray(j?.boards) ? j.boards : [];
  return list
    .map((b) => (typeof b === 'string' ? { id: b } : b))
    .filter((b) => b && typeof b.id === 'string');
}

/** A random suffix for ids and spectator names. */
export function randomTag(n = 8) {
  const b = crypto.getRandomValues(new Uint8Array(n));
  return Array.from(b, (x) => (x % 36).toString(36)).join('');
}

/** document.createElement with properties and children. */
export function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') e.className = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k.startsWith('aria-') || k === 'role') e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

const fmt = new Intl.NumberFormat();

/** Formats a count or a rank (and a score of a board without decimals); '—' for null. */
export function num(n) {
  return n === null || n === undefined ? '—' : fmt.format(n);
}

/**
 * "1 person watching", "2 people watching" for a board's viewers
 * (docs/protocol.md §14); '' when the count is not a positive number, since
 * a page asking is itself subscribed and a 0 only means it is not counted yet.
 */
export function viewersText(n) {
  if (typeof n !== 'number' || !(n > 0)) return '';
  return `${num(n)} ${n === 1 ? 'person' : 'people'} watching`;
}

// A hot board's scores have 3 decimals on the wire (docs/protocol.md R22), which
// JSON.parse drops from 5.000: the page learns them from the board's config.
const fmt3 = new Intl.NumberFormat(undefined, { minimumFractionDigits: 3, maximumFractionDigits: 3 });
let scoreDecimals = 0;

/**
 * Sets how scores are shown from a board config (GET /api/v1/boards/{id}'s
 * board). Returns true when that changed: scores already on the page (the
 * first frames can come before the config) must then be written again.
 */
export function useBoardDecimals(board) {
  const d = board?.decay ? 3 : 0;
  const changed = d !== scoreDecimals;
  scoreDecimals = d;
  return changed;
}

/**
 * Writes a number into a .big element on one line: --chars tells the CSS its
 * length, so a long score is set smaller instead of wrapping.
 */
export function setBig(node, text) {
  node.textContent = text;
  node.style.setProperty('--chars', String([...text].length));
}

/** Formats a score: with its 3 decimals on a hot board; '—' for null. */
export function scoreText(n) {
  if (n === null || n === undefined) return '—';
  return scoreDecimals ? fmt3.format(n) : fmt.format(n);
}

/**
 * GET /api/v1/boards/{id}: {board: config, members, state}; {absent: true}
 * when the gateway says there is no such board (a 404 unknown_board: under
 * --dev a subscription to it still succeeds, as reads never create boards);
 * null when it cannot be read (no token yet, not allowed, gateway down): the
 * page then shows the board id and learns the state from the subscription.
 */
export async function boardConfig(id, token) {
  try {
    const r = await fetch('/api/v1/boards/' + encodeURIComponent(id), {
      headers: token ? { Authorization: 'Bearer ' + token } : {},
      cache: 'no-store',
    });
    if (r.status === 404) {
      const j = await r.json().catch(() => null);
      return j?.error?.code === 'unknown_board' ? { absent: true } : null;
    }
    if (!r.ok) return null;
    const j = await r.json();
    return j && typeof j.board === 'object' ? j : null;
  } catch {
    return null;
  }
}

/**
 * Closes lb while the page sits in the back/forward cache and connects it
 * again when the page comes back: a cached page keeps its WebSocket open,
 * so it would still count as a viewer of its boards (docs/protocol.md §14)
 * and be sent frames nobody sees.
 */
export function closeWhileCached(lb) {
  addEventListener('pagehide', (e) => {
    if (e.persisted) lb.close();
  });
  addEventListener('pageshow', (e) => {
    if (e.persisted) lb.connect();
  });
}

/** Whether /healthz answers: tells "gateway down" from "token refused". */
export async function gatewayUp() {
  try {
    const r = await fetch('/healthz', { cache: 'no-store' });
    return r.ok;
  } catch {
    return false;
  }
}

/** "3 s ago" for a local timestamp in ms; '—' before the first frame. */
export function ago(ms) {
  if (!ms) return '—';
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 10) return s.toFixed(1) + ' s ago';
  if (s < 120) return Math.round(s) + ' s ago';
  return Math.round(s / 60) + ' min ago';
}

/**
 * "1:05", "12:00", "1:02:03" for a duration in ms (never negative); a day or
 * more is "4 d 16 h", since seconds ticking under a wait of days say nothing.
 */
export function clock(ms) {
  const t = Math.max(0, Math.ceil(ms / 1000));
  if (t >= 86400) return `${Math.floor(t / 86400)} d ${Math.floor((t % 86400) / 3600)} h`;
  const h = Math.floor(t / 3600);
  const m = Math.floor((t % 3600) / 60);
  const sec = String(t % 60).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}

/**
 * The ms of a Go-style duration of a board config ("1m", "15m", "6h",
 * "1h30m", a grace's "2m0s"); 0 when it is not one.
 */
export function durationMS(s) {
  if (typeof s !== 'string' || !/^(\d+h)?(\d+m)?(\d+s)?$/.test(s) || s === '') return 0;
  let ms = 0;
  for (const [, n, u] of s.matchAll(/(\d+)([hms])/g)) ms += Number(n) * { h: 3600e3, m: 60e3, s: 1e3 }[u];
  return ms;
}

/**
 * The end (server unix ms) of the current period of a board config, for
 * resets whose boundaries are plain multiples in UTC: durations ("1m",
 * "15m"), hourly and daily, with tz UTC. null otherwise (the page then shows
 * no period countdown rather than a wrong one).
 */
export function periodEnd(cfg, now) {
  if (!cfg || !cfg.reset || cfg.reset === 'none') return null;
  if (cfg.tz && cfg.tz !== 'UTC' && cfg.tz !== 'Etc/UTC') return null;
  const step = { hourly: 3600e3, daily: 86400e3 }[cfg.reset] || durationMS(cfg.reset);
  if (!step || 86400e3 % step !== 0) return null;
  return Math.floor(now / step) * step + step;
}

const stateWords = {
  scheduled: 'starts in',
  open: 'ends in',
  closing: 'final in',
};

/**
 * The lifecycle line of a board: {state, text} from its last `board` frame
 * (R19) and config, at server time now. text is '' when there is nothing to
 * say (an open board without an end).
 */
export function lifecycle(frame, cfg, now) {
  const state = frame?.state || cfg?.state || 'open';
  const at = frame
    ? { scheduled: frame.starts_at, open: frame.ends_at, closing: frame.final_at }[state]
    : null;
  if (state === 'final') return { state, text: 'Final standings' };
  if (state === 'deleted') return { state, text: 'This board was deleted' };
  if (typeof at === 'number' && at > 0) return { state, text: `${stateWords[state]} ${clock(at - now)}` };
  if (state === 'scheduled') return { state, text: 'Not started yet' };
  if (state === 'closing') return { state, text: 'Closing…' };
  const end = periodEnd(cfg, now);
  if (end !== null) return { state, text: `round ends in ${clock(end - now)}` };
  return { state, text: '' };
}

/** The first grapheme of a name, for an avatar placeholder. */
export function initial(name) {
  const s = String(name || '?').trim() || '?';
  if (globalThis.Intl?.Segmenter) {
    for (const { segment } of new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(s)) return segment.toUpperCase();
  }
  return s[0].toUpperCase();
}

const badgeText = {
  connecting: 'connecting…',
  live: 'live',
  reconnecting: 'reconnecting…',
  unreachable: 'gateway unreachable',
  refused: 'token refused',
  forbidden: 'not allowed',
  unknown: 'no such board',
  absent: 'no such board yet',
  notoken: 'no token',
  deleted: 'board deleted',
  scheduled: 'not started',
  closing: 'closing',
  final: 'final',
  closed: 'disconnected',
};

const notices = {
  unreachable: 'The gateway cannot be reached. Retrying…',
  refused: 'The gateway refused the token. Retrying with a fresh one…',
  forbidden: 'This token is not allowed on this board.',
  unknown: 'There is no board with this id.',
  absent: 'There is no board with this id yet: check the address. Its first score creates it.',
  notoken: NO_TOKEN_HINT,
  deleted: 'This board was deleted.',
};

/**
 * BoardStatus keeps one badge honest about one board: the connection
 * (connecting, live, reconnecting, gateway unreachable or token refused), the
 * subscription (not allowed, no such board) and the board's lifecycle
 * (scheduled, closing, final, deleted). badge.dataset.state is the key;
 * badge.dataset.status stays the client's connection status.
 */
export class BoardStatus {
  constructor(lb, badge, { onChange = () => {}, notice = () => {} } = {}) {
    this.lb = lb;
    this.badge = badge;
    this.text = badge.querySelector('.text');
    this.onChange = onChange;
    this.notice = notice;
    this.refusal = ''; // forbidden | unknown | deleted | notoken: terminal for this board
    this.absent = false; // the gateway has no such board (yet): see markAbsent
    this.down = ''; // unreachable | refused while not connected
    this.frame = null; // the last board frame
    this.waitText = '';
    lb.on('status', () => {
      if (lb.status === 'open') this.down = '';
      this.render();
    });
    lb.on('reconnecting', ({ delay }) => {
      this.waitText = ` · retry in ${Math.max(1, Math.round(delay / 1000))} s`;
      this.render();
    });
    lb.on('welcome', () => {
      this.waitText = '';
      this.render();
    });
    lb.on('close', ({ welcomed }) => {
      if (welcomed || this.lb.status === 'closed') return;
      // A refused upgrade and a dead gateway look alike to a WebSocket: ask.
      gatewayUp().then((up) => {
        if (this.lb.status === 'open') return;
        this.down = up ? 'refused' : 'unreachable';
        if (up && noToken()) {
          // Refused without a token: another attempt would be the same.
          this.refusal = 'notoken';
          this.lb.close();
        }
        this.render();
      });
    });
    lb.on('error', (err) => {
      if (err.code === 'token_failed') {
        this.down = err.cause instanceof Unreachable || err.cause instanceof TypeError ? 'unreachable' : 'refused';
        this.render();
      }
    });
    this.hasEntries = false; // a top frame had entries: the board exists
    lb.on('top', (f) => {
      // Entries mean the board exists now (its first score created it).
      this.hasEntries = f.entries.length > 0 || f.total > 0;
      if (this.absent && this.hasEntries) {
        this.absent = false;
        this.render();
      }
    });
    lb.on('board', (f) => {
      this.frame = f;
      if (f.state === 'deleted') this.refusal = 'deleted';
      this.render();
    });
    window.addEventListener('online', () => lb.reconnectNow());
    // The first render waits for the page's synchronous setup: onChange
    // may use what the page declares after constructing this.
    queueMicrotask(() => this.render());
  }

  /** Records a subscribe error: forbidden and unknown_board are shown. */
  fail(err) {
    const key = { forbidden: 'forbidden', unknown_board: 'unknown', invalid_board: 'unknown' }[err?.code];
    if (key) this.refusal = key;
    this.render();
    // Once refused, the errors that follow (closed) are not news either.
    return key || this.refusal;
  }

  /**
   * Records that GET /api/v1/boards/{id} found no such board: a --dev
   * gateway subscribes to it anyway (reads never create a board), so the
   * page would look live and empty. Cleared by the first entries (and moot
   * when they came before the answer).
   */
  markAbsent() {
    this.absent = !this.hasEntries;
    this.render();
  }

  /** The page's state key (see badgeText). */
  get state() {
    if (this.refusal) return this.refusal;
    if (this.absent && this.lb.status === 'open') return 'absent';
    const s = this.lb.status;
    if (s !== 'open') {
      if (this.down) return this.down;
      return s === 'idle' ? 'connecting' : s;
    }
    const st = this.frame?.state;
    return st === 'scheduled' || st === 'closing' || st === 'final' ? st : 'live';
  }

  render() {
    const key = this.state;
    this.badge.dataset.status = this.lb.status;
    this.badge.dataset.state = key;
    document.body.dataset.status = this.lb.status; // the CSS dims live data while it is stale
    document.body.dataset.state = key;
    const wait = (key === 'unreachable' || key === 'refused' || key === 'reconnecting') ? this.waitText : '';
    this.text.textContent = (badgeText[key] || key) + wait;
    // Only the notices it put up are taken down: the page's own stay.
    if (notices[key]) {
      this.notice(notices[key], key);
      this.noticed = true;
    } else if (this.noticed) {
      this.notice('', key);
      this.noticed = false;
    }
    this.onChange(key);
  }
}
