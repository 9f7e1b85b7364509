package live

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// Limits of a subscription (docs/protocol.md §4).
const (
	MaxTop    = rank.MaxTop
	MaxAround = rank.MaxAround
)

// Subscribe subscribes o to board: top frames of the first top entries
// (0: none) and view frames of member with around neighbours (0: none),
// replacing o's previous subscription to board. The first frames are put in
// o at once (R7), from the board's current frames when they are fresh, else
// from a store read.
//
// Any error (an invalid argument, an unknown board, a failed first read)
// leaves o with no subscription to board at all, the previous one included.
func (e *Engine) Subscribe(ctx context.Context, o *Outbox, board string, top int, member string, around int) error {
	return e.SubscribeSpec(ctx, o, Spec{Board: board, Top: top, Member: member, Around: around})
}

// SubscribeSpec is Subscribe with every option of a subscribe (members.go).
func (e *Engine) SubscribeSpec(ctx context.Context, o *Outbox, sp Spec) error {
	board, top, member, around := sp.Board, sp.Top, sp.Member, sp.Around
	if err := checkMembers(board, sp.Members); err != nil {
		return err
	}
	switch {
	case !rank.ValidBoardID(board):
		return fmt.Errorf("live: subscribe %q: %w", board, rank.ErrInvalidBoard)
	case top < 0 || top > MaxTop:
		return fmt.Errorf("live: subscribe %s: %w: top %d is not within 0..%d", board, rank.ErrBadRequest, top, MaxTop)
	case around < 0 || around > MaxAround:
		return fmt.Errorf("live: subscribe %s: %w: around %d is not within 0..%d", board, rank.ErrBadRequest, around, MaxAround)
	case around > 0 && !rank.ValidMemberID(member):
		return fmt.Errorf("live: subscribe %s: %w", board, rank.ErrInvalidMember)
	}
	if top == 0 && around == 0 && len(sp.Members) == 0 {
		e.Unsubscribe(o, board)
		return nil
	}
	var cfg rank.Board
	e.mu.Lock()
	b := e.boards[board]
	haveCfg := b != nil && b.cfgOK
	if haveCfg {
		cfg = b.cfg
	}
	e.mu.Unlock()
	if !haveCfg {
		// The config gives the order, needed to place view windows; it also
		// turns an unknown board into an error before anything is kept.
		c, err := e.getBoard(ctx, board)
		if err != nil {
			return fmt.Errorf("live: subscribe: %w", err)
		}
		cfg = c
	}
	cohort := sp.Cohort
	if cohort != "" {
		// Refused before anything is sent (a board frame) or read.
		if _, _, err := cfg.ParseCohortID(cohort); err != nil {
			return fmt.Errorf("live: subscribe %s: %w", board, err)
		}
	}

	sn, _ := e.storeNow(ctx)
	tk, vk := slotKey{board, false}, slotKey{board, true}
	top = topKey(top, sp.Meta)
	s := &sub{top: top, cohort: cohort}
	e.openList(o, s, board, len(sp.Members) > 0)
	if top > 0 {
		s.topGen = o.open(tk)
	} else {
		o.close(tk)
	}
	if around > 0 {
		s.viewGen = o.open(vk)
	} else {
		o.close(vk)
	}

	now := e.now()
	e.mu.Lock()
	b = e.boards[board]
	if b == nil {
		b = newBoard(board)
	}
	if !b.cfgOK && cfg.ID != "" {
		b.setCfg(cfg, now)
	}
	e.unregister(o, b)
	e.addBoard(b) // new, or unregister dropped it as left empty
	subs := e.conns[o]
	if subs == nil {
		subs = make(map[string]*sub)
		e.conns[o] = subs
	}
	subs[board] = s
	if b.cfgOK {
		// R19: the board frame goes first (Take returns events before
		// any slot's frame), after `subscribed` (the hub queues that
		// before it lets its writer take frames).
		st, period, final, hasFinal := phase(b.cfg, sn)
		if !b.lc.known {
			b.lc = lifecycle{known: true, state: st, period: period, final: final, hasFin: hasFinal, cfg: scheduleOf(b.cfg)}
		}
		o.event(encodeBoard(b.cfg, st, period, sn, b.told.count()), nil)
	}

	j := &job{b: b, sub: true, o: o, final: finalOf(b)}
	var out []delivery
	if top > 0 && cohort != "" {
		out = e.subscribeCohort(b, o, s, j, out)
	} else if top > 0 {
		n := b.topSubs[top]
		if n == nil {
			n = newSubscribers()
			b.topSubs[top] = n
		}
		n.set(o, s.topGen)
		b.maxN = max(b.maxN, topCount(top))
		if f := b.frames[top]; f != nil && !b.topDirty && f.seq >= o.floor(tk) {
			out = append(out, delivery{tk, f.seq, f.bytes, []target{{o, s.topGen}}, time.Time{}})
		} else {
			j.topN, j.ns = topCount(top), []int{top}
			j.prevTop = map[int]*topFrame{top: f}
		}
	}
	if around > 0 {
		k := viewKey{member, around, sp.Meta}
		v := b.views[k]
		if v == nil {
			e.nextID++
			v = &view{id: e.nextID, key: k, watchers: newSubscribers()}
			b.views[k] = v
			b.byMember[member] = append(b.byMember[member], v)
			// Not marked dirty: this job reads it, and marks it on failure.
		}
		v.watchers.set(o, s.viewGen)
		s.v = v
		if r := v.res; r != nil && !v.dirty && r.seq >= o.floor(vk) {
			out = append(out, delivery{vk, r.seq, r.bytes, []target{{o, s.viewGen}}, time.Time{}})
		} else {
			j.groups = map[int][]viewJob{around: {{v: v, prev: r}}}
		}
	}
	if len(sp.Members) > 0 {
		out = e.subscribeList(b, o, s, sp.Members, j, out)
	}
	if j.topN > 0 || j.groups != nil || j.ml != nil || j.cohorts != nil {
		e.startJob(b, j)
	}
	e.unlock()

	var err error
	if j.topN > 0 || j.groups != nil || j.ml != nil || j.cohorts != nil {
		err = e.runJob(ctx, j)
		// The subscriber's own first frames: the board's newest if it is not
		// older than what this connection already had, else this read's.
		e.mu.Lock()
		if top > 0 && cohort != "" {
			out = e.firstCohortFrame(b, o, s, j, out)
		} else if top > 0 && j.newTop != nil {
			f := b.frames[top]
			if f == nil || f.seq < o.floor(tk) {
				f = j.newTop[top]
			}
			if f != nil {
				out = append(out, delivery{tk, f.seq, f.bytes, []target{{o, s.topGen}}, time.Time{}})
			}
		}
		if around > 0 && len(j.groups[around]) == 1 {
			vj := j.groups[around][0]
			r := vj.v.res
			if r == nil || r.seq < o.floor(vk) {
				r = vj.next
			}
			if r != nil && vj.next != nil {
				out = append(out, delivery{vk, r.seq, r.bytes, []target{{o, s.viewGen}}, time.Time{}})
			}
		}
		out = e.ownList(j, o, s, out)
		e.mu.Unlock()
	}
	if err != nil {
		e.Unsubscribe(o, board)
		return fmt.Errorf("live: subscribe: %w", err)
	}
	e.mu.Lock()
	countFrames(b, out)
	e.mu.Unlock()
	deliver(out)
	return nil
}

// Unsubscribe ends o's subscription to board, pending frames included.
func (e *Engine) Unsubscribe(o *Outbox, board string) {
	e.mu.Lock()
	if b := e.boards[board]; b != nil {
		e.unregister(o, b)
	}
	e.mu.Unlock()
	o.close(slotKey{board, false})
	o.close(slotKey{board, true})
	o.close(listSlot(board))
}

// Drop forgets every subscription of o (its connection is gone).
func (e *Engine) Drop(o *Outbox) {
	var keys []slotKey
	e.mu.Lock()
	for id := range e.conns[o] {
		if b := e.boards[id]; b != nil {
			e.unregister(o, b)
		}
		keys = append(keys, slotKey{id, false}, slotKey{id, true}, listSlot(id))
	}
	delete(e.conns, o)
	e.mu.Unlock()
	for _, k := range keys {
		o.close(k)
	}
}

// unregister removes o's subscription to b, and b itself when nothing is left
// on it. Lock held.
func (e *Engine) unregister(o *Outbox, b *board) {
	subs := e.conns[o]
	s := subs[b.id]
	if s == nil {
		return
	}
	delete(subs, b.id)
	if len(subs) == 0 {
		delete(e.conns, o)
	}
	if s.cohort != "" {
		e.unregisterCohort(o, b, s)
	} else if n := b.topSubs[s.top]; n != nil {
		n.del(o)
		if n.len() == 0 {
			delete(b.topSubs, s.top)
			delete(b.frames, s.top)
			b.maxN = 0
			for k := range b.topSubs {
				b.maxN = max(b.maxN, topCount(k))
			}
		}
	}
	if v := s.v; v != nil {
		v.watchers.del(o)
		if v.watchers.len() == 0 {
			v.removed = true
			b.index.remove(v)
			delete(b.views, v.key)
			m := slices.DeleteFunc(b.byMember[v.key.member], func(x *view) bool { return x == v })
			if len(m) == 0 {
				delete(b.byMember, v.key.member)
			} else {
				b.byMember[v.key.member] = m
			}
			if len(b.views) == 0 {
				b.dirty = nil
			}
		}
	}
	e.dropList(b, o, s)
	if b.empty() && e.boards[b.id] == b {
		e.dropBoard(b.id)
	}
}

// addBoard makes b the board of its id, telling OnWatch when that id had
// none (its first local subscription). Lock held.
func (e *Engine) addBoard(b *board) {
	if e.boards[b.id] == b {
		return
	}
	_, had := e.boards[b.id]
	e.boards[b.id] = b
	if !had && e.onWatch != nil {
		e.onWatch(b.id, true)
	}
}

// dropBoard forgets board id, telling OnWatch (its last local subscription
// ended). Lock held.
func (e *Engine) dropBoard(id string) {
	if _, ok := e.boards[id]; !ok {
		return
	}
	delete(e.boards, id)
	if e.onWatch != nil {
		e.onWatch(id, false)
	}
}
