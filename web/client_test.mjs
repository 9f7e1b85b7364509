// Unit tests of lb-client.js under Node's test runner, with a fake WebSocket
// and a fake clock injected (Node 20 has no global WebSocket). Run by
// TestClientJS in web_test.go, or directly: node --test web/client_test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LBClient, LBError, ERROR_TEXT, BOARD_STATES, avatarURL, flagEmoji, tierOf } from './static/lb-client.js';

// Clock is a manual timer queue: nothing fires until advance(). Like
// browsers, it fires a delay beyond 2^31-1 ms at once (the 32-bit overflow
// R31 is about), and it counts the timers it was asked for. With early set,
// every timer fires at half its delay.
class Clock {
  constructor() {
    this.t = 1_700_000_000_000;
    this.timers = new Map();
    this.seq = 0;
    this.armed = 0;
    this.early = false;
    this.setTimeout = (f, ms) => {
      const id = ++this.seq;
      this.armed++;
      const d = ms > 2 ** 31 - 1 ? 0 : this.early ? Math.ceil(ms / 2) : ms;
      this.timers.set(id, { at: this.t + d, f });
      return id;
    };
    this.clearTimeout = (id) => this.timers.delete(id);
    this.now = () => this.t;
  }
  async advance(ms) {
    const end = this.t + ms;
    for (;;) {
      let next = null;
      for (const [id, x] of this.timers) if (x.at <= end && (!next || x.at < next[1].at)) next = [id, x];
      if (!next) break;
      this.timers.delete(next[0]);
      this.t = next[1].at;
      next[1].f();
      await flush();
    }
    this.t = end;
    await flush();
  }
}

// flush lets pending promise callbacks (the client's async token step) run.
const flush = () => new Promise((r) => setImmediate(r));

// fakeServer records every socket the client opens; each socket is driven by
// the test: accept() sends welcome, push() a frame, drop() an abrupt close.
function fakeServer(clock) {
  const server = { sockets: [] };
  server.WebSocket = class FakeWS {
    constructor(url, protocols) {
      this.url = url;
      this.protocols = protocols;
      this.readyState = 0;
      this.sent = [];
      server.sockets.push(this);
    }
    send(data) {
      if (this.readyState !== 1) throw new Error('InvalidStateError');
      this.sent.push(JSON.parse(data));
    }
    close(code = 1000, reason = '') {
      if (this.readyState === 3) return;
      this.readyState = 3;
      this.onclose?.({ code, reason });
    }
    accept(extra = {}) {
      this.readyState = 1;
      this.onopen?.({});
      this.push({
        type: 'welcome', member: 'alice', role: 'player', node: 'n1',
        server_time: clock.now(), exp: Math.floor(clock.now() / 1000) + 3600,
        limits: { max_message: 4096, rate: 50 }, ...extra,
      });
    }
    push(obj) {
      this.onmessage?.({ data: JSON.stringify(obj) });
    }
    drop(code = 1006) {
      this.readyState = 3;
      this.onclose?.({ code, reason: '' });
    }
    take() {
      const s = this.sent;
      this.sent = [];
      return s;
    }
  };
  server.last = () => server.sockets[server.sockets.length - 1];
  return server;
}

function setup(opts = {}) {
  const clock = new Clock();
  const server = fakeServer(clock);
  const lb = new LBClient({
    url: 'ws://gw.test/ws', token: 'tok', WebSocket: server.WebSocket,
    setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout, now: clock.now,
    random: () => 0.5, idPrefix: 't', ...opts,
  });
  return { clock, server, lb };
}

async function connected(opts) {
  const env = setup(opts);
  env.lb.connect();
  await flush();
  env.server.last().accept();
  return env;
}

test('token travels as the bearer subprotocol; nothing is sent before welcome', async () => {
  const { server, lb } = setup();
  lb.connect();
  await flush();
  const ws = server.last();
  assert.equal(ws.url, 'ws://gw.test/ws');
  assert.deepEqual(ws.protocols, ['lb.v1', 'bearer.tok']);
  const p = lb.page('b1', { limit: 5 });
  ws.readyState = 1;
  assert.deepEqual(ws.sent, [], 'a request waits for welcome');
  ws.accept();
  assert.equal(lb.status, 'open');
  assert.equal(lb.welcome.member, 'alice');
  const [req] = ws.take();
  assert.deepEqual(req, { type: 'page', board: 'b1', offset: 0, limit: 5, id: req.id });
  ws.push({ type: 'page', id: req.id, board: 'b1', offset: 0, entries: [], total: 0 });
  assert.equal((await p).total, 0);
});

test('replies are matched to requests by id; errors reject with the code', async () => {
  const { server, lb } = await connected();
  const ws = server.last();
  const a = lb.rank('b1', 'bob');
  const b = lb.rank('b1', 'carol');
  const c = lb.page('nope');
  const [ra, rb, rc] = ws.take();
  assert.notEqual(ra.id, rb.id);
  for (const r of [ra, rb, rc]) assert.match(r.id, /^[A-Za-z0-9_.:-]{1,64}$/);
  // Answer out of order: matching is by id, not by position.
  ws.push({ type: 'rank', id: rb.id, board: 'b1', member: 'carol', rank: 2, score: 5, around: [] });
  ws.push({ type: 'error', id: rc.id, code: 'unknown_board', message: 'no such board' });
  ws.push({ type: 'rank', id: ra.id, board: 'b1', member: 'bob', rank: 1, score: 9, around: [] });
  assert.equal((await a).member, 'bob');
  assert.equal((await b).member, 'carol');
  await assert.rejects(c, (err) => err instanceof LBError && err.code === 'unknown_board');
});

test('reconnect backs off exponentially with jitter, capped, reset by welcome', async () => {
  const { clock, server, lb } = setup({ minDelay: 100, maxDelay: 1000 });
  const delays = [];
  lb.on('reconnecting', (r) => delays.push(r.delay));
  lb.connect();
  await flush();
  for (let i = 0; i < 6; i++) {
    const before = server.sockets.length;
    server.last().drop();
    assert.equal(lb.status, 'reconnecting');
    const d = delays[delays.length - 1];
    await clock.advance(d - 1);
    assert.equal(server.sockets.length, before, `attempt ${i}: no dial before the delay`);
    await clock.advance(1);
    assert.equal(server.sockets.length, before + 1, `attempt ${i}: dial after the delay`);
  }
  // random() = 0.5: three quarters of min(max, min·2^n).
  assert.deepEqual(delays, [75, 150, 300, 600, 750, 750]);
  server.last().accept();
  server.last().drop();
  assert.equal(delays[delays.length - 1], 75, 'a welcome resets the backoff');
});

test('jitter stays within [base/2, base]', () => {
  for (const [r, want] of [[0, 500], [0.999999, 1000]]) {
    const { lb } = setup({ minDelay: 1000, random: () => r });
    assert.equal(lb._backoff(0), want);
  }
});

test('an unacknowledged score is re-sent with the same id after a reconnect', async () => {
  const { clock, server, lb } = await connected();
  const ws1 = server.last();
  const acked = lb.score('b1', { delta: 5 });
  const lost = lb.score('b1', { delta: 7 });
  const [s1, s2] = ws1.take();
  ws1.push({ type: 'ack', id: s1.id, board: 'b1', member: 'alice', score: 5, rank: 1, prev_rank: null, duplicate: false, seq: 1 });
  assert.equal((await acked).score, 5);
  assert.equal(lb.unackedScores, 1);
  ws1.drop();
  const queued = lb.score('b1', { value: 3, id: 'mine-1' }); // while down: queued
  await clock.advance(1000);
  const ws2 = server.last();
  assert.notEqual(ws2, ws1);
  ws2.accept();
  const resent = ws2.take();
  assert.deepEqual(resent, [s2, { type: 'score', board: 'b1', value: 3, id: 'mine-1' }],
    'only the unanswered scores, same ids and payloads, in order');
  ws2.push({ type: 'ack', id: s2.id, board: 'b1', member: 'alice', score: 12, rank: 1, prev_rank: 1, duplicate: true, seq: 2 });
  const ack = await lost;
  assert.equal(ack.duplicate, true);
  ws2.push({ type: 'error', id: 'mine-1', code: 'bad_request', message: 'value on an incr board' });
  await assert.rejects(queued, { code: 'bad_request' });
  assert.equal(lb.unackedScores, 0);
});

test('a rate-limited score is retried after retry_after_ms with the same id', async () => {
  const { clock, server, lb } = await connected();
  const ws = server.last();
  const p = lb.score('b1', { delta: 1 });
  const [s] = ws.take();
  ws.push({ type: 'error', id: s.id, code: 'rate_limited', message: 'slow down', retry_after_ms: 400 });
  await clock.advance(399);
  assert.deepEqual(ws.take(), []);
  await clock.advance(400); // up to 1.25× with random 0.5
  assert.deepEqual(ws.take(), [s]);
  ws.push({ type: 'ack', id: s.id, board: 'b1', member: 'alice', score: 1, rank: 1, prev_rank: null, duplicate: false, seq: 3 });
  assert.equal((await p).rank, 1);
});

test('a score the board\'s hook rejects fails with code rejected and its reason, and is not re-sent', async () => {
  const { clock, server, lb } = await connected();
  const ws = server.last();
  const p = lb.score('b1', { delta: 9000 });
  const [s] = ws.take();
  ws.push({ type: 'error', id: s.id, code: 'rejected', message: 'rejected by the board\'s validation: too high', reason: 'too high' });
  await assert.rejects(p, { code: 'rejected', reason: 'too high' });
  await clock.advance(5000);
  assert.deepEqual(ws.take(), []);
});

test('scores that are not safe integers are refused before sending', async () => {
  const { server, lb } = await connected();
  for (const bad of [{ delta: 1.5 }, { delta: 2 ** 53 }, { value: '3' }, {}, { delta: 1, value: 1 }]) {
    await assert.rejects(lb.score('b1', bad), { code: 'invalid_score' }, JSON.stringify(bad));
  }
  assert.deepEqual(server.last().take(), []);
});

test('subscriptions are re-sent after a reconnect; frames only for subscribed boards', async () => {
  const { clock, server, lb } = await connected();
  const tops = [];
  const views = [];
  lb.on('top', (f) => tops.push(f));
  lb.on('view', (f) => views.push(f));
  const ws1 = server.last();
  const subA = lb.subscribe('a', { top: 10, around: 2, member: 'bob' });
  const subB = lb.subscribe('b', { top: 5 });
  const [ra, rb] = ws1.take();
  assert.deepEqual(ra, { type: 'subscribe', board: 'a', top: 10, around: 2, member: 'bob', id: ra.id });
  ws1.push({ type: 'subscribed', id: ra.id, board: 'a' });
  ws1.push({ type: 'subscribed', id: rb.id, board: 'b' });
  await subA;
  await subB;
  ws1.push({ type: 'top', board: 'a', seq: 1, entries: [], total: 0, ts: 1 });
  const unsub = lb.unsubscribe('b');
  const [ru] = ws1.take();
  ws1.push({ type: 'top', board: 'b', seq: 1, entries: [], total: 0, ts: 1 }); // in flight: dropped
  ws1.push({ type: 'unsubscribed', id: ru.id, board: 'b' });
  await unsub;
  ws1.drop();
  await clock.advance(1000);
  const ws2 = server.last();
  ws2.accept();
  const again = ws2.take();
  assert.equal(again.length, 1, 'only board a: b was given up');
  assert.deepEqual({ ...again[0], id: undefined }, { type: 'subscribe', board: 'a', top: 10, around: 2, member: 'bob', id: undefined });
  ws2.push({ type: 'subscribed', id: again[0].id, board: 'a' });
  ws2.push({ type: 'top', board: 'a', seq: 1, entries: [{ rank: 1, member: 'bob', score: 3 }], total: 1, ts: 2 });
  ws2.push({ type: 'view', board: 'a', member: 'bob', rank: 1, score: 3, around: [], seq: 1, ts: 2 });
  assert.deepEqual(tops.map((f) => [f.board, f.total]), [['a', 0], ['a', 1]]);
  assert.equal(views.length, 1);
  assert.ok(lb.lastFrameAt > 0);
});

test('a draining node: the client reconnects after reconnect_after_ms, not before, and resumes each stream (§15)', async () => {
  const { clock, server, lb } = await connected();
  const events = [];
  lb.on('draining', (d) => events.push(['draining', d.reconnectAfterMs]));
  lb.on('reconnecting', (r) => events.push(['reconnecting', r.delay, r.drain]));
  lb.on('subscribed', (s) => events.push(['subscribed', s.board, s.epoch, s.resumed]));
  const ws1 = server.last();
  const sub = lb.subscribe('a', { top: 10, around: 2, member: 'bob' });
  const [ra] = ws1.take();
  ws1.push({ type: 'subscribed', id: ra.id, board: 'a', epoch: 'e1' });
  await sub;
  ws1.push({ type: 'board', board: 'a', state: 'open', starts_at: null, ends_at: null, final_at: null, ts: 1 });
  ws1.push({ type: 'top', board: 'a', seq: 41, entries: [], total: 0, ts: 1 });
  ws1.push({ type: 'view', board: 'a', member: 'bob', rank: null, score: null, around: [], seq: 44, ts: 2 });
  ws1.push({ type: 'top', board: 'a', seq: 43, entries: [], total: 0, ts: 3 }); // older than the view: the greatest stays
  const lost = lb.score('a', { delta: 1 });
  const [s1] = ws1.take();
  ws1.push({ type: 'draining', reconnect_after_ms: 2500 });
  ws1.close(1001, 'going away'); // the node may close before the time it said
  assert.equal(lb.status, 'reconnecting');
  await clock.advance(2499);
  assert.equal(server.sockets.length, 1, 'no reconnect before reconnect_after_ms');
  await clock.advance(1);
  const ws2 = server.last();
  assert.notEqual(ws2, ws1);
  ws2.accept();
  const sent = ws2.take();
  assert.deepEqual(sent.find((m) => m.type === 'score'), s1, 'the unanswered score again, same id');
  const renew = sent.find((m) => m.type === 'subscribe');
  assert.deepEqual(renew.since, { epoch: 'e1', seq: 44 });
  assert.deepEqual({ ...renew, id: undefined, since: undefined }, { type: 'subscribe', board: 'a', top: 10, around: 2, member: 'bob', id: undefined, since: undefined });
  ws2.push({ type: 'subscribed', id: renew.id, board: 'a', epoch: 'e1', resumed: true });
  ws2.push({ type: 'ack', id: s1.id, board: 'a', member: 'alice', score: 1, rank: 1, prev_rank: null, duplicate: true, seq: 45 });
  assert.equal((await lost).duplicate, true);
  assert.deepEqual(events, [
    ['subscribed', 'a', 'e1', false], ['draining', 2500], ['reconnecting', 2500, true], ['subscribed', 'a', 'e1', true],
  ]);
  assert.equal(lb.boards.get('a').state, 'open', 'the board frame kept across the resume');

  // A lost connection without a hint backs off as before; a fresh answer
  // (another epoch) starts the stream again.
  ws2.drop();
  await clock.advance(1000);
  const ws3 = server.last();
  ws3.accept();
  const [renew3] = ws3.take();
  assert.deepEqual(renew3.since, { epoch: 'e1', seq: 44 });
  ws3.push({ type: 'subscribed', id: renew3.id, board: 'a', epoch: 'e2', resumed: false });
  ws3.push({ type: 'top', board: 'a', seq: 3, entries: [], total: 0, ts: 4 });
  ws3.drop();
  await clock.advance(1000);
  const ws4 = server.last();
  ws4.accept();
  assert.deepEqual(ws4.take()[0].since, { epoch: 'e2', seq: 3 });
  // Unsubscribed: nothing to resume any more.
  lb.unsubscribe('a');
  ws4.take();
  ws4.drop();
  await clock.advance(1000);
  server.last().accept();
  assert.deepEqual(server.last().take(), []);
});

test('a re-subscribe answered unavailable is sent again after retry_after_ms, resuming (§15)', async () => {
  const { clock, server, lb } = await connected();
  const resumed = [];
  lb.on('subscribed', (s) => resumed.push(s.resumed));
  const ws1 = server.last();
  const sub = lb.subscribe('a', { top: 5 });
  const [r] = ws1.take();
  ws1.push({ type: 'subscribed', id: r.id, board: 'a', epoch: 'e7' });
  await sub;
  ws1.push({ type: 'top', board: 'a', seq: 12, entries: [], total: 0, ts: 1 });
  ws1.drop();
  await clock.advance(1000);
  const ws2 = server.last();
  ws2.accept();
  const [renew] = ws2.take();
  assert.deepEqual(renew.since, { epoch: 'e7', seq: 12 });
  ws2.push({ type: 'error', id: renew.id, code: 'unavailable', message: 'slow', retry_after_ms: 300 });
  await clock.advance(299);
  assert.deepEqual(ws2.take(), [], 'not before retry_after_ms');
  await clock.advance(200);
  const [again] = ws2.take();
  assert.deepEqual(again, renew, 'the same re-subscribe, since included');
  ws2.push({ type: 'subscribed', id: again.id, board: 'a', epoch: 'e7', resumed: true });
  assert.deepEqual(resumed, [false, true]);
});

test('subscribe with cohort sends it, and re-sends it after a reconnect (§12)', async () => {
  const { clock, server, lb } = await connected();
  const tops = [];
  lb.on('top', (f) => tops.push(f));
  const ws1 = server.last();
  const sub = lb.subscribe('league', { top: 50, around: 2, cohort: 'silver-3' });
  const [r] = ws1.take();
  assert.deepEqual(r, { type: 'subscribe', board: 'league', top: 50, around: 2, cohort: 'silver-3', id: r.id });
  ws1.push({ type: 'subscribed', id: r.id, board: 'league' });
  await sub;
  ws1.push({ type: 'top', board: 'league', cohort: 'silver-3', seq: 1, entries: [], total: 0, ts: 1 });
  assert.deepEqual(tops.map((f) => f.cohort), ['silver-3']);
  ws1.drop();
  await clock.advance(1000);
  const ws2 = server.last();
  ws2.accept();
  const [again] = ws2.take();
  assert.deepEqual({ ...again, id: undefined }, { type: 'subscribe', board: 'league', top: 50, around: 2, cohort: 'silver-3', id: undefined });
});

test('a token function refreshes the token with auth before it expires', async () => {
  const calls = [];
  let n = 0;
  const token = (info) => {
    calls.push(info);
    return 'tok' + ++n;
  };
  const { clock, server, lb } = setup({ token, refreshBefore: 60_000 });
  lb.connect();
  await flush();
  const ws = server.last();
  assert.deepEqual(ws.protocols, ['lb.v1', 'bearer.tok1']);
  ws.accept({ exp: Math.floor(clock.now() / 1000) + 300 });
  await clock.advance(240_000 - 1);
  assert.deepEqual(ws.take(), [], 'not before exp − refreshBefore');
  await clock.advance(1);
  const [auth] = ws.take();
  assert.deepEqual(auth, { type: 'auth', token: 'tok2', id: auth.id });
  assert.equal(calls[1].refresh, true);
  const newExp = Math.floor(clock.now() / 1000) + 600;
  ws.push({ type: 'authed', id: auth.id, exp: newExp });
  await flush();
  assert.equal(lb.exp, newExp);
  // Expired anyway (4001): the next attempt asks for a fresh token.
  ws.drop(4001);
  await clock.advance(1000);
  assert.deepEqual({ ...calls[2] }, { attempt: 1, lastCode: 4001, welcomed: true, refresh: false });
  assert.deepEqual(server.last().protocols, ['lb.v1', 'bearer.tok3']);
  // Refused before welcome (a 401 shows as 1006): the function is told so.
  server.last().drop(1006);
  await clock.advance(1000);
  assert.deepEqual({ ...calls[3] }, { attempt: 2, lastCode: 1006, welcomed: false, refresh: false });
});

const YEAR_S = 365 * 86400;

test('R31: a token valid for years sends no auth and arms no timer beyond the platform limit', async () => {
  const calls = [];
  const token = (info) => {
    calls.push(info);
    return 'tok' + calls.length;
  };
  const { clock, server, lb } = setup({ token });
  lb.connect();
  await flush();
  const ws = server.last();
  const exp = Math.floor(clock.now() / 1000) + 10 * YEAR_S;
  ws.accept({ exp });
  // Five simulated minutes, then 60 days: a timer that overflowed would fire
  // at once and refresh in a loop.
  await clock.advance(5 * 60_000);
  assert.deepEqual(ws.take(), [], 'no auth for a token that expires in ten years');
  await clock.advance(60 * 86400_000);
  assert.deepEqual(ws.take(), [], 'no auth 60 days later either');
  assert.equal(calls.length, 1, 'the token function was only asked for the connection');
  assert.ok(clock.armed < 10, `timers armed: ${clock.armed}`);
  // Re-armed in steps of at most 2^31-1 ms, it still refreshes on time.
  const before = exp * 1000 - 60_000 - clock.now();
  await clock.advance(before - 1);
  assert.deepEqual(ws.take(), [], 'not before exp − refreshBefore');
  await clock.advance(1);
  const [auth] = ws.take();
  assert.deepEqual(auth, { type: 'auth', token: 'tok2', id: auth.id });
});

test('R31: a refresh that brings the same token or no later exp is not repeated', async () => {
  // The pages' token function returns the #token= fragment: the same token
  // each time.
  let asked = 0;
  const { clock, server, lb } = setup({ token: () => (asked++, 'fixed') });
  lb.connect();
  await flush();
  const ws = server.last();
  ws.accept({ exp: Math.floor(clock.now() / 1000) + 120 });
  await clock.advance(120_000);
  assert.deepEqual(ws.take(), [], 'the same token is not sent again with auth');
  assert.equal(asked, 2, 'asked once to connect and once to refresh, not in a loop');

  // A function that hands out new tokens whose exp does not move.
  let n = 0;
  const env = setup({ token: () => 'tok' + ++n });
  env.lb.connect();
  await flush();
  const ws2 = env.server.last();
  const exp = Math.floor(env.clock.now() / 1000) + 120;
  ws2.accept({ exp });
  await env.clock.advance(60_000);
  const [a] = ws2.take();
  assert.equal(a.type, 'auth');
  ws2.push({ type: 'authed', id: a.id, exp });
  await env.clock.advance(60_000);
  assert.deepEqual(ws2.take(), [], 'one refresh per exp');
  assert.equal(n, 2);
});

test('long waits of the reconnect backoff and request timeout are chained, not overflowed', async () => {
  const { clock, server, lb } = setup({ requestTimeout: 30 * 86400_000, minDelay: 40 * 86400_000, maxDelay: 40 * 86400_000 });
  lb.connect();
  await flush();
  server.last().accept();
  const p = lb.page('b1');
  let settled = false;
  p.catch(() => {}).finally(() => (settled = true));
  await clock.advance(86400_000);
  assert.equal(settled, false, 'a 30-day timeout has not fired after a day');
  await clock.advance(29 * 86400_000);
  await assert.rejects(p, (err) => err.code === 'timeout');
  server.last().drop();
  const sockets = server.sockets.length;
  await clock.advance(86400_000);
  assert.equal(server.sockets.length, sockets, 'a backoff of 20 days or more has not fired after one day');
});

test('a timer that fires early is re-armed for what is left, by the clock', async () => {
  // A platform that fires timers at half their delay (as after a sleep or
  // with a coarse clock): the refresh still waits for exp − refreshBefore.
  const { clock, server, lb } = setup({ token: (i) => (i.refresh ? 'fresh' : 'tok') });
  clock.early = true;
  lb.connect();
  await flush();
  const ws = server.last();
  ws.accept({ exp: Math.floor(clock.now() / 1000) + 3600 });
  await clock.advance(3_540_000 - 1);
  assert.deepEqual(ws.take(), [], 'not before exp − refreshBefore');
  await clock.advance(1);
  assert.deepEqual(ws.take().map((m) => m.type), ['auth']);
});

test('auth(token) with a fixed token sends it and uses it for reconnects', async () => {
  const { clock, server, lb } = await connected();
  const ws = server.last();
  const p = lb.auth('fresh');
  const [a] = ws.take();
  assert.deepEqual(a, { type: 'auth', token: 'fresh', id: a.id });
  ws.push({ type: 'authed', id: a.id, exp: 42 });
  assert.equal((await p).exp, 42);
  assert.equal(lb.exp, 42);
  ws.drop();
  await clock.advance(1000);
  assert.deepEqual(server.last().protocols, ['lb.v1', 'bearer.fresh']);
});

test('close() rejects what is pending and stops reconnecting; 4003 stops too', async () => {
  {
    const { clock, server, lb } = await connected();
    const p = lb.score('b1', { delta: 1 });
    lb.close();
    await assert.rejects(p, { code: 'closed' });
    assert.equal(lb.status, 'closed');
    await clock.advance(60_000);
    assert.equal(server.sockets.length, 1);
    await assert.rejects(lb.page('b1'), { code: 'closed' });
  }
  {
    const { clock, server, lb } = await connected();
    const p = lb.page('b1');
    server.last().drop(4003);
    await assert.rejects(p, { code: 'forbidden' });
    await clock.advance(60_000);
    assert.equal(server.sockets.length, 1);
  }
});

test('reads time out; scores do not; pending requests are bounded', async () => {
  const { clock, server, lb } = await connected({ requestTimeout: 500, maxPending: 3 });
  const read = lb.page('b1');
  const s = lb.score('b1', { delta: 1 });
  const third = lb.rank('b1', 'x');
  await assert.rejects(lb.rank('b1', 'y'), { code: 'too_many_pending' });
  const timedOut = [assert.rejects(read, { code: 'timeout' }), assert.rejects(third, { code: 'timeout' })];
  await clock.advance(500);
  await Promise.all(timedOut);
  assert.equal(lb.unackedScores, 1);
  const sc = server.last().take().find((m) => m.type === 'score');
  server.last().push({ type: 'ack', id: sc.id, board: 'b1', member: 'alice', score: 1, rank: 1, prev_rank: null, duplicate: false, seq: 1 });
  assert.equal((await s).score, 1);
});

test('a listener that throws does not break the client', async () => {
  const { server, lb } = await connected();
  const ws = server.last();
  const origError = console.error;
  console.error = () => {};
  try {
    lb.on('top', () => {
      throw new Error('boom');
    });
    const sub = lb.subscribe('a', { top: 3 });
    const [r] = ws.take();
    ws.push({ type: 'subscribed', id: r.id, board: 'a' });
    await sub;
    ws.push({ type: 'top', board: 'a', seq: 1, entries: [], total: 0, ts: 1 });
    const p = lb.page('a');
    const [q] = ws.take();
    ws.push({ type: 'page', id: q.id, board: 'a', offset: 0, entries: [], total: 7 });
    assert.equal((await p).total, 7);
  } finally {
    console.error = origError;
  }
});

// --- v1.1: lifecycle frames, final standings, profiles, new error codes ---

test('board frames (R19) are kept per board and emitted; deleted ends the subscription', async () => {
  const { clock, server, lb } = await connected();
  const ws = server.last();
  const seen = [];
  lb.on('board', (f) => seen.push(f.state));
  const sub = lb.subscribe('cup', { top: 5 });
  const [req] = ws.take();
  ws.push({ type: 'subscribed', id: req.id, board: 'cup' });
  await sub;
  const open = { type: 'board', board: 'cup', state: 'open', period: 7, starts_at: null, ends_at: 1_700_000_060_000, final_at: 1_700_000_070_000, ts: clock.now() };
  ws.push(open);
  ws.push({ type: 'board', board: 'other', state: 'open', ts: clock.now() }); // not subscribed: ignored
  assert.deepEqual(lb.boards.get('cup'), open);
  assert.equal(lb.boards.has('other'), false);
  ws.push({ ...open, state: 'closing' });
  assert.equal(lb.boards.get('cup').state, 'closing');
  ws.push({ type: 'board', board: 'cup', state: 'deleted', ts: clock.now() });
  assert.deepEqual(seen, ['open', 'closing', 'deleted']);
  assert.equal(lb.boards.has('cup'), false);
  // No more frames for it, and a reconnect does not subscribe again.
  const tops = [];
  lb.on('top', (f) => tops.push(f));
  ws.push({ type: 'top', board: 'cup', seq: 9, entries: [], total: 0, ts: clock.now() });
  assert.equal(tops.length, 0);
  ws.drop();
  await clock.advance(1000);
  server.last().accept();
  assert.deepEqual(server.last().take(), [], 'no subscribe for a deleted board');
  assert.deepEqual(BOARD_STATES, ['scheduled', 'open', 'closing', 'final', 'deleted']);
});

test('a final top frame is emitted as top and as final, and kept', async () => {
  const { clock, server, lb } = await connected();
  const ws = server.last();
  lb.subscribe('cup', { top: 3 });
  const got = { top: [], final: [] };
  lb.on('top', (f) => got.top.push(f.final === true));
  lb.on('final', (f) => got.final.push(f.period));
  const entries = [{ rank: 1, member: 'bob', score: 9, name: 'Bob', avatar: 'https://img.test/b.png', country: 'FR' }];
  ws.push({ type: 'top', board: 'cup', seq: 1, entries, total: 1, ts: clock.now() });
  ws.push({ type: 'top', board: 'cup', seq: 2, entries, total: 1, ts: clock.now(), final: true, period: 41 });
  ws.push({ type: 'top', board: 'cup', seq: 3, entries: [], total: 0, ts: clock.now(), period: 42 });
  assert.deepEqual(got.top, [false, true, false]);
  assert.deepEqual(got.final, [41]);
  assert.equal(lb.finals.get('cup').period, 41);
  assert.equal(lb.finals.get('cup').entries[0].country, 'FR', 'profile fields pass through');
  lb.unsubscribe('cup');
  assert.equal(lb.finals.has('cup'), false);
});

test('serverNow follows the welcome clock, not the local one', async () => {
  const { clock, server, lb } = setup();
  lb.connect();
  await flush();
  server.last().accept({ server_time: clock.now() + 90_000 }); // the server is 90 s ahead
  assert.equal(lb.serverNow() - clock.now(), 90_000);
  await clock.advance(5000);
  assert.equal(lb.serverNow() - clock.now(), 90_000);
});

test('new error codes reject scores without a retry and have a text', async () => {
  const { clock, server, lb } = await connected();
  const ws = server.last();
  for (const code of ['banned', 'limit_reached', 'read_only']) {
    const p = lb.score('cup', { delta: 1 });
    const [req] = ws.take();
    ws.push({ type: 'error', id: req.id, code, message: code + ' here' });
    await assert.rejects(p, (err) => err.code === code && err.message === code + ' here');
    await clock.advance(60_000);
    assert.deepEqual(ws.take(), [], `${code}: not re-sent`);
    assert.equal(typeof ERROR_TEXT[code], 'string');
  }
  assert.equal(lb.unackedScores, 0);
});

test('a refused subscribe is not re-sent after a reconnect', async () => {
  const { clock, server, lb } = await connected();
  const ws = server.last();
  const denied = lb.subscribe('secret', { top: 5 });
  const allowed = lb.subscribe('open', { top: 5 });
  const [d, a] = ws.take();
  ws.push({ type: 'error', id: d.id, code: 'forbidden', message: 'board not in token' });
  ws.push({ type: 'subscribed', id: a.id, board: 'open' });
  await assert.rejects(denied, { code: 'forbidden' });
  await allowed;
  ws.drop();
  await clock.advance(1000);
  server.last().accept();
  assert.deepEqual(server.last().take().map((m) => m.board), ['open']);
});

test('a failing token function is token_failed, not unauthorized', async () => {
  const { clock, server, lb } = setup({ token: () => Promise.reject(new TypeError('Failed to fetch')) });
  const errs = [];
  lb.on('error', (e) => errs.push(e));
  lb.connect();
  await flush();
  assert.equal(server.sockets.length, 0, 'no dial without a token');
  assert.equal(errs[0].code, 'token_failed');
  assert.equal(errs[0].cause.message, 'Failed to fetch');
  assert.equal(lb.status, 'reconnecting');
  await clock.advance(190); // the first backoff: 250 · 3/4 with random() = 0.5
  assert.equal(errs.length, 2, 'tried again after the backoff');
});

test('score passes at through (server tokens, v1.1)', async () => {
  const { server, lb } = await connected();
  lb.score('cup', { delta: 2, member: 'bob', at: 1_700_000_000_123, id: 'e1' });
  assert.deepEqual(server.last().take(), [{ type: 'score', board: 'cup', delta: 2, member: 'bob', at: 1_700_000_000_123, id: 'e1' }]);
});

test('score passes meta through; a meta that is not a small object is refused before sending', async () => {
  const { server, lb } = await connected();
  lb.score('cup', { value: 9, id: 'e2', meta: { replay: 'https://r.test/1', k: [1, 2] } });
  assert.deepEqual(server.last().take(), [{ type: 'score', board: 'cup', value: 9, meta: { replay: 'https://r.test/1', k: [1, 2] }, id: 'e2' }]);
  for (const bad of [[1], 'x', null, 7, { r: 'é'.repeat(253) }]) {
    await assert.rejects(lb.score('cup', { value: 1, meta: bad }), { code: 'bad_request' }, JSON.stringify(bad));
  }
  assert.deepEqual(server.last().take(), []);
});

test('subscribe passes members and meta: true through; members frames are emitted and re-subscribed', async () => {
  const { clock, server, lb } = await connected();
  const lists = [];
  lb.on('members', (f) => lists.push(f));
  const ws1 = server.last();
  const sub = lb.subscribe('friends', { members: ['ann', 'bob'], meta: true });
  const [req] = ws1.take();
  assert.deepEqual(req, { type: 'subscribe', board: 'friends', members: ['ann', 'bob'], meta: true, id: req.id });
  ws1.push({ type: 'subscribed', id: req.id, board: 'friends' });
  await sub;
  const frame = { type: 'members', board: 'friends', entries: [{ rank: 4, member: 'bob', score: 9, meta: { replay: 'https://r.test/b' } }], total: 7, seq: 3, ts: 1 };
  ws1.push(frame);
  ws1.push({ ...frame, board: 'other' }); // not subscribed: ignored
  assert.deepEqual(lists, [frame]);
  ws1.drop();
  await clock.advance(1000);
  const ws2 = server.last();
  ws2.accept();
  const [again] = ws2.take();
  assert.deepEqual({ ...again, id: undefined }, { type: 'subscribe', board: 'friends', members: ['ann', 'bob'], meta: true, id: undefined });
  lb.subscribe('plain', { top: 3, meta: false });
  assert.deepEqual({ ...ws2.take()[0], id: undefined }, { type: 'subscribe', board: 'plain', top: 3, id: undefined });
});

test('avatarURL takes https only; flagEmoji maps ISO codes', () => {
  assert.equal(avatarURL({ avatar: 'https://cdn.test/a.png' }), 'https://cdn.test/a.png');
  for (const bad of ['http://cdn.test/a.png', 'javascript:alert(1)', 'data:image/png;base64,AA', '/a.png', 'https://x.test/' + 'a'.repeat(250), 7, undefined]) {
    assert.equal(avatarURL({ avatar: bad }), '', String(bad));
  }
  assert.equal(avatarURL(null), '');
  assert.equal(flagEmoji('FR'), '\u{1F1EB}\u{1F1F7}');
  assert.equal(flagEmoji('jp'), '\u{1F1EF}\u{1F1F5}');
  for (const bad of ['FRA', 'F', '12', '', null]) assert.equal(flagEmoji(bad), '');
});

test('tierOf: the first tier whose bound the rank is within', () => {
  const tiers = [{ name: 'Champion', top_rank: 1 }, { name: 'Gold', top_percent: 5 }, { name: 'Silver', top_percent: 25 }];
  for (const [rank, total, want] of [[1, 1000, 'Champion'], [2, 1000, 'Gold'], [50, 1000, 'Gold'], [51, 1000, 'Silver'],
    [250, 1000, 'Silver'], [251, 1000, ''], [1, 3, 'Champion'], [2, 3, ''], [0, 10, '']]) {
    assert.equal(tierOf(tiers, rank, total), want, `rank ${rank} of ${total}`);
  }
  assert.equal(tierOf(undefined, 1, 10), '');
});

test('lb-client.d.ts declares every export and public method; package.json points at both', async () => {
  const { readFile } = await import('node:fs/promises');
  const dts = await readFile(new URL('./static/lb-client.d.ts', import.meta.url), 'utf8');
  const mod = await import('./static/lb-client.js');
  for (const name of Object.keys(mod)) {
    if (name === 'default') continue;
    assert.match(dts, new RegExp(`export (class|const|function) ${name}\\b`), `export ${name}`);
  }
  const methods = Object.getOwnPropertyNames(LBClient.prototype).filter((m) => m !== 'constructor' && !m.startsWith('_'));
  for (const m of methods) assert.match(dts, new RegExp(`\\n  (readonly )?${m}[(:<]`), `method ${m}`);
  const pkg = JSON.parse(await readFile(new URL('./static/package.json', import.meta.url), 'utf8'));
  assert.equal(pkg.types, 'lb-client.d.ts');
  assert.equal(pkg.module, 'lb-client.js');
  assert.deepEqual(pkg.files, ['lb-client.js', 'lb-client.d.ts']);
});
