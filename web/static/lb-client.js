// lb-client.js — a dependency-free browser client for the wsgateway wire
// protocol (lb.v1). See docs/js-client.md.
//
//   const lb = new LBClient({ token: () => fetchToken() });
//   lb.on('top', (f) => render(f.entries));
//   lb.connect();
//   await lb.subscribe('run_hero', { top: 10 });
//   const ack = await lb.score('run_hero', { delta: 10 });
//
// Guarantees: replies are matched to requests by `id`; a score is kept until
// it is answered and re-sent with the same `id` after a reconnect (the server
// applies a (board, id) at most once, docs/protocol.md R4); subscriptions are
// re-sent after a reconnect, resuming each board's stream (§15: the server
// then sends only what changed meanwhile); reconnects back off exponentially
// with jitter, and after a `draining` hint wait exactly as long as it says.

/** An error answered by the server (`code` is the contract's code) or raised locally. */
export class LBError extends Error {
  constructor(code, message, retryAfterMs) {
    super(message || code);
    this.name = 'LBError';
    this.code = code;
    if (retryAfterMs !== undefined) this.retryAfterMs = retryAfterMs;
  }
}

const OPEN = 1; // WebSocket.OPEN, also for injected implementations
const SUBPROTOCOL = 'lb.v1';
// Score errors after which re-sending the same id later is the right thing.
const RETRYABLE = new Set(['rate_limited', 'unavailable']);
// Subscribe errors that end the subscription for good.
const SUBSCRIBE_FINAL = new Set(['forbidden', 'unknown_board', 'invalid_board', 'invalid_member']);
// The longest delay browsers (and Node) keep: a longer one overflows their
// 32-bit timer and fires at once or at some wrong time, so longer waits are
// made of several timers (docs/protocol.md R31).
export const MAX_TIMER_MS = 2 ** 31 - 1;
// The largest JSON encoding of a score's meta, in bytes (docs/lists.md).
const MAX_META = 512;

// validMeta: a plain object whose JSON fits MAX_META bytes (the server
// answers anything else with bad_request).
function validMeta(m) {
  if (m === null || typeof m !== 'object' || Array.isArray(m)) return false;
  let s;
  try { s = JSON.stringify(m); } catch { return false; }
  return new TextEncoder().encode(s).length <= MAX_META;
}

/**
 * Error codes of the contract (docs/protocol.md §4, v1.1) with a short text a page
 * can show; the local codes of this client come last. A code missing here is
 * a newer server's: show its message.
 */
export const ERROR_TEXT = Object.freeze({
  bad_request: 'the request was malformed',
  unauthorized: 'the token was refused',
  token_expired: 'the token expired',
  forbidden: 'not allowed on this board',
  unknown_board: 'no such board',
  invalid_board: 'not a valid board id',
  invalid_member: 'not a valid member id',
  invalid_score: 'not a valid score',
  out_of_range: 'the score would leave the allowed range',
  delta_too_large: 'the score change is larger than the board allows',
  board_closed: 'the board is not taking scores now',
  idempotency_conflict: 'this id was already used for another score',
  rate_limited: 'too many messages; slow down',
  unavailable: 'the leaderboard is unavailable for a moment',
  internal: 'the gateway failed',
  banned: 'this member is banned from the board',
  limit_reached: 'no attempts left in this period',
  read_only: 'this board is computed from others and takes no scores',
  // Local codes.
  closed: 'the client was closed',
  timeout: 'no reply in time',
  too_many_pending: 'too many requests waiting',
  unsubscribed: 'unsubscribed before the reply',
  token_failed: 'no token could be obtained',
});

/** Board states of a `board` frame (R19); 'deleted' ends the subscription. */
export const BOARD_STATES = Object.freeze(['scheduled', 'open', 'closing', 'final', 'deleted']);

/**
 * The avatar URL of an entry when it is safe to put in an <img>: an https
 * URL of at most 256 bytes (docs/protocol.md §7), else ''. The pages render it
 * with referrerpolicy="no-referrer" so the avatar's host learns nothing.
 */
export function avatarURL(entry) {
  const a = entry && entry.avatar;
  if (typeof a !== 'string' || a.length > 256) return '';
  try {
    const u = new URL(a);
    return u.protocol === 'https:' ? u.href : '';
  } catch {
    return '';
  }
}

/** The flag emoji of an ISO 3166-1 alpha-2 code ("FR" → 🇫🇷), '' when not a code. */
export function flagEmoji(country) {
  if (typeof country !== 'string' || !/^[A-Za-z]{2}$/.test(country)) return '';
  const base = 0x1f1e6 - 65; // REGIONAL INDICATOR SYMBOL LETTER A, minus 'A'
  const up = country.toUpperCase();
  return String.fromCodePoint(base + up.charCodeAt(0), base + up.charCodeAt(1));
}

/**
 * The tier of the member at `rank` (1-based) on a board of `total` members,
 * from the board config's `tiers` (an extension: docs/protocol.md "Tiers"):
 * the first tier, in the board's order, whose bound the rank is within
 * (`top_rank`: rank ≤ top_rank; `top_percent`: rank ≤ ⌈total × p / 100⌉).
 * '' when none is.
 */
export function tierOf(tiers, rank, total) {
  if (!Array.isArray(tiers) || !(rank >= 1) || !(total >= 1)) return '';
  for (const t of tiers) {
    const bound = t.top_percent > 0 ? Math.ceil((total * t.top_percent) / 100) : t.top_rank;
    if (rank <= bound) return String(t.name);
  }
  return '';
}

function defaultURL() {
  const loc = globalThis.location;
  if (!loc) throw new LBError('bad_request', 'lb-client: no url given and no page location');
  return (loc.protocol === 'https:' ? 'wss://' : 'ws://') + loc.host + '/ws';
}

function randomTag() {
  const c = globalThis.crypto;
  if (c && c.getRandomValues) {
    const b = c.getRandomValues(new Uint32Array(2));
    return b[0].toString(36) + b[1].toString(36);
  }
  return Math.random().toString(36).slice(2, 12);
}

export class LBClient {
  /**
   * @param {object} [opts]
   * @param {string} [opts.url] WebSocket URL; default ws(s)://<page host>/ws
   * @param {string|function} [opts.token] a JWT, or a function (info) => token | Promise<token>
   *   called before every connection attempt and before a refresh; info is
   *   {attempt: failed attempts since the last welcome, lastCode: the last close
   *   code, welcomed: whether the last connection was welcomed (false after a
   *   refused upgrade: time for a new token), refresh: true before expiry}
   * @param {number} [opts.minDelay=250] first reconnect delay, ms
   * @param {number} [opts.maxDelay=15000] largest reconnect delay, ms
   * @param {number} [opts.requestTimeout=15000] reject non-score requests after this many ms (0: never)
   * @param {number} [opts.maxPending=1000] requests waiting for a reply, at most
   * @param {number} [opts.scoreRetries=8] re-sends of a score answered rate_limited/unavailable
   * @param {number} [opts.refreshBefore=60000] with a token function: refresh this long before exp
   * @param {string} [opts.idPrefix] prefix of request ids; default random per client
   * @param {function} [opts.WebSocket] WebSocket constructor (tests inject a fake)
   * @param {function} [opts.random] () => [0,1), for jitter
   * @param {function} [opts.now] () => ms
   * @param {function} [opts.setTimeout] @param {function} [opts.clearTimeout]
   */
  constructor(opts = {}) {
    this.url = opts.url || defaultURL();
    this._token = opts.token;
    this._WS = opts.WebSocket || globalThis.WebSocket;
    if (!this._WS) throw new LBError('bad_request', 'lb-client: no WebSocket implementation');
    this.minDelay = opts.minDelay ?? 250;
    this.maxDelay = opts.maxDelay ?? 15000;
    this.requestTimeout = opts.requestTimeout ?? 15000;
    this.maxPending = opts.maxPending ?? 1000;
    this.scoreRetries = opts.scoreRetries ?? 8;
    this.refreshBefore = opts.refreshBefore ?? 60000;
    this._random = opts.random || Math.random;
    this._now = opts.now || (() => Date.now());
    this._setTimeout = opts.setTimeout || ((f, ms) => globalThis.setTimeout(f, ms));
    this._clearTimeout = opts.clearTimeout || ((t) => globalThis.clearTimeout(t));
    this._prefix = opts.idPrefix || 'js' + randomTag();
    this._n = 0;

    this._ws = null;
    this._status = 'idle'; // idle | connecting | open | reconnecting | closed
    this._stopped = true; // true until connect(), and after close()
    this._attempt = 0; // failed attempts since the last welcome
    this._lastCode = 0; // close code of the last connection
    this._lastWelcomed = false; // whether the last connection got its welcome
    this._reconnectTimer = null;
    this._refreshTimer = null;
    this._refreshedExp = 0; // the exp a refresh was last tried for
    this._sentToken = ''; // the token of the current connection or of the last auth
    this._clockSkew = 0; // server_time - local time at welcome, ms
    this._listeners = new Map();
    this._pending = new Map(); // id -> entry, in send order (R2)
    this._subs = new Map(); // board -> subscribe fields, re-sent after a reconnect
    this._streams = new Map(); // board -> {epoch, seq}: where a re-subscribe resumes (§15)
    this._drainAt = 0; // local time a draining hint said to reconnect at; 0: none

    /** The last welcome frame, null while not connected. */
    this.welcome = null;
    /** Token expiry (unix seconds) as last announced by welcome or authed. */
    this.exp = 0;
    /** Local time (ms) of the last frame received, 0 before any. */
    this.lastFrameAt = 0;
    /** The last `board` frame of each subscribed board (R19), by board id. */
    this.boards = new Map();
    /** The last final `top` frame (`final: true`) of each board, by board id. */
    this.finals = new Map();
  }

  /**
   * The server's clock now, in unix ms, as estimated from the last welcome's
   * server_time: countdowns to starts_at, ends_at and final_at use it, so a
   * wrong local clock does not move them.
   */
  serverNow() {
    return this._now() + this._clockSkew;
  }

  /** Connection status: idle, connecting, open, reconnecting or closed. */
  get status() {
    return this._status;
  }

  /** Score events sent or queued but not yet answered. */
  get unackedScores() {
    let n = 0;
    for (const e of this._pending.values()) if (e.msg.type === 'score') n++;
    return n;
  }

  /**
   * Listen to an event: 'status' (string), 'welcome', 'top', 'view', 'members',
   * 'board' (lifecycle frames, R19), 'final' (a top frame with final: true,
   * also emitted as 'top'), 'error'
   * (errors not tied to a pending request), 'close' ({code, reason, welcomed}),
   * 'reconnecting' ({attempt, delay, drain}), 'draining' ({reconnectAfterMs}:
   * the node drains, §15), 'subscribed' ({board, epoch, resumed}: every
   * subscribe's answer, re-subscribes after a reconnect included). Returns a
   * function that removes it.
   */
  on(type, fn) {
    if (!this._listeners.has(type)) this._listeners.set(type, new Set());
    this._listeners.get(type).add(fn);
    return () => this._listeners.get(type)?.delete(fn);
  }

  _emit(type, value) {
    for (const fn of this._listeners.get(type) || []) {
      try {
        fn(value);
      } catch (err) {
        // A listener's bug must not break the protocol state machine.
        globalThis.console?.error?.('lb-client: listener for', type, err);
      }
    }
  }

  _setStatus(s) {
    if (this._status === s) return;
    this._status = s;
    this._emit('status', s);
  }

  /** Opens the connection; it is kept open (reconnecting as needed) until close(). */
  connect() {
    if (!this._stopped) return;
    this._stopped = false;
    this._attempt = 0;
    this._open();
  }

  /** Closes the connection for good and rejects every pending request. */
  close() {
    this._stopped = true;
    this._clearTimers();
    const ws = this._ws;
    this._ws = null;
    this.welcome = null;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
      try {
        ws.close(1000, 'client closed');
      } catch {
        // already closing
      }
    }
    this._failAll(new LBError('closed', 'lb-client: closed'));
    this._setStatus('closed');
  }

  /** Skips the current backoff wait and reconnects at once (e.g. on 'online'). */
  reconnectNow() {
    if (this._stopped || this._ws) return;
    this._clearReconnect();
    this._open();
  }

  _clearReconnect() {
    this._cancel(this._reconnectTimer);
    this._reconnectTimer = null;
  }

  _clearRefresh() {
    this._cancel(this._refreshTimer);
    this._refreshTimer = null;
  }

  _clearTimers() {
    this._clearReconnect();
    this._clearRefresh();
  }

  async _open() {
    this._setStatus(this._attempt === 0 ? 'connecting' : 'reconnecting');
    let token;
    try {
      token = await this._getToken({
        attempt: this._attempt,
        lastCode: this._lastCode,
        welcomed: this._lastWelcomed,
        refresh: false,
      });
    } catch (err) {
      if (this._stopped) return;
      // Not 'unauthorized': nobody refused anything yet. Usually the token
      // endpoint (the gateway itself in --dev) cannot be reached.
      const e = new LBError('token_failed', 'lb-client: token: ' + (err && err.message));
      e.cause = err;
      this._emit('error', e);
      this._scheduleReconnect();
      return;
    }
    if (this._stopped || this._ws) return;
    this._sentToken = token || '';
    const protocols = token ? [SUBPROTOCOL, 'bearer.' + token] : [SUBPROTOCOL];
    let ws;
    try {
      ws = new this._WS(this.url, protocols);
    } catch (err) {
      this._emit('error', new LBError('bad_request', 'lb-client: ' + (err && err.message)));
      this._scheduleReconnect();
      return;
    }
    this._ws = ws;
    let welcomed = false;
    ws.onmessage = (ev) => {
      if (this._ws !== ws) return;
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        return; // the server only sends JSON; ignore anything else
      }
      if (msg && msg.type === 'welcome') welcomed = true;
      this._onMessage(msg);
    };
    ws.onclose = (ev) => {
      if (this._ws !== ws) return;
      this._onClose(ev.code, ev.reason, welcomed);
    };
    ws.onerror = () => {}; // a close event always follows
  }

  _getToken(info) {
    const t = this._token;
    return typeof t === 'function' ? t(info) : t;
  }

  // _after runs fn once ms from now and returns a handle for _cancel. A wait
  // longer than MAX_TIMER_MS is a chain of timers, each re-armed for what is
  // left by the clock, so it never fires early and never spins.
  _after(ms, fn) {
    const deadline = this._now() + Math.max(0, ms);
    const h = { id: null };
    const arm = (left) => {
      h.id = this._setTimeout(() => {
        h.id = null;
        const rest = deadline - this._now();
        if (rest > 0) arm(rest);
        else fn();
      }, Math.min(MAX_TIMER_MS, left));
    };
    arm(Math.max(0, ms));
    return h;
  }

  _cancel(h) {
    if (h && h.id !== null) this._clearTimeout(h.id);
    if (h) h.id = null;
  }

  _backoff(attempt) {
    const base = Math.min(this.maxDelay, this.minDelay * 2 ** Math.min(attempt, 30));
    // "Equal jitter": never less than half the base, so clients spread out
    // after a restart without ever hammering the server.
    return Math.round(base / 2 + (this._random() * base) / 2);
  }

  // _scheduleReconnect waits the backoff, or drainDelay when a draining
  // node said how long (§15): that spreads its clients over the others, and
  // is no failed attempt.
  _scheduleReconnect(drainDelay) {
    if (this._stopped) return;
    const drain = drainDelay !== undefined;
    const delay = drain ? drainDelay : this._backoff(this._attempt);
    if (!drain) this._attempt++;
    this._setStatus('reconnecting');
    this._emit('reconnecting', { attempt: this._attempt, delay, drain });
    this._clearReconnect();
    this._reconnectTimer = this._after(delay, () => {
      this._reconnectTimer = null;
      if (!this._stopped && !this._ws) this._open();
    });
  }

  _onClose(code, reason, welcomed) {
    this._ws = null;
    this.welcome = null;
    this._lastCode = code;
    this._lastWelcomed = welcomed;
    this._clearRefresh();
    for (const e of this._pending.values()) {
      e.sent = false;
      // The new connection holds no subscription to take back, nor one given
      // up since: neither request needs to travel again.
      if (e.msg.type === 'unsubscribe') this._settle(e, { type: 'unsubscribed', id: e.msg.id, board: e.msg.board });
      else if (e.msg.type === 'subscribe' && !this._subs.has(e.msg.board)) {
        this._settle(e, null, new LBError('unsubscribed', 'lb-client: unsubscribed before the reply'));
      }
    }
    this._emit('close', { code, reason, welcomed });
    if (this._stopped) return;
    if (code === 4003) {
      // Forbidden: reconnecting with the same token cannot help.
      this._stopped = true;
      this._failAll(new LBError('forbidden', reason || 'forbidden'));
      this._setStatus('closed');
      return;
    }
    const drainAt = this._drainAt;
    this._drainAt = 0;
    this._scheduleReconnect(drainAt ? Math.max(0, drainAt - this._now()) : undefined);
  }

  _onMessage(msg) {
    if (!msg || typeof msg !== 'object') return;
    switch (msg.type) {
      case 'welcome':
        return this._onWelcome(msg);
      case 'top':
      case 'view':
      case 'members': {
        this.lastFrameAt = this._now();
        if (!this._subs.has(msg.board)) return;
        const st = this._streams.get(msg.board);
        if (st && typeof msg.seq === 'number' && msg.seq > st.seq) st.seq = msg.seq;
        if (msg.type === 'top' && msg.final === true) {
          this.finals.set(msg.board, msg);
          this._emit('final', msg);
        }
        this._emit(msg.type, msg);
        return;
      }
      case 'board':
        return this._onBoard(msg);
      case 'error':
        return this._onError(msg);
      case 'draining': {
        const after = Math.max(0, Number(msg.reconnect_after_ms) || 0);
        this._drainAt = this._now() + after;
        this._emit('draining', { reconnectAfterMs: after });
        return;
      }
      case 'subscribed':
        this._onSubscribed(msg);
        break;
    }
    const e = msg.id !== undefined && this._pending.get(msg.id);
    if (!e) return; // a reply to an abandoned request
    if (msg.type === 'authed') this._setExp(msg.exp);
    this._settle(e, msg);
  }

  // _onSubscribed records the stream a subscription follows (§15): a resumed
  // one keeps the greatest seq seen, a fresh one starts again.
  _onSubscribed(msg) {
    if (typeof msg.board !== 'string' || !this._subs.has(msg.board)) return;
    if (typeof msg.epoch === 'string' && msg.epoch !== '') {
      const prev = this._streams.get(msg.board);
      const seq = msg.resumed === true && prev && prev.epoch === msg.epoch ? prev.seq : 0;
      this._streams.set(msg.board, { epoch: msg.epoch, seq });
    }
    this._emit('subscribed', { board: msg.board, epoch: msg.epoch, resumed: msg.resumed === true });
  }

  // _onBoard keeps the board's lifecycle (R19). A deleted board's
  // subscription is gone on the server: it is dropped here too, so that a
  // reconnect does not subscribe again.
  _onBoard(msg) {
    if (typeof msg.board !== 'string' || !this._subs.has(msg.board)) return;
    this.lastFrameAt = this._now();
    if (msg.state === 'deleted') {
      this._subs.delete(msg.board);
      this._streams.delete(msg.board);
      this.boards.delete(msg.board);
      this.finals.delete(msg.board);
    } else {
      this.boards.set(msg.board, msg);
    }
    this._emit('board', msg);
  }

  _onWelcome(msg) {
    this.welcome = msg;
    this._attempt = 0;
    this._clockSkew = (msg.server_time || this._now()) - this._now();
    this._setExp(msg.exp);
    this._setStatus('open');
    this._emit('welcome', msg);
    // Everything unanswered goes again, same ids, in the original order.
    const resubscribing = new Set();
    for (const e of this._pending.values()) {
      if (e.msg.type === 'subscribe') resubscribing.add(e.msg.board);
      this._transmit(e);
    }
    for (const [board, fields] of this._subs) {
      if (resubscribing.has(board)) continue;
      const msg = { type: 'subscribe', board, ...fields };
      const st = this._streams.get(board);
      if (st) msg.since = { epoch: st.epoch, seq: st.seq };
      this._enqueue(msg, null, fields);
    }
  }

  _onError(msg) {
    const err = new LBError(msg.code, msg.message, msg.retry_after_ms);
    if (typeof msg.reason === 'string') err.reason = msg.reason; // board_closed's (R30), rejected's (§16)
    const e = msg.id !== undefined && this._pending.get(msg.id);
    if (!e) {
      this._emit('error', err);
      return;
    }
    if (e.msg.type === 'subscribe' && SUBSCRIBE_FINAL.has(msg.code) && this._subs.get(e.msg.board) === e.fields) {
      // Re-subscribing after a reconnect would only be refused again.
      this._subs.delete(e.msg.board);
    }
    // A subscribe too: a storm of re-subscribes (every client of a drained
    // node at once) may find the store slow, and a subscription left
    // unanswered would stay silent until the next reconnect.
    if ((e.msg.type === 'score' || e.msg.type === 'subscribe') && RETRYABLE.has(msg.code) && e.retries < this.scoreRetries) {
      e.retries++;
      e.sent = false;
      const wait = Math.max(msg.retry_after_ms || 0, this.minDelay) * (1 + this._random() / 2);
      e.retryTimer = this._after(Math.round(wait), () => {
        e.retryTimer = null;
        if (this._pending.get(e.msg.id) === e) this._transmit(e);
      });
      return;
    }
    this._settle(e, null, err);
  }

  // _setExp arms one refresh before a token function's token expires. A
  // token is refreshed once per exp: a refresh that brings no later exp (the
  // function gave the same token back) is not tried again, so nothing spins
  // until the connection ends with 4001 and the next connect asks anew.
  _setExp(exp) {
    if (typeof exp !== 'number' || exp <= 0) return;
    this.exp = exp;
    this._clearRefresh();
    if (typeof this._token !== 'function' || exp === this._refreshedExp) return;
    const serverNow = this._now() + this._clockSkew;
    const delay = Math.max(1000, exp * 1000 - serverNow - this.refreshBefore);
    this._refreshTimer = this._after(delay, () => {
      this._refreshTimer = null;
      this._refreshedExp = exp;
      this._refresh();
    });
  }

  async _refresh() {
    try {
      const token = await this._getToken({ attempt: 0, lastCode: 0, welcomed: true, refresh: true });
      // The same token again refreshes nothing: it would only cost a frame.
      if (token && token !== this._sentToken && !this._stopped) await this.auth(token);
    } catch (err) {
      this._emit('error', err instanceof LBError ? err : new LBError('unauthorized', String(err && err.message)));
    }
  }

  _nextID() {
    this._n++;
    return this._prefix + '-' + this._n.toString(36);
  }

  // _enqueue records a request until its reply; done is {resolve, reject} or
  // null for internal requests, whose errors become 'error' events.
  _enqueue(fields, done, subFields) {
    const msg = { ...fields, id: fields.id || this._nextID() };
    const e = { msg, done, sent: false, retries: 0, retryTimer: null, timer: null, fields: subFields };
    this._pending.set(msg.id, e);
    if (msg.type !== 'score' && this.requestTimeout > 0) {
      e.timer = this._after(this.requestTimeout, () => {
        e.timer = null;
        this._settle(e, null, new LBError('timeout', `lb-client: no reply to ${msg.type} ${msg.id}`));
      });
    }
    this._transmit(e);
    return e;
  }

  _transmit(e) {
    const ws = this._ws;
    if (!ws || !this.welcome || ws.readyState !== OPEN) return; // sent after the next welcome
    if (e.retryTimer !== null) {
      this._cancel(e.retryTimer);
      e.retryTimer = null;
    }
    try {
      ws.send(JSON.stringify(e.msg));
      e.sent = true;
    } catch {
      // The socket is going away; the close handler re-queues.
    }
  }

  _settle(e, reply, err) {
    if (this._pending.get(e.msg.id) !== e) return;
    this._pending.delete(e.msg.id);
    this._cancel(e.timer);
    this._cancel(e.retryTimer);
    if (!e.done) {
      if (err) this._emit('error', err);
      return;
    }
    if (err) e.done.reject(err);
    else e.done.resolve(reply);
  }

  _failAll(err) {
    for (const e of [...this._pending.values()]) this._settle(e, null, err);
  }

  // subFields, for a subscribe, is the object kept in _subs: an error that
  // ends the subscription removes it only if no later subscribe replaced it.
  _request(fields, subFields) {
    if (this._stopped && this._status === 'closed') {
      return Promise.reject(new LBError('closed', 'lb-client: closed'));
    }
    if (this._pending.size >= this.maxPending) {
      return Promise.reject(new LBError('too_many_pending', `lb-client: ${this._pending.size} requests unanswered`));
    }
    return new Promise((resolve, reject) => {
      this._enqueue(fields, { resolve, reject }, subFields);
    });
  }

  /**
   * Sends a raw request (type and fields per docs/protocol.md §4); an id is added
   * when absent. Resolves with the reply, rejects with an LBError.
   */
  request(fields) {
    return this._request(fields);
  }

  /**
   * Sends a score event: {delta} for incr boards, {value} for best/set;
   * {member} for server/admin tokens; {id} to choose the idempotency key;
   * {at} (unix ms, server/admin only) when the scored thing happened (v1.1);
   * {meta} an object kept with the score and read back on entries (a
   * replay link, a loadout; at most 512 bytes of JSON, docs/lists.md).
   * Kept until answered, re-sent with the same id after a reconnect.
   * Resolves with the ack ({score, rank, prev_rank, duplicate, seq}).
   */
  score(board, { delta, value, member, id, at, meta } = {}) {
    const n = delta !== undefined ? delta : value;
    if ((delta === undefined) === (value === undefined) || !Number.isSafeInteger(n)) {
      return Promise.reject(new LBError('invalid_score', 'lb-client: give exactly one of delta or value, a safe integer'));
    }
    if (meta !== undefined && !validMeta(meta)) {
      return Promise.reject(new LBError('bad_request', 'lb-client: meta must be an object whose JSON is at most 512 bytes'));
    }
    const fields = { type: 'score', board };
    if (delta !== undefined) fields.delta = delta;
    else fields.value = value;
    if (member) fields.member = member;
    if (at !== undefined) fields.at = at;
    if (meta !== undefined) fields.meta = meta;
    if (id) fields.id = id;
    return this._request(fields);
  }

  /**
   * Subscribes to a board's live frames ({top, around, member, members,
   * meta, cohort, region} as in the protocol); a second call for the same board
   * replaces the first. Kept across reconnects. 'top', 'view' and 'members'
   * events carry the frames: members (1-100 ids) asks for members frames
   * instead of a view, meta: true for the entries' meta on top and view
   * frames, cohort for that cohort's standings as the top frames (named in
   * them), region for that region's (v1.3, §17).
   */
  subscribe(board, { top, around, member, members, meta, cohort, region } = {}) {
    const fields = {};
    if (top !== undefined) fields.top = top;
    if (around !== undefined) fields.around = around;
    if (member) fields.member = member;
    if (members !== undefined) fields.members = members;
    if (meta === true) fields.meta = true;
    if (cohort !== undefined) fields.cohort = cohort;
    if (region !== undefined) fields.region = region;
    this._subs.set(board, fields);
    return this._request({ type: 'subscribe', board, ...fields }, fields);
  }

  /** Ends a board's subscription; its frames stop at once. */
  unsubscribe(board) {
    this._subs.delete(board);
    this._streams.delete(board);
    this.boards.delete(board);
    this.finals.delete(board);
    return this._request({ type: 'unsubscribe', board });
  }

  /** A page of ranked entries: resolves with {entries, total, offset}. */
  page(board, { offset = 0, limit = 10, period } = {}) {
    const fields = { type: 'page', board, offset, limit };
    if (period !== undefined) fields.period = period;
    return this._request(fields);
  }

  /** A member's rank, score and neighbours. */
  rank(board, member, { around = 0, period } = {}) {
    const fields = { type: 'rank', board, member, around };
    if (period !== undefined) fields.period = period;
    return this._request(fields);
  }

  /**
   * Sends a fresh token before the current one expires; it is also used for
   * later reconnects. Resolves with {exp}.
   */
  auth(token) {
    if (typeof this._token !== 'function') this._token = token;
    this._sentToken = token;
    return this._request({ type: 'auth', token });
  }
}

export default LBClient;
