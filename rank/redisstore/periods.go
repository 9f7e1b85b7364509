package redisstore

// Period slots: the two period keys a script may pick between.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// slots are the two period keys a script may pick between, by its own
// clock: A until boundary, B from it. A board without periods, or a read
// of an explicit index, has boundary 0 and A = B.
type slots struct {
	a, b              int64 // period indexes
	start, bound, end int64 // unix ms: A is [start, bound), B is [bound, end)
	expireA, expireB  int64 // unix ms; 0 = no expiry
	// p is the period before A, [pstart, start), for late events within
	// grace (R17); set for the current pair only.
	p, pstart, expireP int64
	// shown, when not 0, is the index a read past retain reports (its
	// keys are those of no period).
	shown int64
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// slotsFor resolves a period selector at the estimated time now.
func slotsFor(b rank.Board, sel rank.PeriodSel, now time.Time) (slots, error) {
	idx, err := sel.Resolve(b, now)
	if err != nil {
		return slots{}, err
	}
	if b.Reset == rank.None {
		return slots{}, nil
	}
	if sel != "" && sel != "current" && sel != "previous" {
		if !b.Retains(idx, now) {
			// Past retain: read as empty whatever Redis still holds (its
			// TTLs run on its own clock). No period has a negative index.
			return slots{a: -1, b: -1, shown: idx}, nil
		}
		return slots{a: idx, b: idx}, nil // an explicit index
	}
	cur := rank.PeriodAt(b, now)
	next := rank.PeriodAt(b, cur.End)
	sl := slots{start: ms(cur.Start), bound: ms(cur.End), end: ms(next.End)}
	if sel == "previous" {
		sl.a, sl.b = idx, cur.Index
		return sl, nil
	}
	sl.a, sl.b = cur.Index, next.Index
	sl.expireA, sl.expireB = ms(cur.ExpireAt(b.Retained())), ms(next.ExpireAt(b.Retained()))
	prev := cur.Previous(b)
	sl.p, sl.pstart, sl.expireP = prev.Index, ms(prev.Start), ms(prev.ExpireAt(b.Retained()))
	return sl, nil
}

// covers reports whether sl is the current pair at now: now is in slot A,
// or the board has no periods (one pair for all time).
func (sl slots) covers(now time.Time) bool {
	t := ms(now)
	return sl.bound == 0 || (t >= sl.start && t < sl.bound)
}

// pick is the period index the script chose (slot 1 = A, 2 = B).
func (sl slots) pick(slot int64) int64 {
	if sl.shown != 0 {
		return sl.shown
	}
	if slot == 2 {
		return sl.b
	}
	return sl.a
}

// restoreOf checks an import into past period idx of board b (§18,
// rank.Board.Restore) at the store clock's estimate, and returns the
// period and its events' at argument, "r<ms>" (apply.lua).
func (s *Store) restoreOf(ctx context.Context, b rank.Board, idx int64) (rank.Period, string, error) {
	now, _ := s.now(ctx, b)
	p, t, err := b.Restore(idx, now)
	if err != nil {
		return rank.Period{}, "", fmt.Errorf("redisstore: apply %s: %w", b.ID, err)
	}
	return p, "r" + strconv.FormatInt(t.UnixMilli(), 10), nil
}

// restoreKeys are the keys of an import into past period q: the current
// pair at now as A and B (the call's clock check), q as P, and derived
// boards' views from q on.
func (s *Store) restoreKeys(c cachedBoard, now time.Time, q rank.Period) *periodKeys {
	sl, _ := slotsFor(c.b, "", now)
	sl.p, sl.pstart, sl.expireP = q.Index, ms(q.Start), ms(q.ExpireAt(c.b.Retained()))
	p := s.slotKeys(&c.b, sl)
	p.dkeys, p.dargs = s.depKeysFrom(c, q)
	return p
}
