// The player page: choose a name (dev token) or bring a token (#token=…),
// score with buttons, see the ack's rank, the live view around you, the top
// 10, and a notice when someone overtakes you.
import { LBClient } from '/lb-client.js';
import { RankTable } from './board.js';
import { bindStatus, boardParam, dev, fragmentToken, link, num, randomTag, tokenSource, validBoard } from './common.js';

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
  notice('This page needs a player token: add #token=<your JWT> to the address. ' +
    'The token stays in the fragment, which the browser never sends to a server.');
}
if (!dev && board && fragmentToken()) {
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
  let me = dev ? memberID(name) : '';
  $('you-name').textContent = name || '…';

  const lb = new LBClient({ token: tokenSource({ sub: me, role: 'player', name }) });
  bindStatus(lb, $('conn'));
  const top = new RankTable($('top-rows'), { me });
  const around = new RankTable($('around-rows'), { me });

  lb.on('welcome', (w) => {
    notice('');
    if (!me) {
      // A token from the fragment: the member is whatever its sub says.
      me = w.member;
      top.me = around.me = me;
      $('you-name').textContent = me;
    }
  });
  lb.on('close', ({ welcomed }) => {
    if (!welcomed && lb.status === 'reconnecting') notice('Cannot reach the gateway (or it refused the token); retrying…');
  });
  lb.on('error', (err) => notice(`${err.code}: ${err.message}`, false));
  lb.on('top', (f) => {
    top.update(f.entries);
    $('top-empty').hidden = f.entries.length > 0;
  });

  let lastView = null;
  let overtakenTimer = 0;
  lb.on('view', (f) => {
    if (f.member !== me) return;
    $('my-rank').textContent = f.rank ? '#' + num(f.rank) : '—';
    $('my-score').textContent = num(f.score);
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
    box.textContent = `${who} overtook you — you are now #${num(f.rank)}`;
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

  function send(delta) {
    if (!Number.isSafeInteger(delta) || delta === 0) {
      $('ackline').textContent = 'A delta is a whole number other than 0.';
      return;
    }
    const p = lb.score(id, { delta });
    pending();
    p.then(
      (ack) => {
        $('ack-rank').textContent = '#' + num(ack.rank);
        $('ack-score').textContent = num(ack.score);
        const was = ack.prev_rank === null ? 'new on the board' : `was #${num(ack.prev_rank)}`;
        $('ackline').replaceChildren(
          `${delta > 0 ? '+' : ''}${num(delta)} → `,
          Object.assign(document.createElement('strong'), { textContent: `rank #${num(ack.rank)}` }),
          `, score ${num(ack.score)} (${was})${ack.duplicate ? ' — re-sent, applied once' : ''}`,
        );
      },
      (err) => {
        $('ackline').textContent = `Not applied: ${err.code} — ${err.message}`;
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
    if (delta) send(delta);
  });

  lb.subscribe(id, { top: 10, around: 3 }).catch((err) => notice(`${err.code}: ${err.message}`, false));
  lb.connect();
  document.querySelector('.pad button').focus();
}
