package memstore

// Erasure and export of a member (docs/protocol.md §13, R29). A board's
// data about a member lives in its own maps, so erasing is a walk over every
// board under its lock, then the global bans and the profile.

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
		out.Entries += entries
		if touched {
			out.Boards = append(out.Boards, id)
		}
	}
	slices.Sort(out.Boards)
	t := &s.profiles
	t.mu.Lock()
	delete(t.m, member)
	t.mu.Unlock()
	return out, nil
}

// erase removes member from every period b holds, its name, bans, hot
// sums and idempotency records; it returns the entries removed (shown or
// hidden) and whether anything was. b.mu is held for writing. A new map of
// a board or period keyed by member is one more delete here.
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
	if b.hot != nil && hasKey(b.hot.sums, member) {
		delete(b.hot.sums, member)
		touched = true
	}
	if hasKey(b.gains, member) {
		delete(b.gains, member)
		touched = true
	}
	// The records are keyed by member and request id: forgetting them is
	// what lets an old id be applied anew (R29).
	forgot := false
	for k := range b.idem {
		if k.member == member {
			delete(b.idem, k)
			forgot = true
		}
	}
	for k := range b.claims {
		if k.member == member {
			delete(b.claims, k)
			forgot = true
		}
	}
	if forgot {
		b.queue.forget(member)
		touched = true
	}
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
		z.co.leave(n)
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
	if z.co != nil {
		touched = touched || hasKey(z.co.of, member)
		delete(z.co.of, member)
	}
	for _, had := range []bool{hasKey(z.counts, member), hasKey(z.meta, member), hasKey(z.history, member)} {
		touched = touched || had
	}
	delete(z.counts, member)
	delete(z.meta, member)
	delete(z.history, member)
	return entries, touched
}

// forget blanks member's keys in the queue, so it holds no trace of the
// member: the sweep pops a blank key as any other and finds no record
// under it. O(records queued), once per erasure of a member with records.
func (q *expiryQueue) forget(member string) {
	for b, i := q.head, q.hi; b != nil; b, i = b.next, 0 {
		end := queueBlockLen
		if b == q.tail {
			end = q.ti
		}
		for ; i < end; i++ {
			if b.items[i].key.member == member {
				b.items[i].key = idemKey{}
			}
		}
	}
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
