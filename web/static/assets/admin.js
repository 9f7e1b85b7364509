// The console (/admin, docs/console.md): boards with their state, members,
// viewers and joins per second; create a board and edit its settings (saved
// with PATCH, so what the form does not show keeps its value); a board's
// standings (on a region board its regions, docs/regions.md) and their
// export (any retained period, NDJSON or CSV); find a member, edit the
// profile, ban, lift, remove from a period, erase everywhere; the webhooks
// and their last deliveries; the review queue of held members (§16): clear,
// remove, ban. Built on the REST API only, with the admin token of the URL
// fragment (never sent anywhere but in the Authorization header).
import { dev, devToken, durationMS, el, errorText, fragmentToken, initial, lifecycle, num, validBoard } from './common.js';

const $ = (id) => document.getElementById(id);

// How often the board list and the standings are read again.
const REFRESH_MS = 2000;
// How many boards get their details (one GET each) per refresh.
const DETAILS = 50;
const STATES = { scheduled: 'not started', open: 'live', closing: 'closing', final: 'final' };

/** A REST error: the contract's code and the server's message. */
class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let token = '';

/** One REST call; the answer's JSON, null for 204, APIError otherwise. */
async function api(method, path, body) {
  const headers = { Authorization: 'Bearer ' + token };
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
    init.body = JSON.stringify(body);
  }
  let r;
  try {
    r = await fetch(path, init);
  } catch {
    throw new APIError(0, 'unreachable', 'the gateway cannot be reached');
  }
  noteServerClock(r);
  if (r.status === 204) return null;
  const j = await r.json().catch(() => null);
  if (!r.ok) throw new APIError(r.status, j?.error?.code || 'internal', j?.error?.message || `HTTP ${r.status}`);
  return j;
}

const enc = encodeURIComponent;
const boardPath = (id) => '/api/v1/boards/' + enc(id);

function notice(text, info = true) {
  const n = $('notice');
  n.textContent = text || '';
  n.hidden = !text;
  n.classList.toggle('info', info);
}

function badge(status, text) {
  const b = $('conn');
  b.dataset.status = status;
  b.querySelector('.text').textContent = text;
}

/** The claims of a JWT, {} when unreadable (the server checks it anyway). */
function claims(tok) {
  try {
    return JSON.parse(atob(tok.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
  } catch {
    return {};
  }
}

/** The field an error message names ("… field top: …"), or ''. */
function namedField(err) {
  return /\bfield ([a-z_]+)/.exec(err?.message || '')?.[1] || '';
}

// --- the fragment: token and selected board ---

function fragment() {
  return new URLSearchParams(location.hash.slice(1));
}

function selectBoard(id) {
  const f = fragment();
  f.set('board', id);
  history.replaceState(null, '', '#' + f.toString());
  showBoard(id);
}

// --- boards ---

const seen = new Map(); // board id → {members, at}: the previous read, for joins/s

async function refreshBoards() {
  const { boards } = await api('GET', '/api/v1/boards');
  const tbody = $('board-rows');
  const rows = new Map([...tbody.children].map((tr) => [tr.dataset.board, tr]));
  for (const b of boards) {
    let tr = rows.get(b.id);
    rows.delete(b.id);
    if (!tr) {
      tr = el('tr', { dataset: { board: b.id } },
        el('td', {}, el('button', { type: 'button', class: 'link', onclick: () => selectBoard(b.id) }, b.id)),
        el('td', { class: 'title' }), el('td', { class: 'state' }),
        el('td', { class: 'n members' }, '—'), el('td', { class: 'n viewers' }, '—'), el('td', { class: 'n rate' }, '—'));
    }
    tr.querySelector('.title').textContent = b.title || '';
    tbody.append(tr); // keeps the list's order
  }
  for (const tr of rows.values()) tr.remove(); // deleted boards
  $('boards-empty').hidden = boards.length > 0;
  await Promise.all(boards.slice(0, DETAILS).map((b) => boardDetails(b.id)));
}

async function boardDetails(id) {
  let d;
  try {
    d = await api('GET', boardPath(id));
  } catch {
    return; // deleted meanwhile, or not readable: the row keeps its dashes
  }
  const tr = $('board-rows').querySelector(`tr[data-board="${CSS.escape(id)}"]`);
  if (!tr) return;
  lifecycles.set(id, { state: d.state || '', cfg: d.board || {} });
  showState(tr, id);
  tr.querySelector('.members').textContent = num(d.members);
  tr.querySelector('.viewers').textContent = typeof d.viewers === 'number' ? num(d.viewers) : '—';
  const now = performance.now();
  const prev = seen.get(id);
  seen.set(id, { members: d.members, at: now });
  if (prev && now > prev.at) {
    const rate = Math.max(0, d.members - prev.members) / ((now - prev.at) / 1000);
    tr.querySelector('.rate').textContent = rate.toFixed(1);
  }
  if (id === current && d.board) {
    showConfig(d.board);
    lockFinal(d.state === 'final');
  }
}

async function createBoard(ev) {
  ev.preventDefault();
  const id = $('create-id').value.trim();
  const err = $('create-err');
  err.textContent = '';
  if (!validBoard(id)) {
    err.textContent = 'A board id is 1–64 letters, digits, "_", "." or "-".';
    $('create-id').focus();
    return;
  }
  // PUT creates or replaces: look first, so Create never wipes a board's settings.
  try {
    await api('GET', boardPath(id));
    err.textContent = `Board ${id} already exists: open it in the list to edit it.`;
    return;
  } catch (e) {
    if (e.status !== 404) {
      err.textContent = errorText(e);
      return;
    }
  }
  const body = {};
  const title = $('create-title').value.trim();
  if (title) body.title = title;
  try {
    await api('PUT', boardPath(id), body);
  } catch (e) {
    err.textContent = errorText(e);
    return;
  }
  $('create-id').value = '';
  $('create-title').value = '';
  await refreshBoards().catch(() => {});
  selectBoard(id);
}

// --- one board: settings ---

// The settings form: every field of the config a person edits. The fields
// fixed at creation (shards, group, source, decay) and tiers are shown,
// not edited; a PATCH leaves them as they are.
const FIELDS = [
  { key: 'title', label: 'Title', kind: 'text' },
  { key: 'order', label: 'Order', kind: 'select', options: ['desc', 'asc'] },
  { key: 'mode', label: 'Mode', kind: 'select', options: ['incr', 'best', 'set'] },
  { key: 'tiebreak', label: 'Tiebreak', kind: 'select', options: ['first', 'last', 'shared'] },
  { key: 'reset', label: 'Reset', kind: 'text', hint: 'none, hourly, daily, weekly, monthly or a duration (15m)' },
  { key: 'tz', label: 'Time zone', kind: 'text', hint: 'UTC, Europe/Paris…' },
  { key: 'top', label: 'Top', kind: 'int' },
  { key: 'max_delta', label: 'Max delta', kind: 'int', hint: '0: no limit' },
  { key: 'max_submissions', label: 'Max submissions', kind: 'int', hint: 'per member and period; 0: no limit' },
  { key: 'retain', label: 'Retain', kind: 'int', hint: 'past periods kept' },
  { key: 'idempotency_window', label: 'Idempotency window', kind: 'text' },
  { key: 'starts_at', label: 'Starts at', kind: 'time', hint: 'RFC 3339, e.g. 2026-12-01T18:00:00Z; empty: now' },
  { key: 'ends_at', label: 'Ends at', kind: 'time', hint: 'RFC 3339; empty: never' },
  { key: 'grace', label: 'Grace', kind: 'text' },
  { key: 'client_writes', label: 'Client writes', kind: 'bool' },
  { key: 'public', label: 'Public', kind: 'bool' },
];

let current = ''; // the board shown
let cfg = null; // its config as last read or saved
let editing = false; // the form has unsaved input: refreshes leave it alone

function buildForm() {
  const box = $('edit-fields');
  for (const f of FIELDS) {
    const id = 'f-' + f.key;
    let input;
    if (f.kind === 'select') {
      input = el('select', { id }, ...f.options.map((o) => el('option', { value: o }, o)));
    } else if (f.kind === 'bool') {
      input = el('input', { id, type: 'checkbox' });
    } else {
      input = el('input', { id, autocomplete: 'off', spellcheck: false, inputMode: f.kind === 'int' ? 'numeric' : 'text' });
    }
    input.addEventListener('input', () => { editing = true; });
    const err = el('p', { class: 'field-error', id: 'err-' + f.key });
    input.setAttribute('aria-describedby', err.id);
    const label = el('label', { htmlFor: id }, f.label);
    const hint = f.hint ? el('span', { class: 'hint' }, f.hint) : null;
    box.append(f.kind === 'bool'
      ? el('div', { class: 'check' }, input, label, err)
      : el('div', {}, label, input, hint, err));
  }
}

/** The form's value of field f as the config's JSON would have it. */
function formValue(f) {
  const input = $('f-' + f.key);
  const v = input.value.trim();
  switch (f.kind) {
    case 'bool': return input.checked;
    case 'int': return /^-?\d+$/.test(v) ? Number(v) : v; // not a number: the server names the field
    case 'time': return v === '' ? null : v;
    default: return input.value;
  }
}

/** A config value as formValue reads it back from the form showConfig filled. */
function configValue(f, v) {
  switch (f.kind) {
    case 'bool': return !!v;
    case 'time': return v ?? null;
    case 'int': return typeof v === 'number' ? v : String(v ?? '');
    default: return v === null || v === undefined ? '' : String(v);
  }
}

function showConfig(b) {
  if (editing) return;
  cfg = b;
  $('board-id').textContent = b.title ? `${b.title} (${b.id})` : b.id;
  for (const f of FIELDS) {
    const input = $('f-' + f.key);
    const v = b[f.key];
    if (f.kind === 'bool') input.checked = !!v;
    else input.value = v === null || v === undefined ? '' : String(v);
  }
  const fixed = [`shards ${b.shards || 1}`, `group ${b.group || b.id}`];
  if (b.decay) fixed.push('decay (hot board)');
  if (b.regions) fixed.push('regions (by each member\'s country)');
  if (b.source) fixed.push('source (derived board)');
  if (b.tiers) fixed.push(`${b.tiers.length} tiers (edit with PUT)`);
  $('fixed').textContent = 'Fixed at creation: ' + fixed.join(' · ') + '.';
}

function clearErrors(form) {
  for (const p of form.querySelectorAll('.field-error')) p.textContent = '';
}

async function saveConfig(ev) {
  ev.preventDefault();
  const form = $('edit-form');
  clearErrors(form);
  $('saved').textContent = '';
  // Only what the person changed goes in the patch: the rest keeps its
  // stored value, even if another console changed it meanwhile.
  const patch = {};
  for (const f of FIELDS) {
    const v = formValue(f);
    if (JSON.stringify(v) !== JSON.stringify(configValue(f, cfg[f.key]))) patch[f.key] = v;
  }
  if (Object.keys(patch).length === 0) {
    editing = false;
    $('saved').textContent = 'Nothing changed.';
    return;
  }
  try {
    const stored = await api('PATCH', boardPath(current), patch);
    editing = false;
    showConfig(stored);
    $('saved').textContent = 'Saved.';
    refreshBoards().catch(() => {});
  } catch (e) {
    if (e.code === 'board_closed') {
      // Not a score refusal: a final board's config is frozen (§6).
      editing = false;
      lockFinal(true);
      $('edit-err').textContent = 'Not saved: this board is final, and its settings can no longer change.';
      return;
    }
    const field = namedField(e);
    const slot = field && $('err-' + field);
    (slot || $('edit-err')).textContent = errorText(e);
    (field && $('f-' + field))?.focus();
  }
}

// --- one board: standings ---

function entryRow(e) {
  const name = e.name || e.member;
  const pic = el('span', { class: 'pic', 'aria-hidden': 'true' });
  if (e.avatar) pic.append(el('img', { src: e.avatar, alt: '', referrerPolicy: 'no-referrer' }));
  else pic.append(el('span', { class: 'initial' }, initial(name)));
  return el('tr', { dataset: { member: e.member } },
    el('td', { class: 'rank' }, String(e.rank)),
    el('td', { class: 'who' }, el('div', { class: 'pick' }, pic,
      el('span', { class: 'label' }, el('span', { class: 'name' }, name), el('span', { class: 'id' }, e.member + (e.country ? ' · ' + e.country : ''))))),
    el('td', { class: 'score' }, num(e.score)));
}

async function refreshStandings() {
  if (!current) return;
  const id = current;
  const page = await api('GET', boardPath(id) + '/top?limit=25');
  if (id !== current) return;
  $('rows').replaceChildren(...page.entries.map(entryRow));
  $('standings-empty').hidden = page.entries.length > 0;
  await refreshRegions(id);
}

// refreshRegions lists a region board's regions, most members first, each
// linking to its spectator page (§17).
async function refreshRegions(id) {
  const box = $('regions-box');
  box.hidden = !cfg?.regions || cfg.id !== id;
  if (box.hidden) return;
  const { regions } = await api('GET', boardPath(id) + '/regions');
  if (id !== current) return;
  $('regions').replaceChildren(...regions.map((r) => el('li', { dataset: { region: r.region } },
    el('a', { href: `/?board=${enc(id)}&region=${enc(r.region)}` }, r.region),
    el('span', { class: 'muted' }, r.members === 1 ? '1 member' : `${num(r.members)} members`))));
  $('regions-empty').hidden = regions.length > 0;
}

// --- one board: export (docs/seasons.md) ---

const DAY_MS = 864e5;
const pad = (n, w = 2) => String(n).padStart(w, '0');
const utcDay = (t) => `${t.getUTCFullYear()}${pad(t.getUTCMonth() + 1)}${pad(t.getUTCDate())}`;

/** The ISO year and week of UTC date t as a weekly board's index (YYYYWW). */
function isoWeek(t) {
  const th = new Date(t.getTime() + (3 - ((t.getUTCDay() + 6) % 7)) * DAY_MS); // its week's Thursday
  const y = th.getUTCFullYear();
  return y * 100 + 1 + Math.floor((th - Date.UTC(y, 0, 1)) / DAY_MS / 7);
}

/** Minutes of a duration reset ("15m", "6h", "1h30m"), 0 when it is none. */
function resetMinutes(reset) {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:0s)?$/.exec(reset || '');
  return m && (m[1] || m[2]) ? Number(m[1] || 0) * 60 + Number(m[2] || 0) : 0;
}

/**
 * The index of the period before idx on a board with this reset, by the
 * calendar of the index itself (docs/protocol.md §6: YYYYMMDDHH, YYYYMMDD,
 * YYYYWW, YYYYMM, YYYYMMDDmmmm), so the board's time zone needs no math.
 */
function previousPeriod(idx, reset) {
  const s = String(idx);
  const y = +s.slice(0, 4);
  const mo = +s.slice(4, 6);
  const d = +s.slice(6, 8);
  switch (reset) {
    case 'hourly': {
      const t = new Date(Date.UTC(y, mo - 1, d, +s.slice(8, 10) - 1));
      return Number(utcDay(t) + pad(t.getUTCHours()));
    }
    case 'daily': return Number(utcDay(new Date(Date.UTC(y, mo - 1, d - 1))));
    case 'monthly': {
      const t = new Date(Date.UTC(y, mo - 2, 1));
      return t.getUTCFullYear() * 100 + t.getUTCMonth() + 1;
    }
    case 'weekly': {
      const jan4 = new Date(Date.UTC(y, 0, 4));
      const monday = jan4.getTime() - ((jan4.getUTCDay() + 6) % 7) * DAY_MS + (mo - 1) * 7 * DAY_MS; // mo: the week
      return isoWeek(new Date(monday - 7 * DAY_MS));
    }
  }
  const step = resetMinutes(reset);
  if (!step) return 0;
  let min = +s.slice(8) - step;
  let t = new Date(Date.UTC(y, mo - 1, d));
  if (min < 0) {
    t = new Date(t - DAY_MS);
    min = Math.floor((24 * 60 - 1) / step) * step;
  }
  return Number(utcDay(t) + pad(min, 4));
}

/** Fills the export's period choice: the current period and every retained one. */
async function showExportPeriods(b) {
  const sel = $('export-period');
  const opts = [el('option', { value: '' }, 'current')];
  if (b.reset && b.reset !== 'none') {
    const { period } = await api('GET', boardPath(b.id) + '/top?limit=1');
    if (b.id !== current) return;
    opts[0].textContent = `${period} (current)`;
    let idx = period;
    for (let i = 1; i <= (b.retain || 2) && idx; i++) {
      idx = previousPeriod(idx, b.reset);
      if (idx) opts.push(el('option', { value: String(idx) }, i === 1 ? `${idx} (previous)` : String(idx)));
    }
  }
  const keep = sel.value;
  sel.replaceChildren(...opts);
  if (opts.some((o) => o.value === keep)) sel.value = keep;
}

/**
 * Downloads the export of the chosen period: fetched with the token (a
 * link could not send it) and saved under the name the gateway gives.
 */
async function download(format) {
  const err = $('export-err');
  err.textContent = '';
  $('export-done').textContent = '';
  const q = new URLSearchParams({ format });
  if ($('export-period').value) q.set('period', $('export-period').value);
  if ($('export-hidden').checked) q.set('hidden', 'true');
  let r;
  try {
    r = await fetch(boardPath(current) + '/export?' + q, { headers: { Authorization: 'Bearer ' + token }, cache: 'no-store' });
  } catch {
    err.textContent = 'The gateway cannot be reached.';
    return;
  }
  if (!r.ok) {
    const j = await r.json().catch(() => null);
    err.textContent = j?.error?.message || `HTTP ${r.status}`;
    return;
  }
  let blob;
  try {
    blob = await r.blob();
  } catch {
    err.textContent = 'The export was cut short (the gateway or its store failed midway): download it again.';
    return;
  }
  const name = /filename="([^"]+)"/.exec(r.headers.get('Content-Disposition') || '')?.[1] || `${current}.${format}`;
  const a = el('a', { href: URL.createObjectURL(blob), download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 60000);
  $('export-done').textContent = `Downloaded ${name}.`;
}

// --- one board: bans ---

async function refreshBans() {
  if (!current) return;
  const id = current;
  const { bans } = await api('GET', boardPath(id) + '/bans');
  if (id !== current) return;
  $('bans').replaceChildren(...bans.map((b) => el('li', { dataset: { member: b.member } },
    el('span', {}, el('strong', {}, b.member), ' — ', b.reason || 'no reason given', b.until ? ` · until ${new Date(b.until).toLocaleString()}` : ''),
    el('button', { type: 'button', 'aria-label': `Lift the ban of ${b.member}`, onclick: () => lift(b.member) }, 'Lift'))));
  $('bans-empty').hidden = bans.length > 0;
  if (member) {
    const mine = bans.find((b) => b.member === member);
    $('ban-state').textContent = mine
      ? `Banned: ${mine.reason || 'no reason given'}${mine.until ? ', until ' + new Date(mine.until).toLocaleString() : ''}.`
      : 'Not banned on this board.';
  }
}

// --- one board: the review queue (§16) ---

async function refreshHeld() {
  if (!current) return;
  const id = current;
  const { held } = await api('GET', boardPath(id) + '/held');
  if (id !== current) return;
  const box = $('held');
  const typing = box.contains(document.activeElement) && document.activeElement.tagName === 'INPUT';
  if (typing) return; // a reason being typed is not wiped by a refresh
  box.replaceChildren(...held.map((h) => {
    const reasonId = 'held-reason-' + h.member;
    const more = h.events.length >= 100 ? ' (the first 100)' : '';
    return el('li', { class: 'stack', dataset: { member: h.member } },
      el('p', {}, el('strong', { class: 'who' }, h.member), ' — ', el('span', { class: 'reason' }, h.reason || 'no reason given'),
        ' · score ', el('span', { class: 'score' }, num(h.score)),
        ' · held ', el('time', { dateTime: h.at }, new Date(h.at).toLocaleString())),
      el('p', { class: 'muted small events' }, `Events since${more}: ${h.events.join(', ')}`),
      el('div', { class: 'row' },
        el('button', { type: 'button', 'aria-label': `Clear ${h.member}`, onclick: () => review(h.member, { action: 'clear' }) }, 'Clear'),
        el('button', { type: 'button', 'aria-label': `Remove ${h.member}`, onclick: () => review(h.member, { action: 'remove' }) }, 'Remove'),
        el('div', { class: 'grow' },
          el('label', { htmlFor: reasonId }, `Ban reason for ${h.member}`),
          el('input', { id: reasonId, maxLength: 200, autocomplete: 'off' })),
        el('button', {
          type: 'button', 'aria-label': `Ban ${h.member}`,
          onclick: () => review(h.member, { action: 'ban', reason: $(reasonId).value.trim() }),
        }, 'Ban')));
  }));
  $('held-empty').hidden = held.length > 0;
}

const REVIEWED = { clear: 'is shown again', remove: 'has its entry removed', ban: 'is banned from this board' };

async function review(m, body) {
  $('held-err').textContent = '';
  $('held-done').textContent = '';
  try {
    await api('POST', `${boardPath(current)}/held/${enc(m)}`, body);
  } catch (e) {
    $('held-err').textContent = errorText(e);
    return;
  }
  $('held-done').textContent = `${m} ${REVIEWED[body.action]}.`;
  document.activeElement?.blur();
  await Promise.all([refreshHeld(), refreshStandings(), refreshBans()].map((p) => p.catch(() => {})));
}

// --- one board: a member ---

let member = '';

async function findMember(ev) {
  ev?.preventDefault();
  const m = $('member-id').value.trim();
  if (!m) return;
  member = m;
  $('member').hidden = false;
  $('member-done').textContent = '';
  for (const id of ['profile-err', 'ban-err', 'remove-err', 'erase-err']) $(id).textContent = '';
  disarmErase();
  clearErrors($('profile-form'));
  await Promise.all([showMemberRank(), showProfile(), refreshBans().catch(() => {})]);
}

async function showMemberRank() {
  try {
    const r = await api('GET', `${boardPath(current)}/members/${enc(member)}?around=0`);
    $('member-rank').textContent = r.rank === null
      ? `${member} has no visible entry on this board in the current period (none, or banned).`
      : `${member} is #${num(r.rank)} with ${num(r.score)}` + (r.region ? `, #${num(r.region_rank)} in ${r.region}.` : '.');
  } catch (e) {
    $('member-rank').textContent = errorText(e);
  }
}

async function showProfile() {
  let p = {};
  try {
    p = await api('GET', `/api/v1/members/${enc(member)}/profile`);
  } catch (e) {
    if (e.status !== 404) $('profile-err').textContent = errorText(e);
  }
  $('profile-name').value = p.name || '';
  $('profile-avatar').value = p.avatar || '';
  $('profile-country').value = p.country || '';
}

async function memberAction(errSlot, run, done) {
  $(errSlot).textContent = '';
  $('member-done').textContent = '';
  try {
    await run();
    $('member-done').textContent = typeof done === 'function' ? done() : done;
  } catch (e) {
    $(errSlot).textContent = errorText(e);
    return;
  }
  await Promise.all([refreshStandings(), refreshBans(), showMemberRank()].map((p) => p.catch(() => {})));
}

function saveProfile(ev) {
  ev.preventDefault();
  const form = $('profile-form');
  clearErrors(form);
  const body = {};
  for (const k of ['name', 'avatar', 'country']) {
    const v = $('profile-' + k).value.trim();
    if (v) body[k] = v;
  }
  $('profile-saved').textContent = '';
  return memberAction('profile-err', async () => {
    try {
      await api('PUT', `/api/v1/members/${enc(member)}/profile`, body);
    } catch (e) {
      const slot = $('err-profile-' + namedField(e));
      if (slot) slot.textContent = errorText(e);
      throw e;
    }
  }, `Profile of ${member} saved.`);
}

function ban(ev) {
  ev.preventDefault();
  const body = { reason: $('ban-reason').value.trim() };
  const until = $('ban-until').value;
  if (until) body.until = new Date(until).toISOString(); // the input is local time
  return memberAction('ban-err', () => api('PUT', `${boardPath(current)}/bans/${enc(member)}`, body), `${member} is banned from ${current}.`);
}

function lift(m = member) {
  return memberAction('ban-err', () => api('DELETE', `${boardPath(current)}/bans/${enc(m)}`), `The ban of ${m} is lifted.`);
}

function removeEntry(ev) {
  ev.preventDefault();
  const period = $('remove-period').value.trim();
  const q = period ? '?period=' + enc(period) : '';
  return memberAction('remove-err', () => api('DELETE', `${boardPath(current)}/members/${enc(member)}${q}`),
    `The entry of ${member} is removed from ${period ? 'period ' + period : 'the current period'}.`);
}

// Erasing takes two clicks: the first arms the button for the member
// shown, the second erases it (it cannot be undone).
function disarmErase() {
  delete $('erase').dataset.armed;
  $('erase').textContent = 'Erase';
}

function erase(ev) {
  ev.preventDefault();
  const btn = $('erase');
  if (btn.dataset.armed !== member) {
    btn.dataset.armed = member;
    btn.textContent = 'Confirm erase';
    $('member-done').textContent = `Click "Confirm erase" to erase ${member} from every board.`;
    return undefined;
  }
  disarmErase();
  const m = member;
  let r = null;
  return memberAction('erase-err', async () => {
    do r = await api('DELETE', `/api/v1/members/${enc(m)}`); while (r && r.done === false); // 202: resumes
    await showProfile();
  }, () => erasedText(m, r));
}

// --- board states and countdowns ---

// The server's clock, estimated from the Date header of its answers (to the
// second): countdowns run on it, not on this machine's (§6).
let serverSkew = 0;
function noteServerClock(r) {
  const at = Date.parse(r.headers.get('Date') || '');
  if (Number.isFinite(at)) serverSkew = at + 500 - Date.now(); // the header drops the ms: the middle of its second
}
const serverNow = () => Date.now() + serverSkew;

const lifecycles = new Map(); // board id → {state, cfg}: the last details read

/** The lifecycle times of a config as a `board` frame carries them (unix ms or null). */
function frameOf(state, cfg) {
  const ms = (t) => (t ? Date.parse(t) : null);
  const ends = ms(cfg.ends_at);
  const grace = durationMS(cfg.grace);
  return { state, starts_at: ms(cfg.starts_at), ends_at: ends, final_at: ends === null ? null : ends + grace };
}

// showState writes a board row's state and, while one runs, its countdown
// ("live · ends in 4:05", "not started · starts in 1:30").
function showState(tr, id) {
  const l = lifecycles.get(id);
  if (!l) return;
  const st = tr.querySelector('.state');
  const words = STATES[l.state] || l.state;
  const { text } = l.state && l.state !== 'final' ? lifecycle(frameOf(l.state, l.cfg), l.cfg, serverNow()) : { text: '' };
  st.textContent = text ? `${words} · ${text}` : words;
  st.dataset.state = l.state;
}

function tickStates() {
  for (const tr of $('board-rows').children) showState(tr, tr.dataset.board);
}

// lockFinal freezes the settings form of a final board: its config can no
// longer change (409 board_closed), so nothing invites an edit.
function lockFinal(final) {
  $('final-lock').hidden = !final;
  for (const c of $('edit-form').querySelectorAll('input, select, button')) c.disabled = final;
}

// --- erasure ---

const plural = (n, one, many = one + 's') => `${num(n)} ${n === 1 ? one : many}`;

/** What an erasure removed, in words (§13's answer). */
function erasedText(m, r) {
  const parts = [`${plural(r.entries, 'score')} on ${plural(r.boards, 'board')}`, plural(r.records, 'remembered event id')];
  if (r.profile) parts.push('the profile');
  if (r.global_ban) parts.push('a ban from every board');
  return `${m} is erased: ${parts.join(', ')}.`;
}

// --- webhooks ---

// How many deliveries of each webhook the console shows.
const DELIVERIES = 5;

// refreshWebhooks lists the webhooks and each one's last deliveries. A
// token limited to some boards may not read them (403): the card stays
// hidden.
async function refreshWebhooks() {
  let hooks;
  try {
    ({ webhooks: hooks } = await api('GET', '/api/v1/webhooks'));
  } catch (e) {
    if (e.status === 403) {
      $('webhooks-card').hidden = true;
      return;
    }
    throw e;
  }
  const items = await Promise.all(hooks.map(async (w) => {
    let ds = [];
    try {
      ({ deliveries: ds } = await api('GET', `/api/v1/webhooks/${enc(w.id)}/deliveries`));
    } catch {
      // removed meanwhile: listed without deliveries until the next read
    }
    return webhookItem(w, ds.slice(0, DELIVERIES));
  }));
  $('webhooks').replaceChildren(...items);
  $('webhooks-empty').hidden = hooks.length > 0;
  $('webhooks-card').hidden = false;
}

function webhookItem(w, ds) {
  const head = el('div', { class: 'hook-head' },
    el('strong', {}, w.id), el('span', { class: 'hook-url' }, w.url),
    el('span', { class: 'muted' }, (w.events || []).join(', ')),
    el('span', { class: 'muted' }, w.boards ? 'boards: ' + w.boards.join(', ') : 'every board'));
  if (ds.length === 0) return el('li', { dataset: { webhook: w.id } }, head, el('p', { class: 'muted small' }, 'No deliveries yet.'));
  const rows = ds.map((d) => el('tr', { dataset: { delivery: d.id } },
    el('td', {}, d.event), el('td', {}, d.board || '—'),
    el('td', { class: 'status', dataset: { status: d.status } }, d.status),
    el('td', { class: 'n' }, num(d.attempts)),
    el('td', { class: 'error' }, d.last_error || ''),
    el('td', {}, d.next_attempt_at ? new Date(d.next_attempt_at).toLocaleTimeString() : '')));
  const table = el('table', { class: 'grid', 'aria-label': `Deliveries of ${w.id}` },
    el('thead', {}, el('tr', {}, ...['Event', 'Board', 'Status', 'Attempts', 'Last error', 'Next attempt'].map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, ...rows));
  return el('li', { dataset: { webhook: w.id } }, head, el('div', { class: 'scroll' }, table));
}

// --- wiring ---

function showBoard(id) {
  if (!validBoard(id)) return;
  current = id;
  editing = false;
  member = '';
  $('member').hidden = true;
  $('board-card').hidden = false;
  $('board-id').textContent = id;
  $('saved').textContent = '';
  clearErrors($('edit-form'));
  for (const tr of $('board-rows').children) tr.classList.toggle('selected', tr.dataset.board === id);
  lockFinal(false);
  api('GET', boardPath(id)).then((d) => {
    showConfig(d.board);
    lockFinal(d.state === 'final');
    showExportPeriods(d.board).catch(() => {});
  }, (e) => { $('edit-err').textContent = errorText(e); });
  $('export-err').textContent = '';
  $('export-done').textContent = '';
  refreshStandings().catch(() => {});
  refreshBans().catch(() => {});
  $('held-done').textContent = '';
  refreshHeld().catch((e) => { $('held-err').textContent = errorText(e); });
}

/**
 * Runs f now and every REFRESH_MS after it settles. The board list's
 * outcome is the badge: it is the one read that always happens.
 */
function every(f, showsInBadge) {
  const loop = async () => {
    try {
      await f();
      if (showsInBadge) badge('open', 'connected');
    } catch (e) {
      if (showsInBadge) badge('closed', e.code === 'unreachable' ? 'gateway unreachable' : e.code || 'error');
      if (e.code === 'unauthorized' || e.code === 'token_expired') notice(errorText(e) + ' — open the console again with a fresh admin token.', false);
    }
    setTimeout(loop, REFRESH_MS);
  };
  loop();
}

async function start() {
  token = fragmentToken();
  if (token) { // read once: kept out of the address bar and this tab's history
    const f = fragment();
    f.delete('token');
    history.replaceState(null, '', location.pathname + location.search + (f.toString() ? '#' + f : ''));
  }
  if (!token && dev) {
    try {
      token = await devToken('console', 'admin');
      notice('Using a --dev admin token. On a production gateway, open /admin#token=<admin JWT>.');
    } catch {
      token = '';
    }
  }
  if (!token) {
    $('conn').dataset.state = 'notoken';
    notice('The console needs an admin token: add #token=<admin JWT> to the address (the fragment never leaves this browser). ' +
      'Mint one with `wsgateway token --sub <you> --role admin`, run with the gateway\'s LB_JWT_SECRET.');
    return;
  }
  const role = claims(token).role;
  if (role && role !== 'admin') {
    notice(`This token's role is ${role}: the console reads, but only an admin token may change boards and members.`, false);
  }
  buildForm();
  $('boards-card').hidden = false;
  $('create-form').addEventListener('submit', createBoard);
  $('edit-form').addEventListener('submit', saveConfig);
  $('find-form').addEventListener('submit', findMember);
  $('profile-form').addEventListener('submit', saveProfile);
  $('ban-form').addEventListener('submit', ban);
  $('lift').addEventListener('click', () => lift());
  $('remove-form').addEventListener('submit', removeEntry);
  $('erase-form').addEventListener('submit', erase);
  $('export-ndjson').addEventListener('click', () => download('ndjson'));
  $('export-csv').addEventListener('click', () => download('csv'));
  const b = fragment().get('board');
  if (b) showBoard(b);
  every(refreshBoards, true);
  every(refreshStandings, false);
  every(refreshHeld, false);
  every(refreshWebhooks, false);
  setInterval(tickStates, 1000);
}

start();
