package memstore

// Derived boards (rank/derived.go, docs/protocol.md §8): a source board holds
// its dependants; apply, under the source's lock, takes each dependant's
// lock in turn and adds weight × (new − old) to every view the event's
// period lands in. Lock order: Store.mu, then a source's mu, then a derived
// board's mu (a derived board is never a source, so there is no cycle).
// Readers of a derived board take its lock only.
//
// A derived board has its own bans: a source's bans hide nothing on it
// (its sum counts every source entry, hidden or not, as scores are kept
// while banned), and a ban on the derived board hides the member there.

import (
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// dep is one dependant of a source board.
type dep struct {
	d    *board
	id   string // d's id, readable under the source's lock
	w    int64
	span int
}

// resolve applies the group and source rules to a config about to be
// stored: a derived board takes order, reset and tz from its sources; a
// source with dependants keeps what they rely on. s.mu is held for writing.
func (s *Store) resolve(cfg rank.Board) (rank.Board, error) {
	var old rank.Board
	var oldDeps []rank.Dep
	if b := s.boards[cfg.ID]; b != nil {
		b.mu.RLock()
		old, oldDeps = b.cfg, b.depList()
		b.mu.RUnlock()
	}
	cfg, err := rank.ResolveDerived(cfg, old, func(id string) (rank.Board, []rank.Dep, bool) {
		b := s.boards[id]
		if b == nil {
			return rank.Board{}, nil, false
		}
		b.mu.RLock()
		defer b.mu.RUnlock()
		return b.cfg, b.depList(), true
	})
	if err != nil {
		return rank.Board{}, err
	}
	if err := rank.CheckSourceChange(old, cfg, oldDeps); err != nil {
		return rank.Board{}, err
	}
	return cfg, nil
}

// link registers a new derived board with its sources and builds its views
// from what they hold: under their locks, so no event falls between the
// copy and the registration. s.mu is held for writing; nb is not yet
// reachable by any reader.
func (s *Store) link(nb *board, now time.Time) {
	if !nb.cfg.Derived() {
		return
	}
	src := nb.cfg.Source
	for i, id := range src.Boards() {
		sb := s.boards[id]
		sb.mu.Lock()
		w := src.Weights()[i]
		for idx, z := range sb.periods {
			if sb.readable(idx, now) == nil {
				continue
			}
			p, ok := rank.PeriodOf(sb.cfg, idx, now, sb.cfg.Retained()+2)
			if !ok {
				continue
			}
			views := rank.ViewPeriods(nb.cfg, p, src.Span())
			held := map[string]*node{}
			for m, h := range z.held {
				held[m] = h.n
			}
			for _, set := range []map[string]*node{z.members, z.hidden, held} {
				for m, n := range set {
					for _, v := range views {
						nb.add(v, m, w*n.score, now)
					}
					if name := sb.names[m]; name != "" {
						nb.names[m] = name
					}
				}
			}
		}
		sb.deps = append(sb.deps, dep{d: nb, id: nb.cfg.ID, w: w, span: src.Span()})
		sb.mu.Unlock()
	}
}

// unlink refuses to delete a source with dependants and takes a derived
// board out of its sources' lists. s.mu is held for writing.
func (s *Store) unlink(b *board) error {
	b.mu.RLock()
	cfg, n := b.cfg, len(b.deps)
	var first string
	if n > 0 {
		first = b.deps[0].id
	}
	b.mu.RUnlock()
	if n > 0 {
		return rankDeps(first)
	}
	for _, id := range cfg.Source.Boards() {
		sb := s.boards[id]
		if sb == nil {
			continue
		}
		sb.mu.Lock()
		kept := sb.deps[:0]
		for _, d := range sb.deps {
			if d.d != b {
				kept = append(kept, d)
			}
		}
		clear(sb.deps[len(kept):])
		sb.deps = kept
		sb.mu.Unlock()
	}
	return nil
}

func rankDeps(first string) error {
	return &depsError{first}
}

// depsError is rank.ErrHasDependants naming a dependant.
type depsError struct{ board string }

func (e *depsError) Error() string {
	return rank.ErrHasDependants.Error() + " (" + e.board + "): delete those first"
}

func (e *depsError) Unwrap() error { return rank.ErrHasDependants }

// maintain adds an applied source event's change to every dependant, in the
// same step (b.mu, the source's, is held for writing).
func (b *board) maintain(e rank.Event, r rank.Result, now time.Time) {
	if r.Duplicate || len(b.deps) == 0 {
		return
	}
	d := r.Score
	if r.PrevRank > 0 {
		d -= r.PrevScore
	}
	// An event lands in the current or the previous period, an import's
	// in a retained one (§18).
	p, ok := rank.PeriodOf(b.cfg, r.Period, now, max(2, b.cfg.Retained()))
	if !ok {
		return // cannot happen
	}
	for _, dp := range b.deps {
		dp.d.mu.Lock()
		if !dp.d.deleted {
			for _, v := range rank.ViewPeriods(dp.d.cfg, p, dp.span) {
				dp.d.add(v, e.Member, dp.w*d, now)
			}
			dp.d.seq++
			if e.Name != "" {
				dp.d.names[e.Member] = e.Name
			}
		}
		dp.d.mu.Unlock()
	}
}

// add adds amt to member m's score in the view of period v, creating the
// entry (at amt) when the member has none: it is hidden when the member is
// banned from this board. A view already past its retention is skipped.
// b.mu is held for writing.
func (b *board) add(v rank.Period, m string, amt int64, now time.Time) {
	if exp := v.ExpireAt(b.cfg.Retained()); !exp.IsZero() && !now.Before(exp) {
		return
	}
	z := b.readable(v.Index, now)
	if z == nil {
		z = b.newPeriod(v, now)
	}
	if n := z.members[m]; n != nil {
		if amt == 0 {
			return
		}
		z.tr.remove(n)
		b.setKey(n, n.score+amt, n.reached)
		z.tr.insert(n)
		return
	}
	if n := z.hidden[m]; n != nil {
		b.setKey(n, n.score+amt, n.reached)
		return
	}
	n := &node{}
	n.m = m
	b.setKey(n, amt, b.seq+1)
	if b.banned(m, now) {
		if z.hidden == nil {
			z.hidden = map[string]*node{}
		}
		z.hidden[m] = n
		return
	}
	z.tr.insert(n)
	z.members[m] = n
}

// depList is b's dependants as rank.Deps. b.mu is held.
func (b *board) depList() []rank.Dep {
	var out []rank.Dep
	for _, d := range b.deps {
		out = append(out, rank.Dep{Board: d.id, Weight: d.w, Span: d.span})
	}
	return out
}
