// Minute Rush: an example game on the gateway. Targets appear on a canvas;
// each hit is a score event sent through lb-client.js (kept and re-sent with
// the same id until acknowledged) to a board that resets every minute; the
// overlay beside the field shows the board live.
import { LBClient, ERROR_TEXT } from '/lb-client.js';

const $ = (id) => document.getElementById(id);
const board = new URLSearchParams(location.search).get('board') || 'minute';
const ROUND_MS = 60_000;
const canvas = $('field');
const ctx = canvas.getContext('2d');
const reduce = matchMedia('(prefers-reduced-motion: reduce)').matches;

$('overlay').src = '/overlay?' + new URLSearchParams({ board, rows: '8', cols: 'avatar,flag,delta', bg: '121926', scale: '0.7' });
// A suggested name is a placeholder, not a value: what the player types
// replaces it instead of being appended to it.
$('name').placeholder = 'Player ' + Math.floor(Math.random() * 900 + 100);
$('name').value = storedName();

function storedName() {
  try {
    return localStorage.getItem('lb.game.name') || '';
  } catch {
    return ''; // storage disabled
  }
}

let lb = null;
let me = '';
let score = 0;
let roundEnd = 0;
let target = null; // {x, y, r, born}
let resetMS = 0; // the board's reset period when it is a duration ("1m"), else 0

function memberID(name) {
  const s = name.normalize('NFKD').replace(/[^A-Za-z0-9_.:@-]+/g, '-').replace(/^-+|-+$/g, '').toLowerCase().slice(0, 48);
  return (s || 'player') + '-' + Math.random().toString(36).slice(2, 6);
}

async function token(name) {
  const r = await fetch('/api/v1/dev/token', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ sub: me, role: 'player', name }),
  });
  if (!r.ok) throw new Error('dev token: HTTP ' + r.status + ' (run the gateway with --dev)');
  return (await r.json()).token;
}

function connect(name) {
  me = memberID(name);
  let cached = '';
  lb = new LBClient({
    token: async (info) => {
      if (!cached || info.refresh || !info.welcomed) cached = await token(name);
      return cached;
    },
  });
  const badge = $('conn');
  lb.on('status', (s) => {
    badge.dataset.status = s;
    badge.querySelector('.text').textContent = s === 'open' ? 'live' : s;
  });
  lb.connect();
  fetchReset();
}

// The round follows the board's period when the board resets by a duration,
// so a round's scores land in one period; otherwise it is one local minute.
async function fetchReset() {
  try {
    const t = await token($('name').value.trim() || $('name').placeholder);
    const r = await fetch('/api/v1/boards/' + encodeURIComponent(board), { headers: { Authorization: 'Bearer ' + t } });
    const j = r.ok ? await r.json() : null;
    const m = /^(\d+)([smh])$/.exec(j?.board?.reset || '');
    resetMS = m ? Number(m[1]) * { s: 1e3, m: 60e3, h: 3600e3 }[m[2]] : 0;
    if (j?.board?.title) $('title').textContent = j.board.title;
  } catch {
    resetMS = 0;
  }
}

function newTarget() {
  const r = Math.max(18, canvas.width / 22);
  target = {
    x: r + Math.random() * (canvas.width - 2 * r),
    y: r + Math.random() * (canvas.height - 2 * r),
    r,
    born: performance.now(),
  };
  // The target's place in CSS pixels, for tests and assistive tooling.
  const k = canvas.clientWidth / canvas.width;
  canvas.dataset.target = `${Math.round(target.x * k)},${Math.round(target.y * k)}`;
}

function start(ev) {
  ev.preventDefault();
  const name = ($('name').value.trim() || $('name').placeholder).slice(0, 32);
  try {
    localStorage.setItem('lb.game.name', name);
  } catch {
    // storage disabled
  }
  if (!lb) connect(name);
  $('name').disabled = true;
  score = 0;
  $('score').textContent = '0';
  const now = Date.now();
  const skew = lb.serverNow() - now;
  roundEnd = resetMS ? Math.floor((now + skew) / resetMS) * resetMS + resetMS - skew : now + ROUND_MS;
  if (roundEnd - now < 10_000 && resetMS) roundEnd += resetMS; // too little left: play the next period too
  $('start').disabled = true;
  $('status').textContent = 'Go!';
  newTarget();
  canvas.focus();
}

function hit(px, py) {
  if (!target || Date.now() > roundEnd) return;
  const rect = canvas.getBoundingClientRect();
  const x = ((px - rect.left) / rect.width) * canvas.width;
  const y = ((py - rect.top) / rect.height) * canvas.height;
  if (Math.hypot(x - target.x, y - target.y) > target.r * 1.15) return;
  // Faster hits are worth more: 10 to 30 points.
  const age = performance.now() - target.born;
  const points = 10 + Math.max(0, Math.round(20 - age / 50));
  score += points;
  $('score').textContent = String(score);
  newTarget();
  lb.score(board, { delta: points }).then(
    (ack) => {
      $('rank').textContent = '#' + ack.rank;
    },
    (err) => {
      const said = err.message && err.message !== ERROR_TEXT[err.code] ? ` (${err.message})` : '';
      $('status').textContent = 'Not counted: ' + (ERROR_TEXT[err.code] || err.code) + said;
    },
  );
}

canvas.addEventListener('pointerdown', (ev) => hit(ev.clientX, ev.clientY));
$('start-form').addEventListener('submit', start);

function draw() {
  const now = Date.now();
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  if (roundEnd) {
    const left = roundEnd - now;
    $('time').textContent = left > 0 ? Math.ceil(left / 1000) + ' s' : '0 s';
    if (left <= 0 && target) {
      target = null;
      delete canvas.dataset.target;
      $('start').disabled = false;
      $('name').disabled = false;
      $('status').textContent = `Round over: ${score} points. Start again for the next round.`;
    }
  }
  if (target) {
    const pulse = reduce ? 1 : 1 + 0.08 * Math.sin(performance.now() / 120);
    const g = ctx.createRadialGradient(target.x, target.y, 2, target.x, target.y, target.r * pulse);
    g.addColorStop(0, '#fff');
    g.addColorStop(0.35, '#5cc8ff');
    g.addColorStop(1, 'rgba(92, 200, 255, 0)');
    ctx.fillStyle = g;
    ctx.beginPath();
    ctx.arc(target.x, target.y, target.r * pulse, 0, Math.PI * 2);
    ctx.fill();
  } else {
    ctx.fillStyle = '#a9b5c9';
    ctx.font = '24px system-ui, sans-serif';
    ctx.textAlign = 'center';
    ctx.fillText(roundEnd ? 'Press "Start round"' : 'Enter your name and press "Start round"', canvas.width / 2, canvas.height / 2);
  }
  requestAnimationFrame(draw);
}
requestAnimationFrame(draw);
