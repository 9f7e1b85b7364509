// The spectator page: a board picker without ?board=, else the board's live
// top-N, its member and viewer counts, the connection status and a followed
// member's view.
import { LBClient } from '/lb-client.js';
import { RankTable } from './board.js';
import {
  BoardStatus, NO_TOKEN_HINT, closeWhileCached, cohortName, cohortParam, errorText, setBig, ago, boardConfig, boardParam, dev, el, fragmentToken, lifecycle, link, listBoards, num, scoreText,
  useBoardDecimals, randomTag, tokenRole, tokenSource, validBoard, viewersText,
} from './common.js';

const $ = (id) => document.getElementById(id);
const board = boardParam();
// One cohort of a cohort board (§12): its standings instead of the board's.
const cohort = board ? cohortParam() : '';
const topN = Math.min(100, Math.max(1, parseInt(new URLSearchParams(location.search).get('top'), 10) || 10));
const tokens = tokenSource({ sub: 'spectator-' + randomTag(6), role: 'spectator', name: 'Spectator' });

function notice(text, info = true) {
  const n = $('notice');
  n.textContent = text || '';
  n.hidden = !text;
  n.classList.toggle('info', info);
}

if (!dev && !fragmentToken()) {
  notice(NO_TOKEN_HINT);
}

if (board) showBoard(board);
else showPicker();

// How many boards of the picker get their member count and state (one GET
// each), and the words for the states.
const PICKER_DETAILS = 48;
const PICKER_STATES = { scheduled: 'not started', open: 'live', closing: 'closing', final: 'final' };

async function showPicker() {
  $('picker').hidden = false;
  $('conn').hidden = true; // nothing is connected on the picker
  $('play-link').hidden = true;
  $('play-sep').hidden = true;
  $('overlay-link').hidden = true;
  $('overlay-sep').hidden = true;
  $('open-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const b = $('open-input').value.trim();
    if (validBoard(b)) location.assign(link('/', { board: b }));
  });
  $('open-input').focus();
  if (!dev && !fragmentToken()) return;
  try {
    const token = await tokens({});
    const boards = await listBoards(token);
    const ul = $('boards');
    for (const b of boards) {
      const meta = el('span', { class: 'meta' }, b.title && b.title !== b.id ? b.id : '');
      const state = el('span', { class: 'state' });
      ul.append(el('li', {},
        el('a', { href: link('/', { board: b.id }), dataset: { board: b.id } },
          el('span', { class: 'title' }, b.title || b.id), meta, state)));
      b.meta = meta;
      b.stateNode = state;
    }
    $('boards-empty').hidden = boards.length > 0;
    // The list carries configs only; member counts and states come from
    // each board's GET, a few at a time, for the first boards shown.
    const queue = boards.slice(0, PICKER_DETAILS);
    const worker = async () => {
      for (let b = queue.shift(); b; b = queue.shift()) {
        const c = await boardConfig(b.id, token);
        if (!c?.board) continue;
        const sep = b.meta.textContent ? ' · ' : '';
        if (typeof c.members === 'number') b.meta.append(`${sep}${num(c.members)} ${c.members === 1 ? 'member' : 'members'}`);
        if (c.state) {
          b.stateNode.textContent = PICKER_STATES[c.state] || c.state;
          b.stateNode.dataset.state = c.state;
        }
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
  } catch (err) {
    $('boards-empty').hidden = false;
    $('boards-empty').textContent = 'Could not list the boards (' + err.message + '). Open one by id above.';
  }
}

function showBoard(id) {
  $('board').hidden = false;
  $('title').textContent = id;
  document.title = id + ' · Leaderboard';
  // The player page scores with the token it is given: only a player's
  // goes along, since a spectator's (or a server's) would be refused there.
  const own = fragmentToken();
  $('play-link').href = own && tokenRole(own) !== 'player' ? '/play?' + new URLSearchParams({ board: id }) : link('/play', { board: id });
  $('overlay-link').href = link('/overlay', cohort ? { board: id, cohort } : { board: id });
  if (cohort) {
    $('cohort').textContent = cohortName(cohort);
    $('cohort').hidden = false;
    $('top-h').textContent = cohortName(cohort);
    $('total-label').textContent = 'In this group';
  }
  $('all-boards').href = link('/', {});
  const debug = new URLSearchParams(location.search).get('debug') === '1';
  $('ops').hidden = !debug;

  const lb = new LBClient({ token: tokens });
  let cfg = null;
  // Assigned before any frame can arrive; the constructor's first render
  // already calls onChange, hence the null checks in tick.
  let status = null;
  status = new BoardStatus(lb, $('conn'), {
    notice: (text) => notice(text, false),
    onChange: () => tick(),
  });
  let followed = new URLSearchParams(location.search).get('follow') || '';
  let viewersFramed = false; // a board frame has told the viewers: newer than any GET

  const table = new RankTable($('rows'), { onPick: (m) => follow(m), replay: true });
  const viewTable = new RankTable($('view-rows'));
  const lastTable = new RankTable($('last-rows'), { onPick: (m) => follow(m) });

  lb.on('welcome', (w) => {
    $('node').textContent = w.node || '—';
  });
  lb.on('error', (err) => {
    if (err.code !== 'token_failed') notice(errorText(err), false);
  });

  const showAge = () => {
    $('age').textContent = ago(lb.lastFrameAt);
  };
  lb.on('top', (f) => {
    showAge();
    if ((f.cohort || '') !== cohort) return; // a frame of the subscription this one replaced
    if (f.final) {
      showLast(f);
      if (lb.boards.get(id)?.state !== 'final') return; // the live table moves on to the next period
    }
    if (cfg?.absent && f.entries.length > 0) {
      cfg = null; // created by its first score since: load its config once
      loadConfig();
    }
    table.update(f.entries);
    $('total').textContent = num(f.total);
    $('empty').hidden = f.entries.length > 0;
    const dl = $('members');
    dl.replaceChildren(...f.entries.map((e) => el('option', { value: e.member }, e.name || e.member)));
  });
  lb.on('board', (f) => {
    showAge();
    // Only some board frames carry viewers (docs/protocol.md §14): the
    // others leave the last count shown.
    if (f.viewers !== undefined) {
      viewersFramed = true;
      showViewers(f.viewers);
    }
    if (f.state === 'final') $('last').hidden = true;
    if (f.state === 'deleted') {
      table.update([]);
      $('empty').hidden = true;
      showViewers(0); // its subscriptions are gone with it
    }
    tick();
  });

  // showViewers writes the count near the board's state, hidden when unknown.
  function showViewers(n) {
    const text = viewersText(n);
    $('viewers').textContent = text;
    $('viewers').hidden = !text;
  }

  // showLast shows a past period's final standings under the live table;
  // on a final board the live table holds them already.
  function showLast(f) {
    lastTable.update(f.entries);
    $('last').hidden = f.entries.length === 0 || lb.boards.get(id)?.state === 'final';
    $('last-h').textContent = f.period !== undefined && lb.boards.get(id)?.state !== 'final'
      ? 'Last period · final' : 'Final standings';
  }

  // tick refreshes the period line and the countdown (server time).
  function tick() {
    const frame = lb.boards.get(id);
    const { state, text } = lifecycle(frame, cfg?.board, lb.serverNow());
    const shown = !['forbidden', 'unknown', 'absent', 'deleted', 'notoken'].includes(status?.state);
    $('countdown').textContent = shown && state !== 'final' ? text : '';
    $('final-banner').hidden = !(shown && state === 'final');
    const period = frame?.period;
    const reset = cfg?.board?.reset;
    $('period').textContent = reset && reset !== 'none'
      ? `Resets ${reset === '1m' ? 'every minute' : reset.match(/^\d/) ? 'every ' + reset : reset}${period !== undefined ? ` · period ${period}` : ''}`
      : '';
  }

  lb.on('view', (f) => {
    if (f.member !== followed) return;
    $('view').hidden = false;
    $('view-hint').hidden = true;
    setBig($('view-rank'), f.rank ? '#' + num(f.rank) : '—');
    setBig($('view-score'), scoreText(f.score));
    const own = f.around.find((e) => e.member === f.member);
    $('view-who').textContent = f.rank
      ? `${own?.name || f.member} and the members around them`
      : `${f.member} is not on this board yet`;
    viewTable.setFollowed(f.member);
    viewTable.update(f.around);
  });

  function subscribe() {
    // meta: true brings each entry's meta, for the replay links (§11).
    const opts = followed ? { top: topN, around: 3, member: followed, meta: true } : { top: topN, meta: true };
    if (cohort) opts.cohort = cohort;
    lb.subscribe(id, opts).catch((err) => {
      if (!status.fail(err)) notice(errorText(err), false);
    });
  }

  function follow(member) {
    followed = member || '';
    table.setFollowed(followed);
    const q = new URLSearchParams(location.search);
    if (followed) q.set('follow', followed);
    else q.delete('follow');
    history.replaceState(null, '', '?' + q.toString() + location.hash);
    $('view').hidden = true;
    $('view-hint').hidden = !!followed;
    $('view-rows').replaceChildren();
    viewTable.rows.clear();
    if (followed) $('follow-input').value = followed;
    subscribe();
  }

  $('follow-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const m = $('follow-input').value.trim();
    if (m) follow(m);
  });
  $('unfollow').addEventListener('click', () => {
    follow('');
    $('follow-input').focus();
  });

  table.setFollowed(followed);
  if (followed) $('follow-input').value = followed;
  subscribe();
  lb.connect();
  closeWhileCached(lb);
  setInterval(() => {
    showAge();
    tick();
  }, 250);
  loadConfig();

  // The title, reset and the last period's final standings (retain) come
  // from the board's config and a read of the previous period.
  async function loadConfig() {
    cfg = await boardConfig(id, await tokens({}).catch(() => ''));
    if (cfg?.absent) status.markAbsent();
    // The GET's count holds until a board frame brings a newer one.
    if (cfg?.viewers !== undefined && !viewersFramed) showViewers(cfg.viewers);
    const b = cfg?.board;
    if (useBoardDecimals(b)) for (const t of [table, viewTable, lastTable]) t.rescore();
    if (!b) return;
    if (b.title) {
      $('title').textContent = b.title;
      document.title = b.title + ' · Leaderboard';
    }
    tick();
    // A cohort id names another group each period: a cohort's page shows
    // no previous period.
    if (b.reset && b.reset !== 'none' && !lb.finals.has(id) && !cohort) {
      lb.page(id, { period: 'previous', limit: Math.min(10, topN) }).then(
        (p) => {
          if (!lb.finals.has(id) && p.entries.length) showLast({ entries: p.entries, period: 'previous' });
        },
        () => {}, // no previous period yet: nothing to show
      );
    }
  }
}
