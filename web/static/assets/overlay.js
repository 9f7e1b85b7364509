// The overlay (/overlay?board=b, or /?board=b&overlay=1): the board's live
// top rows for a stream scene or an iframe, its title, state and countdown,
// and the final standings when a period or the board ends. Options and theme
// come from the URL (docs/overlay.md).
import { LBClient } from '/lb-client.js';
import { RankTable } from './board.js';
import { BoardStatus, boardConfig, boardParam, lifecycle, randomTag, tokenSource, useBoardDecimals } from './common.js';

const $ = (id) => document.getElementById(id);
const q = new URLSearchParams(location.search);
const board = boardParam();
const rows = clampInt(q.get('rows'), 1, 25, 10);
const cols = new Set((q.get('cols') ?? 'avatar,flag').split(',').map((s) => s.trim()));
const holdMS = clampInt(q.get('hold'), 0, 3600, 10) * 1000;
const motion = q.get('motion') !== '0';

function clampInt(v, min, max, def) {
  const n = parseInt(v, 10);
  return Number.isFinite(n) ? Math.min(max, Math.max(min, n)) : def;
}

// theme maps URL parameters to the --ov-* variables. Values are checked with
// CSS.supports and set through the CSSOM, which the CSP allows (a style
// attribute would not be).
const theme = {
  bg: ['--ov-bg', 'color'],
  fg: ['--ov-fg', 'color'],
  muted: ['--ov-muted', 'color'],
  accent: ['--ov-accent', 'color'],
  row: ['--ov-row', 'color'],
  me: ['--ov-row-me', 'color'],
  up: ['--ov-up', 'color'],
  down: ['--ov-down', 'color'],
  radius: ['--ov-radius', 'border-radius'],
  font: ['--ov-font', 'font-family'],
};
const root = document.documentElement.style;
for (const [param, [prop, kind]] of Object.entries(theme)) {
  let v = q.get(param);
  if (!v) continue;
  if (kind === 'color' && /^[0-9a-fA-F]{3,8}$/.test(v)) v = '#' + v; // "?accent=ff0" reads better in a URL
  if (CSS.supports(kind, v)) root.setProperty(prop, v);
}
const scale = parseFloat(q.get('scale'));
if (scale >= 0.25 && scale <= 4) root.setProperty('--ov-scale', String(scale));

function notice(text) {
  $('notice').textContent = text || '';
  $('notice').hidden = !text;
}

// post tells an embedding page what is shown (board, state, rows), so it can
// size the frame or react to the end; it carries no names or scores.
function post(state) {
  if (window.parent === window) return;
  window.parent.postMessage({ type: 'lb-overlay', board, state, rows: $('rows').children.length }, '*');
}

if (!board) {
  notice('Add ?board=<id> to the address.');
} else {
  start();
}

async function start() {
  $('title').textContent = q.get('title') || board;
  document.title = board + ' · Overlay';
  const tokens = tokenSource({ sub: 'overlay-' + randomTag(6), role: 'spectator', name: 'Overlay' });
  const lb = new LBClient({ token: tokens });
  const table = new RankTable($('rows'), {
    avatar: cols.has('avatar'), flag: cols.has('flag'), delta: cols.has('delta'), motion,
  });
  let cfg = null;
  // Assigned before any frame can arrive; the constructor's first render
  // already calls onChange, hence the null checks in tick.
  let status = null;
  status = new BoardStatus(lb, $('conn'), {
    notice: (text) => notice(text),
    onChange: (key) => {
      tick();
      post(key);
    },
  });

  // A final frame is held on screen: for good when the board is final, for
  // `hold` seconds when only a period ended (live frames of the next period
  // wait behind it).
  let holdUntil = 0;
  let pending = null;
  let holdTimer = 0;
  const show = (f) => {
    table.update(f.entries.slice(0, rows));
    $('empty').hidden = f.entries.length > 0;
    post(status?.state);
  };
  lb.on('top', (f) => {
    if (f.final) {
      const ended = lb.boards.get(board)?.state === 'final';
      $('final-text').textContent = ended || f.period === undefined ? 'Final standings' : 'Round over · final standings';
      $('final-banner').hidden = false;
      document.body.dataset.final = 'true';
      show(f);
      holdUntil = ended ? Infinity : Date.now() + holdMS;
      clearTimeout(holdTimer);
      if (holdUntil !== Infinity) holdTimer = setTimeout(release, holdMS);
      return;
    }
    if (Date.now() < holdUntil) {
      pending = f;
      return;
    }
    show(f);
  });
  function release() {
    if (lb.boards.get(board)?.state === 'final') return;
    holdUntil = 0;
    $('final-banner').hidden = true;
    delete document.body.dataset.final;
    if (pending) show(pending);
    pending = null;
  }
  lb.on('board', (f) => {
    if (f.state === 'final') {
      holdUntil = Infinity;
      clearTimeout(holdTimer);
      $('final-banner').hidden = false;
      $('final-text').textContent = 'Final standings';
    }
    if (f.state === 'deleted') {
      table.update([]);
      $('empty').hidden = true;
    }
  });

  function tick() {
    const { text } = lifecycle(lb.boards.get(board), cfg?.board, lb.serverNow());
    const ok = status?.state !== 'forbidden' && status?.state !== 'unknown' && status?.state !== 'deleted';
    $('clock').textContent = ok && status?.state !== 'final' ? text : '';
  }
  setInterval(tick, 250);

  lb.subscribe(board, { top: rows }).catch((err) => {
    if (!status.fail(err)) notice(`${err.code}: ${err.message}`);
  });
  lb.connect();
  cfg = await boardConfig(board, await tokens({}).catch(() => ''));
  if (useBoardDecimals(cfg?.board)) table.rescore();
  if (cfg?.board?.title && !q.get('title')) {
    $('title').textContent = cfg.board.title;
    document.title = cfg.board.title + ' · Overlay';
  }
  tick();
}
