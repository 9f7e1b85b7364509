package redisstore

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// recordsRig is a store on an injected clock, set to the start of a bucket
// of the default window (10 minutes), and one board on it.
type recordsRig struct {
	s   *Store
	clk *ranktest.Clock
	b   rank.Board
	w   time.Duration
}

func newRecordsRig(t *testing.T, b rank.Board) *recordsRig {
	t.Helper()
	srv := testenv.StartRedis(t)
	// 2031-01-01T00:00:00Z is a multiple of 10 minutes: a bucket starts.
	clk := ranktest.NewClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	s := newStore(t, srv, Config{Now: clk.Now, HotInterval: -1})
	mustPut(t, s, b)
	return &recordsRig{s: s, clk: clk, b: b, w: time.Duration(b.IdempotencyWindow)}
}

// applyErr applies e and returns the result or the error.
func (r *recordsRig) apply(t *testing.T, e rank.Event) (rank.Result, error) {
	t.Helper()
	return rank.ApplyWait(t.Context(), r.s, e)
}

func (r *recordsRig) cfg(t *testing.T, field string) string {
	t.Helper()
	v, err := r.s.client.HGet(t.Context(), r.s.idKey(r.b.ID, "cfg"), field).Result()
	if err != nil {
		return ""
	}
	return v
}

// A record is found for at least a window after it was written, across a
// bucket boundary: a duplicate answers the first result and a different
// payload under the same id is a conflict in either bucket. Two buckets
// later it is gone, and its bucket's hash with it.
func TestRecordsAcrossBuckets(t *testing.T) {
	t.Parallel()
	r := newRecordsRig(t, rank.DefaultBoard("rb"))
	first := mustApply(t, r.s, incr("rb", "e1", "m", 5))
	mustApply(t, r.s, incr("rb", "e2", "n", 9)) // n ahead: e1's rank would change if reapplied
	for _, at := range []time.Duration{r.w - time.Millisecond, r.w, 2*r.w - time.Millisecond} {
		r.clk.Set(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC).Add(at))
		got := mustApply(t, r.s, incr("rb", "e1", "m", 5))
		if !got.Duplicate || got.Score != first.Score || got.Rank != first.Rank || got.Seq != first.Seq {
			t.Fatalf("at +%s: %+v, want a duplicate of %+v", at, got, first)
		}
		if _, err := r.apply(t, incr("rb", "e1", "m", 6)); !errors.Is(err, rank.ErrIdempotencyConflict) {
			t.Fatalf("at +%s: another payload under e1: %v, want a conflict", at, err)
		}
	}
	// Two windows after the bucket began, the record is past its window:
	// the id is new again (R4 allows that), and the first bucket is gone.
	r.clk.Set(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC).Add(2 * r.w))
	again := mustApply(t, r.s, incr("rb", "e1", "m", 5))
	if again.Duplicate || again.Score != 10 {
		t.Fatalf("two windows on: %+v, want e1 applied again (score 10)", again)
	}
	k0 := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() / r.w.Milliseconds()
	wms := strconv.FormatInt(r.w.Milliseconds(), 10)
	if n, _ := r.s.client.Exists(t.Context(), r.s.idKey("rb", "r:"+wms+"."+strconv.FormatInt(k0, 10))).Result(); n != 0 {
		t.Fatal("the bucket two buckets back is still there")
	}
	cur := r.s.idKey("rb", "r:"+wms+"."+strconv.FormatInt(k0+2, 10))
	ttl, err := r.s.client.PTTL(t.Context(), cur).Result()
	if err != nil || ttl <= 2*r.w || ttl > 2*r.w+r.w/4 {
		t.Fatalf("PTTL(%s) = %s, %v; want the end of the next bucket plus a quarter window", cur, ttl, err)
	}
}

// A window change keeps the records written under the old window: they are
// read for the old window after the change.
func TestRecordsWindowChange(t *testing.T) {
	t.Parallel()
	r := newRecordsRig(t, rank.DefaultBoard("wc"))
	first := mustApply(t, r.s, incr("wc", "e1", "m", 5))
	r.clk.Advance(time.Minute)
	b := r.b
	b.IdempotencyWindow = rank.Duration(time.Minute)
	mustPut(t, r.s, b)
	changed := r.clk.Now()
	r.clk.Advance(3 * time.Minute) // several of the new window's buckets on
	if got := mustApply(t, r.s, incr("wc", "e1", "m", 5)); !got.Duplicate || got.Seq != first.Seq {
		t.Fatalf("after the change: %+v, want a duplicate of %+v", got, first)
	}
	if r.cfg(t, "ro") != "600000" || r.cfg(t, "rw") != "60000" || r.cfg(t, "rs") != strconv.FormatInt(changed.Add(3*time.Minute).UnixMilli(), 10) {
		t.Fatalf("cfg ro %q rw %q rs %q", r.cfg(t, "ro"), r.cfg(t, "rw"), r.cfg(t, "rs"))
	}
	// New records use the new window.
	e2 := mustApply(t, r.s, incr("wc", "e2", "m", 1))
	r.clk.Advance(time.Minute + time.Second)
	if got := mustApply(t, r.s, incr("wc", "e2", "m", 1)); !got.Duplicate || got.Seq != e2.Seq {
		t.Fatalf("new record a window on: %+v, want a duplicate of %+v", got, e2)
	}
}

// A board whose tiebreak was shared holds raw "<member>" entries; after a
// change to first, a member with such an entry is still found: it moves
// from its score, not from nothing, and is on the board once.
// So on a sharded board's shards.
func TestRawEntryAfterTiebreakChange(t *testing.T) {
	t.Parallel()
	for _, shards := range []int{0, 3} {
		b := rank.DefaultBoard("raw")
		b.Tiebreak, b.Shards = rank.Shared, shards
		if shards > 1 {
			b.AckRank = rank.AckRankGlobal
		}
		r := newRecordsRig(t, b)
		mustApply(t, r.s, incr("raw", "e1", "m", 5)) // a raw entry "m"
		b.Tiebreak = rank.First
		mustPut(t, r.s, b)
		got := mustApply(t, r.s, incr("raw", "e2", "m", 2))
		if got.Score != 7 || got.PrevRank != 1 {
			t.Fatalf("shards %d: %+v, want m at 7 from rank 1", shards, got)
		}
		p, err := r.s.Top(t.Context(), "raw", "", 0, 10)
		if err != nil || len(p.Entries) != 1 || p.Entries[0].Score != 7 {
			t.Fatalf("shards %d: top %+v, %v; want m alone at 7", shards, p, err)
		}
	}
}

// A sharded board's duplicate answers the global result its follow-up
// rewrote into the shard's bucket hash (rerecord.lua).
func TestRecordsSharded(t *testing.T) {
	t.Parallel()
	b := rank.DefaultBoard("sh")
	b.Shards = 3
	r := newRecordsRig(t, b)
	var firsts []rank.Result
	for i, m := range []string{"a", "b", "c", "d", "e", "f"} {
		firsts = append(firsts, mustApply(t, r.s, incr("sh", "e"+m, m, int64(10+i))))
	}
	r.clk.Advance(r.w) // the next bucket: found in the previous one
	for i, m := range []string{"a", "b", "c", "d", "e", "f"} {
		got := mustApply(t, r.s, incr("sh", "e"+m, m, int64(10+i)))
		if f := firsts[i]; !got.Duplicate || got.Seq != f.Seq || got.Rank != f.Rank || got.Score != f.Score {
			t.Fatalf("%s: %+v, want a duplicate of %+v", m, got, f)
		}
	}
}
