// RankTable renders ranked entries into a <tbody>, one row per member kept
// across updates, so that a row can glide to its new place (FLIP: measure
// First, apply the Last layout, Invert with a transform, Play it back to none)
// and a changed score can flash. Animations use the Web Animations API, which
// needs no inline style and so fits the strict CSP.
import { el, num } from './common.js';

const reduceMotion = () => window.matchMedia('(prefers-reduced-motion: reduce)').matches;

export class RankTable {
  /**
   * @param {HTMLTableSectionElement} tbody
   * @param {object} [opts]
   * @param {string} [opts.me] member id shown as "you"
   * @param {function} [opts.onPick] (member) => void; names become buttons
   */
  constructor(tbody, { me = '', onPick = null } = {}) {
    this.tbody = tbody;
    this.me = me;
    this.followed = '';
    this.onPick = onPick;
    this.rows = new Map(); // member -> {tr, rank, score}
  }

  /** Marks a member's row (the followed member on the spectator page). */
  setFollowed(member) {
    this.followed = member || '';
    for (const [m, r] of this.rows) r.tr.classList.toggle('followed', m === this.followed);
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
    if (reduceMotion()) return;
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
    let who;
    if (this.onPick) {
      const b = el('button', { class: 'pick', type: 'button', title: 'Follow this member' }, name, id);
      b.addEventListener('click', () => this.onPick(e.member));
      who = el('td', { class: 'who' }, b);
    } else {
      who = el('td', { class: 'who' }, name, id);
    }
    const score = el('td', { class: 'score num' });
    const tr = el('tr', { dataset: { member: e.member } }, rank, move, who, score);
    tr.classList.toggle('me', e.member === this.me);
    tr.classList.toggle('followed', e.member === this.followed);
    return { tr, rank: null, score: null, cells: { rank, move, arrow, name, id, score } };
  }

  _fill(r, e) {
    const c = r.cells;
    const label = e.name || e.member;
    c.name.textContent = label + (e.member === this.me ? ' (you)' : '');
    c.id.textContent = e.name && e.name !== e.member ? '@' + e.member : '';
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
      c.score.textContent = num(e.score);
      if (r.score !== null) flash(r.tr);
      r.score = e.score;
    }
  }
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
