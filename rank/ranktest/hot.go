package ranktest

// Hot boards (§8, R22): decayed scores in thousandths, ranks by them with
// ties shared, buckets on the store's clock, `at` in its own bucket, members
// leaving when their last event leaves the window, and a differential test
// against the reference formula across many bucket boundaries.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// hotAnchor is a store time ten minutes into an hour, hours away from the
// real clock: buckets of an hour or less start on the hour.
func hotAnchor() time.Time {
	return skewedAnchor().Truncate(time.Hour).Add(10 * time.Minute)
}

func hotBoard(id string, bucket time.Duration, buckets int, factor float64) rank.Board {
	return board(id, func(b *rank.Board) {
		b.Tiebreak = rank.Shared
		b.Decay = rank.Decay{Bucket: rank.Duration(bucket), Buckets: buckets, Factor: factor}
	})
}

// testHotScores: the formula by hand on a 1h × 3 board with factor 0.5.
func testHotScores(t *testing.T, f Factory) {
	clk := NewClock(hotAnchor())
	s := f(t, clk.Now)
	b := put(t, s, hotBoard("rt-hot", time.Hour, 3, 0.5))
	var g ids
	r := apply(t, s, delta(b.ID, g.next(), "ann", 10))
	if r.Score != 10_000 || r.Rank != 1 || r.PrevRank != 0 || r.Decimals != 3 {
		t.Fatalf("first event: %+v, want score 10000 (10.000), rank 1, decimals 3", r)
	}
	apply(t, s, delta(b.ID, g.next(), "bob", 4))
	wantTop(t, s, b.ID, ent(1, "ann", 10_000), ent(2, "bob", 4_000))
	if pg := top(t, s, b.ID, "", 0, 10); pg.Decimals != 3 {
		t.Fatalf("Top decimals %d, want 3", pg.Decimals)
	}

	clk.Advance(time.Hour) // one bucket back: × 0.5
	wantTop(t, s, b.ID, ent(1, "ann", 5_000), ent(2, "bob", 2_000))
	r = apply(t, s, delta(b.ID, g.next(), "bob", 4))
	if r.Score != 6_000 || r.Rank != 1 || r.PrevRank != 2 || r.PrevScore != 2_000 {
		t.Fatalf("bob after the boundary: %+v, want score 6000 rank 1 (prev rank 2, 2000)", r)
	}
	rs := ranks(t, s, b.ID, "", 1, "ann")
	if m := rs.Members[0]; !m.Found || m.Rank != 2 || m.Score != 5_000 || rs.Decimals != 3 {
		t.Fatalf("Ranks(ann) = %+v (decimals %d), want rank 2 score 5000", m, rs.Decimals)
	}

	clk.Advance(time.Hour) // ann: 10 × 0.25; bob: 4 × 0.25 + 4 × 0.5
	wantTop(t, s, b.ID, ent(1, "bob", 3_000), ent(2, "ann", 2_500))
	// Ties are shared: cid reaches bob's 3.000 exactly.
	apply(t, s, delta(b.ID, g.next(), "cid", 3))
	wantTop(t, s, b.ID, ent(1, "cid", 3_000), ent(1, "bob", 3_000), ent(3, "ann", 2_500))

	clk.Advance(time.Hour) // ann's only bucket leaves the window: ann leaves the board
	wantTop(t, s, b.ID, ent(1, "cid", 1_500), ent(2, "bob", 1_000))
}

// testHotOrderAndLeave: ranks follow the decayed score (a member can fall
// below another without any event), a member whose events all left the
// window leaves the board, and decimals round half away from zero.
func testHotOrderAndLeave(t *testing.T, f Factory) {
	clk := NewClock(hotAnchor())
	s := f(t, clk.Now)
	ctx := t.Context()
	b := put(t, s, hotBoard("rt-hot-leave", 15*time.Minute, 2, 0.3))
	var g ids
	apply(t, s, delta(b.ID, g.next(), "old", 100))
	clk.Advance(15 * time.Minute)
	r := apply(t, s, delta(b.ID, g.next(), "new", 31))
	if r.Rank != 1 {
		t.Fatalf("new with 31 against old's 30: rank %d, want 1", r.Rank)
	}
	// 0.3 × 100 = 30.000000000000004 in binary: still 30.000.
	wantTop(t, s, b.ID, ent(1, "new", 31_000), ent(2, "old", 30_000))
	r = apply(t, s, delta(b.ID, g.next(), "neg", -7))
	if r.Score != -7_000 || r.Rank != 3 {
		t.Fatalf("negative delta: %+v, want -7000 rank 3", r)
	}
	if n, err := s.Count(ctx, b.ID); err != nil || n != 3 {
		t.Fatalf("Count = %d, %v; want 3", n, err)
	}
	clk.Advance(15 * time.Minute)
	wantTop(t, s, b.ID, ent(1, "new", 9_300), ent(2, "neg", -2_100))
	if m := one(t, s, b.ID, "old", 2); m.Found {
		t.Fatalf("old after its bucket left the window: %+v, want absent", m)
	}
	if n, err := s.Count(ctx, b.ID); err != nil || n != 2 {
		t.Fatalf("Count = %d, %v; want 2", n, err)
	}
	// Back on the board with a fresh event, without its old bucket.
	r = apply(t, s, delta(b.ID, g.next(), "old", 1))
	if r.Score != 1_000 || r.PrevRank != 0 {
		t.Fatalf("old again: %+v, want 1000 as a new member", r)
	}
	// A sum of 0 in the window keeps a member on the board with 0.000.
	apply(t, s, delta(b.ID, g.next(), "zero", 5))
	apply(t, s, delta(b.ID, g.next(), "zero", -5))
	if m := one(t, s, b.ID, "zero", 0); !m.Found || m.Score != 0 {
		t.Fatalf("zero: %+v, want on the board with 0", m)
	}
}

// testHotAt: an event's `at` lands in its own bucket (older buckets weigh
// less), one a little ahead counts in the current bucket, and one whose
// bucket has left the window is board_closed and changes nothing.
func testHotAt(t *testing.T, f Factory) {
	clk := NewClock(hotAnchor())
	s := f(t, clk.Now)
	b := put(t, s, hotBoard("rt-hot-at", time.Hour, 3, 0.5))
	var g ids
	now := clk.Now()
	r := apply(t, s, at(delta(b.ID, g.next(), "ann", 8), now.Add(-time.Hour)))
	if r.Score != 4_000 {
		t.Fatalf("at one bucket back: score %d, want 4000", r.Score)
	}
	r = apply(t, s, at(delta(b.ID, g.next(), "ann", 8), now.Add(-2*time.Hour)))
	if r.Score != 6_000 {
		t.Fatalf("at two buckets back: score %d, want 6000", r.Score)
	}
	// Ahead by less than MaxAhead, across the boundary: the current bucket.
	clk.Set(now.Truncate(time.Hour).Add(time.Hour - time.Second))
	r = apply(t, s, at(delta(b.ID, g.next(), "bob", 1), clk.Now().Add(3*time.Second)))
	if r.Score != 1_000 {
		t.Fatalf("at ahead: score %d, want 1000 (the current bucket)", r.Score)
	}
	before := snapshot(t, s, b.ID)
	applyClosed(t, s, at(delta(b.ID, g.next(), "ann", 8), now.Add(-3*time.Hour)), rank.ClosedError{Reason: rank.ClosedOutsideWindow})
	if after := snapshot(t, s, b.ID); after != before {
		t.Fatalf("a refused event changed the board:\n%s\nwas\n%s", after, before)
	}
	// The bucket sum is bounded so the decayed score stays exact on the wire.
	applyErr(t, s, delta(b.ID, g.next(), "big", rank.MaxHotBucketSum+1), rank.ErrOutOfRange)
	apply(t, s, delta(b.ID, g.next(), "big", rank.MaxHotBucketSum))
	applyErr(t, s, delta(b.ID, g.next(), "big", 1), rank.ErrOutOfRange)
}

// testHotConfig: decay validation (400 naming the field) and a decay that
// cannot change on an existing board.
func testHotConfig(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	good := hotBoard("rt-hot-cfg", time.Hour, 24, 0.9)
	bad := map[string]func(b *rank.Board){
		"mode best":      func(b *rank.Board) { b.Mode = rank.Best },
		"reset daily":    func(b *rank.Board) { b.Reset = rank.Daily },
		"bucket 7m":      func(b *rank.Board) { b.Decay.Bucket = rank.Duration(7 * time.Minute) },
		"bucket 30s":     func(b *rank.Board) { b.Decay.Bucket = rank.Duration(30 * time.Second) },
		"bucket 48h":     func(b *rank.Board) { b.Decay.Bucket = rank.Duration(48 * time.Hour) },
		"buckets 0":      func(b *rank.Board) { b.Decay.Buckets = 0 },
		"buckets 401":    func(b *rank.Board) { b.Decay.Buckets = rank.MaxDecayBuckets + 1 },
		"factor 0":       func(b *rank.Board) { b.Decay.Factor = 0 },
		"factor 1":       func(b *rank.Board) { b.Decay.Factor = 1 },
		"factor -0.5":    func(b *rank.Board) { b.Decay.Factor = -0.5 },
		"tiebreak first": func(b *rank.Board) { b.Tiebreak = rank.First },
	}
	for name, mut := range bad {
		c := good
		mut(&c)
		field := "field decay"
		if name == "tiebreak first" {
			field = "field tiebreak"
		}
		if _, err := s.PutBoard(ctx, c); !errors.Is(err, rank.ErrInvalidConfig) {
			t.Errorf("%s: PutBoard error %v, want ErrInvalidConfig", name, err)
		} else if !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v does not name %s", name, err, field)
		}
	}
	if _, err := s.GetBoard(ctx, good.ID); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("a refused config created the board: %v", err)
	}
	put(t, s, good)
	changed := good
	changed.Decay.Factor = 0.8
	if _, err := s.PutBoard(ctx, changed); !errors.Is(err, rank.ErrInvalidConfig) {
		t.Fatalf("changing decay: %v, want ErrInvalidConfig", err)
	}
	plain := good
	plain.Decay = rank.Decay{}
	if _, err := s.PutBoard(ctx, plain); !errors.Is(err, rank.ErrInvalidConfig) {
		t.Fatalf("removing decay: %v, want ErrInvalidConfig", err)
	}
	good.Title = "other fields change freely"
	put(t, s, good)
	if got, err := s.GetBoard(ctx, good.ID); err != nil || got != good {
		t.Fatalf("GetBoard = %+v, %v; want %+v", got, err, good)
	}
}

// hotModel is the reference of a hot board: every applied event's bucket
// and delta, scored with rank.Decay.DecayedScore at read time.
type hotModel struct {
	d    rank.Decay
	sums map[string]map[int64]int64
}

func (m *hotModel) add(member string, bucket, delta int64) {
	if m.sums[member] == nil {
		m.sums[member] = map[int64]int64{}
	}
	m.sums[member][bucket] += delta
}

// top is the board as the formula says at bucket cur: members with an
// event in the window, by score (desc), equal scores by member id in
// descending byte order (the engines' order among shared ties), ranks
// shared.
func (m *hotModel) top(cur int64) []rank.Entry {
	var out []rank.Entry
	for member, sums := range m.sums {
		ks, in := m.d.HotSums(sums, cur)
		if in {
			out = append(out, rank.Entry{Member: member, Score: m.d.DecayedScore(ks)})
		}
	}
	slices.SortFunc(out, func(a, b rank.Entry) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(b.Member, a.Member)
	})
	for i := range out {
		out[i].Rank = int64(i + 1)
		if i > 0 && out[i].Score == out[i-1].Score {
			out[i].Rank = out[i-1].Rank
		}
	}
	return out
}

// HotDifferential applies n random events (random deltas, some with `at`
// in older buckets, the clock moving by random steps across many bucket
// boundaries) to a hot board of s, whose clock clk must drive, and
// compares the whole board with the reference formula after every step
// that crosses a boundary and every tenth event, plus each ack's score and
// rank. Scores must be equal exactly: both the engines and the reference
// compute rank.Decay.DecayedScore from the member's bucket sums, so there
// is no drift to tolerate. The Fuzz targets of the engines call it.
func HotDifferential(t testing.TB, s rank.Store, clk *Clock, boardID string, seed uint64, n int) {
	t.Helper()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	buckets := 1 + rng.IntN(6)
	factors := []float64{0.5, 0.9, 0.3, 0.75, 0.123}
	b := hotBoard(boardID, 15*time.Minute, buckets, factors[rng.IntN(len(factors))])
	if _, err := s.PutBoard(ctx, b); err != nil {
		t.Fatalf("PutBoard: %v", err)
	}
	model := &hotModel{d: b.Decay, sums: map[string]map[int64]int64{}}
	members := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	check := func(step int) {
		t.Helper()
		now := clk.Now()
		want := model.top(b.Decay.BucketAt(now))
		pg, err := s.Top(ctx, boardID, "", 0, 100)
		if err != nil {
			t.Fatalf("step %d: Top: %v", step, err)
		}
		if !sameEntries(pg.Entries, want) || pg.Total != int64(len(want)) {
			t.Fatalf("step %d (%s, buckets %d, factor %v): board %s total %d, want %s",
				step, now.Format(time.TimeOnly), b.Decay.Buckets, b.Decay.Factor, fmtEntries(pg.Entries), pg.Total, fmtEntries(want))
		}
	}
	for i := range n {
		if rng.IntN(8) == 0 {
			before := b.Decay.BucketAt(clk.Now())
			clk.Advance(time.Duration(rng.IntN(40)) * time.Minute)
			if b.Decay.BucketAt(clk.Now()) != before {
				check(i)
			}
		}
		now := clk.Now()
		member := members[rng.IntN(len(members))]
		e := delta(boardID, fmt.Sprintf("h%d", i), member, int64(rng.IntN(2001)-1000))
		if rng.IntN(5) == 0 {
			e.At = now.Add(-time.Duration(rng.IntN(int(time.Duration(buckets)*15*time.Minute/time.Second))) * time.Second)
		}
		tm := now
		if !e.At.IsZero() {
			tm = e.At
		}
		bucket, admit := b.Decay.HotBucket(tm, now)
		r, err := rank.ApplyWait(ctx, s, e)
		if admit != nil {
			if !errors.Is(err, rank.ErrBoardClosed) {
				t.Fatalf("event %d (at %s, now %s): %v, want board_closed", i, tm, now, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		model.add(member, bucket, e.Amount)
		want := model.top(b.Decay.BucketAt(now))
		k := slices.IndexFunc(want, func(x rank.Entry) bool { return x.Member == member })
		if k < 0 || r.Score != want[k].Score || r.Rank != want[k].Rank || r.Decimals != rank.HotDecimals {
			t.Fatalf("event %d: ack %+v, want %+v", i, r, want[max(k, 0)])
		}
		if i%10 == 0 {
			check(i)
		}
	}
	check(n)
}

// testHotDifferential runs HotDifferential on a few seeds.
func testHotDifferential(t *testing.T, f Factory) {
	for seed := range uint64(4) {
		clk := NewClock(hotAnchor())
		s := f(t, clk.Now)
		HotDifferential(t, s, clk, fmt.Sprintf("rt-hot-diff-%d", seed), seed, 600)
	}
}

// testHotBans: a member banned from a hot board is hidden across a bucket
// boundary and comes back, on lift, with its decayed score of the bucket
// the lift happens in; removal drops its sums too.
func testHotBans(t *testing.T, f Factory) {
	clk := NewClock(hotAnchor())
	s := f(t, clk.Now)
	mod := modOf(t, s)
	ctx := t.Context()
	b := put(t, s, hotBoard("rt-hot-ban", time.Hour, 3, 0.5))
	var g ids
	apply(t, s, delta(b.ID, g.next(), "ann", 10))
	apply(t, s, delta(b.ID, g.next(), "bob", 6))
	if _, err := mod.BanMember(ctx, b.ID, rank.Ban{Member: "ann", Reason: "test"}); err != nil {
		t.Fatalf("BanMember: %v", err)
	}
	wantTop(t, s, b.ID, ent(1, "bob", 6_000))
	clk.Advance(time.Hour)
	wantTop(t, s, b.ID, ent(1, "bob", 3_000))
	clk.Advance(time.Hour)
	if err := mod.LiftBan(ctx, b.ID, "ann"); err != nil {
		t.Fatalf("LiftBan: %v", err)
	}
	wantTop(t, s, b.ID, ent(1, "ann", 2_500), ent(2, "bob", 1_500))
	if err := mod.RemoveMember(ctx, b.ID, "ann", ""); err != nil {
		t.Fatalf("RemoveMember: %v", err)
	}
	wantTop(t, s, b.ID, ent(1, "bob", 1_500))
	// ann's sums went with its entry: a new event starts from nothing
	// (kept sums would make it 10 × 0.25 + 1).
	r := apply(t, s, delta(b.ID, g.next(), "ann", 1))
	if r.Score != 1_000 || r.PrevRank != 0 || r.Rank != 2 {
		t.Fatalf("ann after removal: %+v, want 1000 at rank 2 as a new member", r)
	}
	clk.Advance(time.Hour) // bob's one bucket leaves the window
	wantTop(t, s, b.ID, ent(1, "ann", 500))
}
