// The overlay (/overlay?board=b, or /?board=b&overlay=1): the board's live
// top rows for a stream scene or an iframe, its title, state and countdown,
// and the final standings when a period or the board ends. Options and theme
// come from the URL (docs/overlay.md).
import { LBClient } from '/lb-client.js';
import { RankTable } from './board.js';
import {
  BoardStatus, boardConfig, boardParam, closeWhileCached, cohortName, cohortParam, regionParam, lifecycle, randomTag, tokenSource, useBoardDecimals, viewersText,
} from './common.js';

const $ = (id) => document.getElementById(id);
const q = new URLSearchParams(location.search);
const board = boardParam();
const cohort = board ? cohortParam() : ''; // one cohort's standings (§12, docs/leagues.md)
const region = board && !cohort ? regionParam() : ''; // one region's standings (§17, docs/regions.md)
const rows = clampInt(q.get('rows'), 1, 25, 10);
const cols = new Set((q.get('cols') ?? 'avatar,flag').split(',').map((s) => s.trim()));
const holdMS = clampInt(q.get('hold'), 0, 3600, 10) * 1000;
const motion = q.get('motion') !== '0';
const viewers = q.get('viewers') === '1'; // a line with the viewer count, off unless asked for

function clampInt(v, min, max, def) {
  const n = parseInt(v, 10);
  return Number.isFinite(n) ? Math.min(max, Math.max(min, n)) : def;
}

// CSS named colours (CSS Color 4), lower case, and transparent.
const NAMED_COLORS = new Set(('aliceblue antiquewhite aqua aquamarine azure beige bisque black blanchedalmond blue ' +
  'blueviolet brown burlywood cadetblue chartreuse chocolate coral cornflowerblue cornsilk crimson cyan darkblue ' +
  'darkcyan darkgoldenrod darkgray darkgreen darkgrey darkkhaki darkmagenta darkolivegreen darkorange darkorchid ' +
  'darkred darksalmon darkseagreen darkslateblue darkslategray darkslategrey darkturquoise darkviolet deeppink ' +
  'deepskyblue dimgray dimgrey dodgerblue firebrick floralwhite forestgreen fuchsia gainsboro ghostwhite gold ' +
  'goldenrod gray green greenyellow grey honeydew hotpink indianred indigo ivory khaki lavender lavenderblush ' +
  'lawngreen lemonchiffon lightblue lightcoral lightcyan lightgoldenrodyellow lightgray lightgreen lightgrey ' +
  'lightpink lightsalmon lightseagreen lightskyblue lightslategray lightslategrey lightsteelblue lightyellow lime ' +
  'limegreen linen magenta maroon mediumaquamarine mediumblue mediumorchid mediumpurple mediumseagreen ' +
  'mediumslateblue mediumspringgreen mediumturquoise mediumvioletred midnightblue mintcream mistyrose moccasin ' +
  'navajowhite navy oldlace olive olivedrab orange orangered orchid palegoldenrod palegreen paleturquoise ' +
  'palevioletred papayawhip peachpuff peru pink plum powderblue purple rebeccapurple red rosybrown royalblue ' +
  'saddlebrown salmon sandybrown seagreen seashell sienna silver skyblue slateblue slategray slategrey snow ' +
  'springgreen steelblue tan teal thistle tomato turquoise violet wheat white whitesmoke yellow yellowgreen ' +
  'transparent').split(' '));

/**
 * A theme colour from a URL parameter: hex (#rgb, #rrggbb, #rrggbbaa, with
 * or without the #, as in "?accent=ff0") or a CSS named colour; '' for
 * anything else, which the overlay ignores.
 */
function themeColor(v) {
  if (typeof v !== 'string') return '';
  const hex = /^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/.exec(v);
  if (hex) return '#' + hex[1].toLowerCase();
  const name = v.toLowerCase();
  return NAMED_COLORS.has(name) ? name : '';
}

// theme maps URL parameters to the --ov-* variables, set through the CSSOM
// (the CSP forbids a style attribute). A colour parameter must be a colour
// and nothing else: CSS.supports accepts any value holding var(), which let
// `bg=var(--x,) url(…)` load an image from anywhere.
const theme = {
  bg: '--ov-bg',
  fg: '--ov-fg',
  muted: '--ov-muted',
  accent: '--ov-accent',
  row: '--ov-row',
  me: '--ov-row-me',
  up: '--ov-up',
  down: '--ov-down',
};
const root = document.documentElement.style;
for (const [param, prop] of Object.entries(theme)) {
  const v = themeColor(q.get(param));
  if (v) root.setProperty(prop, v);
}
const radius = /^(\d{1,3})(px)?$/.exec(q.get('radius') || '');
if (radius) root.setProperty('--ov-radius', Math.min(200, Number(radius[1])) + 'px');
const font = q.get('font') || '';
// Family names only: letters, digits, spaces, hyphens and commas (no quotes,
// no functions), so a font parameter can name a font and do nothing else.
if (/^[A-Za-z0-9 ,-]{1,100}$/.test(font)) root.setProperty('--ov-font', font + ', var(--font)');
const scale = parseFloat(q.get('scale'));
if (scale >= 0.25 && scale <= 4) root.setProperty('--ov-scale', String(scale));
// Opened in a plain browser tab (not an OBS browser source, which defines
// window.obsstudio, nor a frame), the transparent overlay would be white on
// white: it is previewed over a dark checkerboard instead. ?preview=0 or a
// bg colour turns that off.
if (!window.obsstudio && window.parent === window && !themeColor(q.get('bg')) && q.get('preview') !== '0') {
  document.documentElement.classList.add('preview');
}

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

// titled is a title with the cohort's or region's name after it.
function titled(t) {
  if (region) return `${t} · ${region}`;
  return cohort ? `${t} · ${cohortName(cohort)}` : t;
}

async function start() {
  $('title').textContent = q.get('title') || titled(board);
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
    if ((f.cohort || '') !== cohort || (f.region || '') !== region) return;
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
  // The count comes from the GET at load, then from the board frames that
  // carry one (docs/protocol.md §14), which are newer.
  let viewersFramed = false;
  const showViewers = (n) => {
    const text = viewers ? viewersText(n) : '';
    $('viewers').textContent = text;
    $('viewers').hidden = !text;
  };
  lb.on('board', (f) => {
    if (f.viewers !== undefined) {
      viewersFramed = true;
      showViewers(f.viewers);
    }
    if (f.state === 'final') {
      holdUntil = Infinity;
      clearTimeout(holdTimer);
      $('final-banner').hidden = false;
      $('final-text').textContent = 'Final standings';
    }
    if (f.state === 'deleted') {
      table.update([]);
      $('empty').hidden = true;
      showViewers(0); // its subscriptions are gone with it
    }
  });

  function tick() {
    const { text } = lifecycle(lb.boards.get(board), cfg?.board, lb.serverNow());
    const ok = !['forbidden', 'unknown', 'absent', 'deleted', 'notoken'].includes(status?.state);
    $('clock').textContent = ok && status?.state !== 'final' ? text : '';
  }
  setInterval(tick, 250);

  lb.subscribe(board, cohort ? { top: rows, cohort } : region ? { top: rows, region } : { top: rows }).catch((err) => {
    if (!status.fail(err)) notice(`${err.code}: ${err.message}`);
  });
  lb.connect();
  closeWhileCached(lb);
  cfg = await boardConfig(board, await tokens({}).catch(() => ''));
  if (cfg?.absent) status.markAbsent();
  if (cfg?.viewers !== undefined && !viewersFramed) showViewers(cfg.viewers);
  if (useBoardDecimals(cfg?.board)) table.rescore();
  if (cfg?.board?.title && !q.get('title')) {
    $('title').textContent = titled(cfg.board.title);
    document.title = cfg.board.title + ' · Overlay';
  }
  tick();
}
