// The player page: choose a name (dev token) or bring a token (#token=…),
// score with buttons, see the ack's rank, the live view around you, the top
// 10, and a notice when someone overtakes you. On a cohort board the top
// 10 gives way to "Your group", the standings of your cohort, and your
// league tier (docs/leagues.md).
import { LBClient, tierOf } from '/lb-client.js';
import { RankTable } from './board.js';
import {
  BoardStatus, NO_TOKEN_HINT, closeWhileCached, errorText, setBig, boardConfig, boardParam, dev, el, fragmentToken, lifecycle, link, num, randomTag, scoreText, useBoardDecimals, tokenSource,
  validBoard,
} from './common.js';

const $ = (id) => document.getElementById(id);
const NAME_KEY = 'lb.play.name'; // only the display name is remembered, never a token

function notice(text, info = true) {
  const n = $('notice');
  n.textContent = text || '';
  n.hidden = !text;
  n.classList.toggle('info', info);
}

/** A member id from a display name: [A-Za-z0-9_.:@-]{1,64}. */
function memberID(name) {
  const s = name
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9_.:@-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .toLowerCase()
    .slice(0, 64);
  return s || 'player-' + randomTag(6);
}

function rememberedName() {
  try {
    return localStorage.getItem(NAME_KEY) || '';
  } catch {
    return '';
  }
}

const board = boardParam();
if (!dev && !fragmentToken()) {
  notice(NO_TOKEN_HINT.replace('needs a token', 'needs a player token'));
}
// A token in the fragment says who plays, under --dev too (it wins over
// the dev endpoint): no name to ask for.
if (board && fragmentToken()) {
  start(board, '');
} else {
  showJoin();
}

function showJoin() {
  $('join').hidden = false;
  $('name-field').hidden = !dev;
  $('name-input').required = dev;
  $('name-input').value = rememberedName();
  if (board) $('board-input').value = board;
  (dev ? $('name-input') : $('board-input')).focus();
  $('join-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const b = $('board-input').value.trim();
    const name = $('name-input').value.trim().slice(0, 32);
    if (!validBoard(b) || (dev && !name)) return;
    try {
      if (dev) localStorage.setItem(NAME_KEY, name);
    } catch {
      // storage disabled: nothing to remember
    }
    history.replaceState(null, '', link('/play', { board: b }));
    $('join').hidden = true;
    start(b, name);
  });
}

function start(id, name) {
  $('game').hidden = false;
  $('title').textContent = id;
  document.title = id + ' · Play';
  $('watch-link').href = link('/', { board: id });
  let me = dev && !fragmentToken() ? memberID(name) : '';
  $('you-name').textContent = name || '…';

  const tokens = tokenSource({ sub: me, role: 'player', name });
  const lb = new LBClient({ token: tokens });
  let cfg = null;
  // Assigned before any frame can arrive; the constructor's first render
  // already calls onChange, hence the null checks in tick.
  let status = null;
  status = new BoardStatus(lb, $('conn'), {
    notice: (text) => notice(text, false),
    onChange: () => tick(),
  });
  const top = new RankTable($('top-rows'), { me });
  const around = new RankTable($('around-rows'), { me });

  lb.on('welcome', (w) => {
    if (!me) {
      // A token from the fragment: the member is whatever its sub says.
      me = w.member;
      top.me = around.me = me;
      $('you-name').textContent = me;
      loadGroup();
    }
  });
  lb.on('error', (err) => {
    if (err.code !== 'token_failed') notice(errorText(err), false);
  });
  let total = 0;
  lb.on('top', (f) => {
    if ((f.cohort || '') !== group) return; // a frame of the subscription this one replaced
    total = f.total;
    top.update(f.entries);
    $('top-empty').hidden = f.entries.length > 0;
    showPercentile();
  });

  // Attempts left (max_submissions, v1.1): counted from this page's acks in
  // the current period, and set to none by a limit_reached answer.
  let used = 0;
  let limitHit = false;
  let period;
  lb.on('board', (f) => {
    if (f.period !== period) {
      // A new period: a new group (formed at the first score) and, on a
      // league, maybe a new tier.
      if (period !== undefined) loadGroup();
      period = f.period;
      used = 0;
      limitHit = false;
    }
    tick();
  });

  // Your group (§12): the cohort's standings replace the top 10 once the
  // member is in one (an ack or a member read says which), and the league
  // tier shows above them.
  let group = '';
  // acked counts the acks that named a group: a member read sent before
  // one of them is older news than it, and is dropped.
  let acked = 0;
  function showGroup(cohort, tier) {
    const t = $('group-tier');
    t.textContent = tier ? `${tier} tier` : ''; // text, never markup
    t.hidden = !tier;
    if (cohort === group) return;
    group = cohort;
    top.update([]);
    $('top-empty').hidden = false;
    $('top-h').textContent = group ? `Your group · ${group}` : 'Top 10';
    subscribe();
  }
  // loadGroup reads the member's cohort and tier on a cohort board.
  async function loadGroup() {
    if (!cfg?.board?.cohort || !me) return;
    const seen = acked;
    try {
      const token = await tokens({});
      const r = await fetch(`/api/v1/boards/${encodeURIComponent(id)}/members/${encodeURIComponent(me)}?around=0`, {
        headers: { Authorization: 'Bearer ' + token },
        cache: 'no-store',
      });
      if (!r.ok) return;
      const j = await r.json();
      if (seen === acked) showGroup(j.cohort || '', j.tier || '');
    } catch {
      // the next ack says it too
    }
  }
  function subscribe() {
    // A group's standings: the whole cohort up to 100 rows.
    const opts = group ? { top: Math.min(100, cfg?.board?.cohort?.size || 10), around: 3, cohort: group } : { top: 10, around: 3 };
    lb.subscribe(id, opts).catch((err) => {
      if (!status.fail(err)) notice(errorText(err), false);
    });
  }
  function showAttempts() {
    const max = cfg?.board?.max_submissions;
    const box = $('attempts');
    box.hidden = !(max > 0);
    if (box.hidden) return;
    const left = limitHit ? 0 : Math.max(0, max - used);
    box.textContent = left === 1 ? '1 attempt left' : `${num(left)} attempts left`;
  }

  // tick: the countdown, the final banner, whether scoring makes sense.
  function tick() {
    const { state, text } = lifecycle(lb.boards.get(id), cfg?.board, lb.serverNow());
    const refused = ['forbidden', 'unknown', 'deleted', 'notoken'].includes(status?.state);
    $('countdown').textContent = refused || state === 'final' ? '' : text;
    $('final-banner').hidden = refused || state !== 'final';
    const closed = refused || state === 'final' || state === 'scheduled' || state === 'deleted';
    for (const b of document.querySelectorAll('.pad button, #custom-form button')) b.disabled = closed;
    showAttempts();
  }
  setInterval(tick, 250);

  let lastRank = 0;
  function showPercentile() {
    const p = $('percentile');
    p.hidden = !(lastRank > 0 && total > 0);
    if (p.hidden) return;
    p.textContent = standing(lastRank, total);
    const tier = tierOf(cfg?.board?.tiers, lastRank, total);
    $('tier').hidden = !tier;
    $('tier').textContent = tier; // text, never markup
  }

  let lastView = null;
  let overtakenTimer = 0;
  // A sharded board's acks carry no rank unless it says ack_rank "global"
  // (R24): the last ack's rank is then the live view's, kept up to date.
  let ackRankFromView = false;
  lb.on('view', (f) => {
    if (f.member !== me) return;
    if (ackRankFromView) $('ack-rank').textContent = f.rank ? '#' + num(f.rank) : '—';
    setBig($('my-rank'), f.rank ? '#' + num(f.rank) : '—');
    setBig($('my-score'), scoreText(f.score));
    lastRank = f.rank || 0;
    showPercentile();
    around.update(f.around);
    $('around-empty').hidden = f.around.length > 0;
    const prev = lastView;
    lastView = f;
    const box = $('overtaken');
    if (prev && prev.rank && f.rank && f.rank < prev.rank) box.hidden = true; // back up: old news
    // Overtaken: a worse rank while our own score did not drop.
    if (!prev || !prev.rank || !f.rank || f.rank <= prev.rank || f.score < prev.score) return;
    const above = new Set(prev.around.filter((e) => e.rank < prev.rank).map((e) => e.member));
    const passers = f.around.filter((e) => e.rank < f.rank && e.member !== me && !above.has(e.member));
    const who = passers.length ? passers.map((e) => e.name || e.member).join(', ') : 'Someone';
    box.textContent = `${who} just passed you — you are now #${num(f.rank)}`;
    box.hidden = false;
    clearTimeout(overtakenTimer);
    overtakenTimer = setTimeout(() => {
      box.hidden = true;
    }, 8000);
  });

  const pending = () => {
    const n = lb.unackedScores;
    $('pending').textContent = n === 0 ? 'all acknowledged' : `${n} waiting`;
  };

  // The board's mode decides what a score is: a delta on incr boards, the
  // value itself on best and set boards (learnt from the config; incr until
  // then, the default).
  let byValue = false;
  function useMode(mode) {
    byValue = mode === 'best' || mode === 'set';
    $('pad').hidden = byValue;
    $('custom-label').textContent = byValue
      ? (mode === 'best' ? 'Your score (the best one counts)' : 'Your score (the last one counts)')
      : 'Custom delta (negative to take points back)';
    $('custom-form').dataset.mode = byValue ? 'value' : 'delta';
  }

  function send(n) {
    if (!Number.isSafeInteger(n) || (!byValue && n === 0)) {
      $('ackline').textContent = byValue ? 'A score is a whole number.' : 'A delta is a whole number other than 0.';
      return;
    }
    const delta = n;
    const p = lb.score(id, byValue ? { value: n } : { delta: n });
    pending();
    p.then(
      (ack) => {
        if (!ack.duplicate) used++;
        if (ack.cohort) {
          acked++;
          showGroup(ack.cohort, ack.tier || '');
        }
        showAttempts();
        showRuns();
        $('ack-score').textContent = scoreText(ack.score);
        const sent = byValue ? `${num(delta)} → ` : `${delta > 0 ? '+' : ''}${num(delta)} → `;
        const again = ack.duplicate ? ' — re-sent, applied once' : '';
        ackRankFromView = ack.rank === undefined;
        if (ackRankFromView) {
          // No rank in the ack: the view's, which follows within an interval.
          $('ack-rank').textContent = lastRank ? '#' + num(lastRank) : '—';
          $('ackline').replaceChildren(
            sent,
            Object.assign(document.createElement('strong'), { textContent: `score ${scoreText(ack.score)}` }),
            ` (your rank follows in the live view)${again}`,
          );
          return;
        }
        $('ack-rank').textContent = '#' + num(ack.rank);
        const was = ack.prev_rank === null ? 'new on the board' : `was #${num(ack.prev_rank)}`;
        $('ackline').replaceChildren(
          sent,
          Object.assign(document.createElement('strong'), { textContent: `rank #${num(ack.rank)}` }),
          `, score ${scoreText(ack.score)} (${was})${again}`,
        );
      },
      (err) => {
        if (err.code === 'limit_reached') limitHit = true;
        showAttempts();
        $('ackline').textContent = `Not applied: ${errorText(err)}`;
      },
    ).finally(pending);
  }

  for (const b of document.querySelectorAll('.pad button')) {
    b.addEventListener('click', () => send(Number(b.dataset.delta)));
  }
  $('custom-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    send(Number($('custom-input').value));
  });
  // Keys 1, 2, 3 score +1, +10, +100 when no field has the focus.
  document.addEventListener('keydown', (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.target.closest('input, textarea')) return;
    const delta = { 1: 1, 2: 10, 3: 100 }[ev.key];
    if (delta && !byValue) send(delta);
  });

  subscribe();
  closeWhileCached(lb);
  lb.connect();
  document.querySelector('.pad button').focus();
  tokens({}).then((t) => boardConfig(id, t), () => null).then((c) => {
    cfg = c;
    useMode(cfg?.board?.mode);
    if (useBoardDecimals(cfg?.board)) for (const t of [top, around]) t.rescore();
    if (cfg?.board?.title) {
      $('title').textContent = cfg.board.title;
      document.title = cfg.board.title + ' · Play';
    }
    tick();
    showRuns();
    loadGroup();
  });

  // showRuns lists the member's last runs on a board with history
  // (docs/lists.md), newest first; it runs again after each ack.
  let runsAsked = 0;
  async function showRuns() {
    if (!(cfg?.board?.history > 0) || !me) return;
    const n = ++runsAsked;
    const events = await lastRuns(id, me, await tokens({}).catch(() => ''));
    if (!events || n !== runsAsked) return; // a later call shows a newer list
    $('runs').hidden = false;
    $('runs-empty').hidden = events.length > 0;
    $('runs-list').replaceChildren(...events.map((e) => el('li', {}, runText(e))));
  }
}

/**
 * Where a rank stands among total players, in words: "Top 3% of 1,200
 * players" in the upper half of a board of 10 or more (the share at or
 * above the rank, rounded up, so the leader of 1,000 is never "top 0%"),
 * else the rank itself ("#8 of 8 players"): a percentage of a handful of
 * players, or "Top 100%", says nothing.
 */
function standing(rank, total) {
  const players = `${num(total)} ${total === 1 ? 'player' : 'players'}`;
  if (total === 1) return 'The only player so far';
  if (rank === 1) return `Leading ${players}`;
  const pct = Math.max(1, Math.ceil((rank / total) * 100));
  return total >= 10 && pct <= 50 ? `Top ${pct}% of ${players}` : `#${num(rank)} of ${players}`;
}

// lastRuns reads GET …/members/{member}/history; null when it fails.
async function lastRuns(board, member, token) {
  try {
    const r = await fetch(`/api/v1/boards/${encodeURIComponent(board)}/members/${encodeURIComponent(member)}/history`, {
      headers: token ? { Authorization: 'Bearer ' + token } : {},
      cache: 'no-store',
    });
    if (!r.ok) return null;
    const j = await r.json();
    return Array.isArray(j?.events) ? j.events : null;
  } catch {
    return null;
  }
}

// runText is one run, as text (never markup): "+10 → 120 · 14:03:07".
function runText(e) {
  const what = e.delta !== undefined ? `${e.delta > 0 ? '+' : ''}${scoreText(e.delta)}` : scoreText(e.value);
  const at = new Date(e.at).toLocaleTimeString();
  return `${what} → ${scoreText(e.score)} · ${at}`;
}
