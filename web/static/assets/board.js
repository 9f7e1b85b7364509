// RankTable renders ranked entries into a <tbody>, one row per member kept
// across updates, so that a row can glide to its new place (FLIP: measure
// First, apply the Last layout, Invert with a transform, Play it back to none)
// and a changed score can flash. Animations use the Web Animations API, which
// needs no inline style and so fits the strict CSP.
import { avatarURL, flagEmoji } from '/lb-client.js';
import { el, initial, num, scoreText } from './common.js';

const reduceMotion = () => window.matchMedia('(prefers-reduced-motion: reduce)').matches;

export class RankTable {
  /**
   * @param {HTMLTableSectionElement} tbody
   * @param {object} [opts]
   * @param {string} [opts.me] member id shown as "you"
   * @param {function} [opts.onPick] (member) => void; names become buttons
   * @param {boolean} [opts.avatar=true] an avatar (or the name's initial) before the name
   * @param {boolean} [opts.flag=true] the country's flag before the name, when known
   * @param {boolean} [opts.delta=false] a column with the member's last score change
   * @param {boolean} [opts.motion=true] animate moves (off as well under prefers-reduced-motion)
   * @param {boolean} [opts.replay=false] a "Replay" link when the entry's meta has an https replay URL
   */
  constructor(tbody, { me = '', onPick = null, avatar = true, flag = true, delta = false, motion = true, replay = false } = {}) {
    this.tbody = tbody;
    this.me = me;
    this.cols = { avatar, flag, delta, replay };
    this.motion = motion;
    this.followed = '';
    this.onPick = onPick;
    this.rows = new Map(); // member -> {tr, rank, score}
  }

  /** Marks a member's row (the followed member on the spectator page). */
  setFollowed(member) {
    this.followed = member || '';
    for (const [m, r] of this.rows) r.tr.classList.toggle('followed', m === this.followed);
  }

  /** Writes every row's score again in the current format (useBoardDecimals). */
  rescore() {
    for (const r of this.rows.values()) if (r.score !== null) setScore(r.cells.score, scoreText(r.score));
  }

  update(entries) {
    const first = new Map();
    for (const [m, r] of this.rows) first.set(m, r.tr.getBoundingClientRect().top);

    const keep = new Set();
    entries.forEach((e, i) => {
      let r = this.rows.get(e.member);
      if (!r) {
        r = this._make(e);
        this.rows.set(e.member, r);
      }
      this._fill(r, e);
      keep.add(e.member);
      const at = this.tbody.children[i];
      if (at !== r.tr) this.tbody.insertBefore(r.tr, at || null);
    });
    for (const [m, r] of this.rows) {
      if (!keep.has(m)) {
        r.tr.remove();
        this.rows.delete(m);
      }
    }
    if (!this.motion || reduceMotion()) return;
    for (const [m, r] of this.rows) {
      const before = first.get(m);
      if (before === undefined) {
        r.tr.animate([{ opacity: 0, transform: 'translateX(-12px)' }, { opacity: 1, transform: 'none' }], {
          duration: 350,
          easing: 'ease-out',
        });
        continue;
      }
      const dy = before - r.tr.getBoundingClientRect().top;
      if (Math.abs(dy) > 0.5) {
        r.tr.animate([{ transform: `translateY(${dy}px)` }, { transform: 'none' }], {
          duration: 450,
          easing: 'cubic-bezier(.2,.8,.2,1)',
        });
      }
    }
  }

  _make(e) {
    const rank = el('td', { class: 'rank num' });
    const arrow = el('span');
    const move = el('td', { class: 'move', 'aria-hidden': 'true' }, arrow);
    const name = el('span', { class: 'name' });
    const id = el('span', { class: 'id' });
    const pic = this.cols.avatar ? el('span', { class: 'pic', 'aria-hidden': 'true' }) : null;
    const flag = this.cols.flag ? el('span', { class: 'flag' }) : null;
    const label = el('span', { class: 'label' }, name, id);
    let who;
    if (this.onPick) {
      const b = el('button', { class: 'pick', type: 'button', title: 'Follow this member' }, pic, flag, label);
      b.addEventListener('click', () => this.onPick(e.member));
      who = el('td', { class: 'who' }, b);
    } else {
      who = el('td', { class: 'who' }, el('span', { class: 'pick' }, pic, flag, label));
    }
    const score = el('td', { class: 'score num' });
    // The change fades inside its cell, never the cell itself: a
    // transparent cell would leave its row without its end (ragged rows).
    const change = this.cols.delta ? el('span') : null;
    const delta = this.cols.delta ? el('td', { class: 'delta num' }, change) : null;
    const replay = this.cols.replay ? el('td', { class: 'replay' }) : null;
    const tr = el('tr', { dataset: { member: e.member } }, rank, move, who, score, delta, replay);
    tr.classList.toggle('me', e.member === this.me);
    tr.classList.toggle('followed', e.member === this.followed);
    return { tr, rank: null, score: null, pic: null, cells: { rank, move, arrow, name, id, score, pic, flag, delta, change, replay } };
  }

  // _picture shows the avatar, or the name's initial when there is none or
  // it fails to load. The image is fetched without a referrer: the avatar's
  // host learns nothing of the page.
  _picture(r, e) {
    const c = r.cells;
    const url = avatarURL(e);
    const key = url + '|' + (e.name || e.member);
    if (r.pic === key) return;
    r.pic = key;
    const letter = () => el('span', { class: 'initial' }, initial(e.name || e.member));
    if (!url) {
      c.pic.replaceChildren(letter());
      return;
    }
    const img = el('img', { src: url, alt: '', referrerPolicy: 'no-referrer', decoding: 'async', width: 40, height: 40 });
    img.addEventListener('error', () => {
      if (r.pic === key) c.pic.replaceChildren(letter());
    });
    c.pic.replaceChildren(img);
  }

  _fill(r, e) {
    const c = r.cells;
    const label = e.name || e.member;
    c.name.textContent = label + (e.member === this.me ? ' (you)' : '');
    c.name.title = label; // the whole name where the column ends it in an ellipsis
    c.id.textContent = e.name && e.name !== e.member ? '@' + e.member : '';
    if (c.pic) this._picture(r, e);
    if (c.flag) {
      const f = flagEmoji(e.country);
      c.flag.textContent = f;
      c.flag.title = f ? e.country.toUpperCase() : '';
      c.flag.hidden = !f;
    }
    if (c.replay) fillReplay(c.replay, e);
    if (r.rank !== e.rank) {
      if (r.rank !== null) {
        const up = e.rank < r.rank;
        c.arrow.textContent = up ? '▲' : '▼';
        c.move.className = 'move ' + (up ? 'up' : 'down');
        // Shown for a moment, then faded; a new move restarts it.
        c.arrow.getAnimations().forEach((a) => a.cancel());
        c.arrow.animate([{ opacity: 1 }, { opacity: 1, offset: 0.7 }, { opacity: 0 }], {
          duration: 5000,
          fill: 'forwards',
        });
      }
      c.rank.textContent = e.rank;
      r.tr.dataset.rank = e.rank;
      r.rank = e.rank;
    }
    if (r.score !== e.score) {
      setScore(c.score, scoreText(e.score));
      if (r.score !== null) {
        flash(r.tr);
        if (c.delta) {
          const d = e.score - r.score;
          c.change.textContent = (d > 0 ? '+' : '−') + scoreText(Math.abs(d));
          c.delta.className = 'delta num ' + (d > 0 ? 'up' : 'down');
          c.change.getAnimations().forEach((a) => a.cancel());
          c.change.animate([{ opacity: 1 }, { opacity: 1, offset: 0.7 }, { opacity: 0 }], { duration: 5000, fill: 'forwards' });
        }
      }
      r.score = e.score;
    }
  }
}

/**
 * The replay URL of an entry's meta (docs/lists.md): an absolute https: URL
 * without user info only, so that a score's meta can never make the page
 * follow javascript:, data: or a plain-http link, nor dress a link to
 * evil.example as https://youtube.com@evil.example/.
 */
export function replayURL(entry) {
  const r = entry?.meta?.replay;
  if (typeof r !== 'string' || r.length > 512) return '';
  try {
    const u = new URL(r);
    return u.protocol === 'https:' && !u.username && !u.password ? u.href : '';
  } catch {
    return '';
  }
}

// fillReplay shows the entry's replay link in its cell, or nothing.
function fillReplay(cell, e) {
  const url = replayURL(e);
  if ((cell.firstChild?.href || '') === url) return;
  if (!url) {
    cell.replaceChildren();
    return;
  }
  cell.replaceChildren(el('a', { href: url, target: '_blank', rel: 'noopener noreferrer', title: 'Watch ' + (e.name || e.member) + "'s run" }, 'Replay'));
}

// setScore writes a score cell and its length, which sizes it (app.css).
function setScore(cell, text) {
  cell.textContent = text;
  cell.style.setProperty('--chars', String(text.length));
}

/** Restarts the fading highlight on an element. */
export function flash(node) {
  if (reduceMotion()) return;
  for (const cell of node.children.length ? node.children : [node]) {
    cell.animate([{ backgroundColor: 'rgba(92, 200, 255, 0.45)' }, { backgroundColor: getComputedStyle(cell).backgroundColor }], {
      duration: 1400,
      easing: 'ease-out',
    });
  }
}
