package memstore

// Erasure and export of a member (docs/protocol.md §13, R29). A board's
// data about a member lives in its own maps, so erasing is a walk over every
// board under its lock, then over its idempotency records' expiry queue in
// chunks (the lock taken again for each, so a busy board's writers wait a
// chunk at most, whatever the records), then the global bans and the
// profile.

import (
	"context"
	"fmt"
	"slices"

	"github.com/wsgateway/wsgateway/rank"
)

// Erase implements rank.Eraser.
func (s *Store) Erase(ctx context.Context, member string) (rank.Erasure, error) {
	out := rank.Erasure{Boards: []string{}}
	if !rank.ValidMemberID(member) {
		return out, fmt.Errorf("memstore: erase: %w", rank.ErrInvalidMember)
	}
	if s.closed.Load() {
		return out, errClosed
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("memstore: erase: %w", err)
	}
	s.mu.Lock()
	_, out.GlobalBan = s.global[member]
	delete(s.global, member)
	bs := make([]*board, 0, len(s.boards))
	for _, b := range s.boards {
		bs = append(bs, b)
	}
	s.mu.Unlock()
	for _, b := range bs {
		b.mu.Lock()
		entries, touched := b.erase(member)
		id := b.cfg.ID
		b.mu.Unlock()
		records := b.forgetRecords(member, s.chunk)
		out.Entries += entries
		out.Records += records
		if touched || records > 0 {
			out.Boards = append(out.Boards, id)
		}
	}
	slices.Sort(out.Boards)
	t := &s.profiles
	t.mu.Lock()
	_, out.Profile = t.m[member]
	delete(t.m, member)
	t.mu.Unlock()
	out.Done = true
	return out, nil
}

// forgetRecords deletes member's idempotency records, so its old request
// ids are applied anew (R29), and blanks its keys in the expiry queue, so
// the queue holds no trace of it: a walk over the queue (every record has
// an item there) in chunks of chunk items, each under the lock. It returns
// the records deleted. Items popped by the sweep between two chunks are
// skipped: their records went with them or were recorded again, further on.
func (b *board) forgetRecords(member string, chunk int) int64 {
	var n int64
	pos := 0 // the next item to look at, counted from the queue's first push
	for {
		b.mu.Lock()
		if b.deleted {
			b.mu.Unlock()
			return n
		}
		k, next, done := b.forgetChunk(member, pos, chunk)
		if k > 0 {
			b.seq++ // reads changed, as a removal moves it
		}
		b.mu.Unlock()
		n += k
		if done {
			return n
		}
		pos = next
	}
}

// forgetChunk is one step of forgetRecords from position pos, over at most
// chunk items: the records deleted, the position to go on from, and
// whether the queue's end was reached. b.mu is held for writing.
func (b *board) forgetChunk(member string, pos, chunk int) (int64, int, bool) {
	q := &b.queue
	pos = max(pos, q.popped)
	bl, i := q.head, q.hi+(pos-q.popped)
	for bl != nil && i >= queueBlockLen {
		bl, i = bl.next, i-queueBlockLen
	}
	var n int64
	for seen := 0; bl != nil && seen < chunk; seen++ {
		if bl == q.tail && i >= q.ti {
			break
		}
		if it := &bl.items[i]; it.key.member == member {
			if _, ok := b.idem[it.key]; ok {
				delete(b.idem, it.key)
				n++
			}
			if _, ok := b.claims[it.key]; ok { // a claim, reject or verdict (§16)
				delete(b.claims, it.key)
				n++
			}
			it.key = idemKey{}
		}
		pos++
		if i++; i == queueBlockLen {
			bl, i = bl.next, 0
		}
	}
	return n, pos, bl == nil || (bl == q.tail && i >= q.ti)
}

// erase removes member from every period b holds, its name, bans and hot
// sums; it returns the entries removed (shown or hidden) and whether
// anything was. b.mu is held for writing. A new map of a board or period
// keyed by member is one more delete here.
func (b *board) erase(member string) (entries int64, touched bool) {
	if b.deleted {
		return 0, false
	}
	for _, z := range b.periods {
		n, t := z.erase(member)
		entries += n
		touched = touched || t
	}
	if l := b.league; l != nil {
		// The open period's data outlives its retention until its moves
		// are made (leagueOpen): its entries are not counted, but erased.
		if l.openZ != nil && b.periods[l.open] != l.openZ {
			_, t := l.openZ.erase(member)
			touched = touched || t
		}
		touched = touched || hasKey(l.tier, member)
		delete(l.tier, member)
	}
	touched = touched || entries > 0 || hasKey(b.names, member) || hasKey(b.bans, member) || hasKey(b.gbans, member)
	delete(b.names, member)
	if hasKey(b.bans, member) || hasKey(b.gbans, member) {
		delete(b.bans, member)
		delete(b.gbans, member)
		b.resetBanExp()
	}
	if hasKey(b.capDayMap, member) {
		delete(b.capDayMap, member)
		touched = true
	}
	if b.hot != nil && hasKey(b.hot.sums, member) {
		delete(b.hot.sums, member)
		touched = true
	}
	if hasKey(b.gains, member) {
		delete(b.gains, member)
		touched = true
	}
	// The records go in chunks after it (forgetRecords).
	if touched {
		b.seq++ // reads changed, as a removal moves it
	}
	return entries, touched
}

// erase removes member from period z: its entry (shown or hidden), its
// cohort seat, submissions, meta and history. The seat is not given back
// (the tier's count of placed members stays), so the members placed after
// it keep their cohorts and none ever holds more than its size (R27); a
// later event of the member places it anew, in the next seat.
func (z *zset) erase(member string) (entries int64, touched bool) {
	if n := z.members[member]; n != nil {
		z.leaveGroups(n)
		z.tr.remove(n)
		delete(z.members, member)
		entries++
	} else if z.hidden[member] != nil {
		delete(z.hidden, member)
		entries++
	} else if z.held[member] != nil {
		delete(z.held, member)
		entries++
	}
	touched = entries > 0
	if z.co != nil && z.co.forget(member) {
		touched = true
	}
	if z.rg != nil && z.rg.forget(member) {
		touched = true
	}
	for _, had := range []bool{hasKey(z.counts, member), hasKey(z.meta, member), hasKey(z.history, member), hasKey(z.capped, member)} {
		touched = touched || had
	}
	delete(z.capped, member)
	delete(z.counts, member)
	delete(z.meta, member)
	delete(z.history, member)
	return entries, touched
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// Export implements rank.Eraser: the reads' export, and the entries bans
// hide in the periods each board keeps.
func (s *Store) Export(ctx context.Context, member string) (rank.Export, error) {
	x, err := rank.ExportOf(ctx, s, member)
	if err != nil {
		return rank.Export{}, fmt.Errorf("memstore: export: %w", err)
	}
	s.mu.RLock()
	bs := make([]*board, 0, len(s.boards))
	for _, b := range s.boards {
		bs = append(bs, b)
	}
	s.mu.RUnlock()
	for _, b := range bs {
		b.mu.RLock()
		if !b.deleted {
			for _, idx := range rank.KeptPeriods(b.cfg, s.now()) {
				z := b.periods[idx]
				if z == nil {
					continue
				}
				n := z.hidden[member]
				if n == nil {
					n = z.heldNode(member)
				}
				if n == nil {
					continue
				}
				x.AddHidden(rank.ExportEntry{Board: b.cfg.ID, Period: idx, Score: n.score, Meta: z.meta[member], Decimals: b.cfg.Decimals()})
			}
		}
		b.mu.RUnlock()
	}
	return x, nil
}
