// Shared helpers of the spectator and player pages: tokens, the board list,
// the connection badge. Tokens stay in memory (or in the URL fragment, which
// browsers never send); they are never put in a query string or in storage.

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

/** The token in the fragment (#token=…), or ''. */
export function fragmentToken() {
  return new URLSearchParams(location.hash.slice(1)).get('token') || '';
}

/** A link to another page of this site that keeps the fragment (and so the token). */
export function link(path, params) {
  const q = new URLSearchParams(params).toString();
  return path + (q ? '?' + q : '') + location.hash;
}

/** The `exp` claim of a JWT (unix seconds), 0 when unreadable. */
export function tokenExp(token) {
  try {
    const part = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(part)).exp || 0;
  } catch {
    return 0;
  }
}

/** POST /api/v1/dev/token (only answered in --dev). */
export async function devToken(sub, role, name) {
  const body = { sub, role };
  if (name) body.name = name;
  const r = await fetch('/api/v1/dev/token', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    cache: 'no-store',
  });
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
    if (!dev) return fragmentToken();
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

/** Formats a score or a count; '—' for null. */
export function num(n) {
  return n === null || n === undefined ? '—' : fmt.format(n);
}

const statusText = {
  idle: 'not connected',
  connecting: 'connecting…',
  open: 'live',
  reconnecting: 'reconnecting…',
  closed: 'disconnected',
};

/** Keeps a .conn badge in step with the client's status. */
export function bindStatus(lb, badge) {
  const text = badge.querySelector('.text');
  const show = (s) => {
    badge.dataset.status = s;
    document.body.dataset.status = s; // the CSS dims live data while it is stale
    text.textContent = statusText[s] || s;
  };
  show(lb.status);
  lb.on('status', show);
  lb.on('reconnecting', ({ delay }) => {
    text.textContent = `reconnecting in ${Math.max(1, Math.round(delay / 1000))} s…`;
  });
  // Reconnect at once when the network comes back rather than waiting out the backoff.
  window.addEventListener('online', () => lb.reconnectNow());
}

/** "3 s ago" for a local timestamp in ms; '—' before the first frame. */
export function ago(ms) {
  if (!ms) return '—';
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 10) return s.toFixed(1) + ' s ago';
  if (s < 120) return Math.round(s) + ' s ago';
  return Math.round(s / 60) + ' min ago';
}
