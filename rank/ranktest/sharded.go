package ranktest

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

// Sharded boards (§9, R24): a sharded board and its unsharded twin, fed the
// same events, agree on every result, page, rank, neighbourhood and total.
// Shared ties are compared exactly. First/last ties across shards are
// ordered by the store's time of reaching the score (R24), which an engine
// may resolve differently from the twin's seq when two events share a
// microsecond, so there the suite compares each tie group as a set, the
// order of the group's members of one shard exactly, and holds every rank
// and neighbourhood to the sharded board's own listing.

// testShardsValidation holds on every engine: shards outside 1..64 is
// refused, and an existing board's shard count never changes.
func testShardsValidation(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	b := put(t, s, board("rt-shval", nil))
	for _, n := range []int{-1, 65} {
		for _, id := range []string{b.ID, "rt-shval-new"} {
			bad := board(id, func(b *rank.Board) { b.Shards = n })
			if _, err := s.PutBoard(ctx, bad); !errors.Is(err, rank.ErrInvalidConfig) {
				t.Errorf("PutBoard(%s) shards %d: %v, want ErrInvalidConfig", id, n, err)
			}
		}
	}
	if _, err := s.GetBoard(ctx, "rt-shval-new"); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Errorf("a refused board exists: %v", err)
	}
	for _, n := range []int{2, 16} {
		next := b
		next.Shards = n
		if _, err := s.PutBoard(ctx, next); !errors.Is(err, rank.ErrShardsFixed) {
			t.Errorf("sharding an existing board (%d): %v, want ErrShardsFixed", n, err)
		}
	}
	one := b
	one.Shards = 1 // the same count as absent: no change
	put(t, s, one)
	if got, err := s.GetBoard(ctx, b.ID); err != nil || got.ShardCount() != 1 {
		t.Fatalf("GetBoard: %+v, %v", got, err)
	}
}

// twinCase is one sharded board's config under test.
type twinCase struct {
	order  rank.Order
	mode   rank.Mode
	tie    rank.Tiebreak
	shards int
	ack    rank.AckRank
}

func testShardedTwin(t *testing.T, f Factory) {
	s := f(t, nil)
	mod := modOf(t, s)
	cases := []twinCase{
		{rank.Desc, rank.Incr, rank.Shared, 4, rank.AckRankGlobal},
		{rank.Asc, rank.Best, rank.Shared, 7, rank.AckRankNone},
		{rank.Desc, rank.Set, rank.Shared, 16, rank.AckRankGlobal},
		{rank.Desc, rank.Incr, rank.First, 4, rank.AckRankNone},
		{rank.Asc, rank.Incr, rank.Last, 3, rank.AckRankGlobal},
		{rank.Desc, rank.Best, rank.First, 64, ""}, // the default: none
	}
	var lastSeq int64
	for ci, tc := range cases {
		lastSeq = 0
		sh := board(fmt.Sprintf("rt-shard-%d", ci), func(b *rank.Board) {
			b.Order, b.Mode, b.Tiebreak, b.Shards, b.AckRank = tc.order, tc.mode, tc.tie, tc.shards, tc.ack
		})
		tw := sh
		tw.ID, tw.Shards, tw.AckRank = sh.ID+"-twin", 0, ""
		put(t, s, sh)
		put(t, s, tw)
		rng := rand.New(rand.NewPCG(uint64(ci), 0x5a4d))
		members := make([]string, 40)
		for i := range members {
			members[i] = fmt.Sprintf("m%02d", i)
		}
		for i := range 240 {
			e := rank.Event{ID: fmt.Sprintf("e%d", i), Member: members[rng.IntN(len(members))], Op: rank.OpDelta}
			if tc.mode != rank.Incr {
				e.Op = rank.OpValue
			}
			e.Amount = int64(rng.IntN(9) - 2) // few distinct scores: ties everywhere
			if rng.IntN(20) == 0 {
				e.Amount = rank.MaxScore // out_of_range on incr after a while
			}
			if rng.IntN(8) == 0 && i > 0 {
				e.ID = fmt.Sprintf("e%d", rng.IntN(i)) // a repeat: duplicate or conflict
			}
			a, errA := applyTo(t, s, sh.ID, e)
			b, errB := applyTo(t, s, tw.ID, e)
			if Kind(errA) != Kind(errB) {
				t.Fatalf("%s event %d %+v: sharded %v, twin %v", sh.ID, i, e, errA, errB)
			}
			if errA != nil {
				continue
			}
			sameAsTwin(t, sh, fmt.Sprintf("event %d %+v", i, e), a, b)
			if !a.Duplicate {
				// Seq: +1 per applied event of the board, whatever its shard.
				if a.Seq != lastSeq+1 {
					t.Fatalf("%s event %d: seq %d after %d", sh.ID, i, a.Seq, lastSeq)
				}
				lastSeq = a.Seq
				// R24: the ack's rank, when it has one, is the global one
				// right after the step; nothing else runs here, so a read
				// agrees. Without one, the read is exact all the same.
				if r := one(t, s, sh.ID, e.Member, 0); (sh.RanksInAck() && r.Rank != a.Rank) || r.Score != a.Score {
					t.Fatalf("%s event %d: ack rank %d score %d, read %d %d", sh.ID, i, a.Rank, a.Score, r.Rank, r.Score)
				}
			}
			if i%60 == 59 {
				compareTwins(t, s, sh, tw, members)
			}
		}
		// Moderation reaches the member's shard: a ban hides, a removal
		// deletes, on both boards alike.
		ctx := t.Context()
		for _, id := range []string{sh.ID, tw.ID} {
			if _, err := mod.BanMember(ctx, id, rank.Ban{Member: members[3], Reason: "twin"}); err != nil {
				t.Fatalf("BanMember(%s): %v", id, err)
			}
			if err := mod.RemoveMember(ctx, id, members[5], ""); err != nil && !errors.Is(err, rank.ErrNoEntry) {
				t.Fatalf("RemoveMember(%s): %v", id, err)
			}
		}
		applyErr(t, s, rank.Event{Board: sh.ID, ID: "after-ban", Member: members[3], Op: firstOp(tc.mode), Amount: 1}, rank.ErrBanned)
		compareTwins(t, s, sh, tw, members)
		// A global ban reaches the member's shard of the sharded board.
		if _, err := mod.PutGlobalBan(ctx, rank.Ban{Member: members[7], Reason: "twin"}); err != nil {
			t.Fatalf("PutGlobalBan: %v", err)
		}
		applyErr(t, s, rank.Event{Board: sh.ID, ID: "after-gban", Member: members[7], Op: firstOp(tc.mode), Amount: 1}, rank.ErrBanned)
		compareTwins(t, s, sh, tw, members)
		if err := mod.LiftGlobalBan(ctx, members[7]); err != nil {
			t.Fatalf("LiftGlobalBan: %v", err)
		}
		if pg := top(t, s, sh.ID, "", 0, 1); pg.Seq < lastSeq {
			t.Fatalf("%s: page seq %d below the last event's %d", sh.ID, pg.Seq, lastSeq)
		}
		for _, id := range []string{sh.ID, tw.ID} {
			if err := mod.LiftBan(ctx, id, members[3]); err != nil {
				t.Fatalf("LiftBan(%s): %v", id, err)
			}
		}
		compareTwins(t, s, sh, tw, members)
	}
}

// sameAsTwin holds result a of sharded board sh to b, its unsharded
// twin's for the same event (R24): the same score, duplicate, period and
// previous score; ranks equal with ack_rank global on shared ties (first
// and last order ties across shards by time: the caller compares a read);
// no rank and no previous rank otherwise, and the member's being new
// (Had) as the twin says.
func sameAsTwin(t *testing.T, sh rank.Board, what string, a, b rank.Result) {
	t.Helper()
	if a.Score != b.Score || a.Duplicate != b.Duplicate || a.Period != b.Period || a.Had != b.Had || a.PrevScore != b.PrevScore {
		t.Fatalf("%s %s: sharded %+v, twin %+v", sh.ID, what, a, b)
	}
	if b.Had != (b.PrevRank > 0) {
		t.Fatalf("%s %s: twin %+v: Had and PrevRank disagree", sh.ID, what, b)
	}
	switch {
	case !sh.RanksInAck():
		if a.Rank != 0 || a.PrevRank != 0 {
			t.Fatalf("%s %s: sharded %+v carries ranks without ack_rank global", sh.ID, what, a)
		}
	case (a.PrevRank == 0) != (b.PrevRank == 0) || a.Rank < 1:
		t.Fatalf("%s %s: sharded %+v, twin %+v", sh.ID, what, a, b)
	case sh.Tiebreak == rank.Shared && (a.Rank != b.Rank || a.PrevRank != b.PrevRank):
		t.Fatalf("%s %s: sharded rank %d (prev %d), twin %d (prev %d)", sh.ID, what, a.Rank, a.PrevRank, b.Rank, b.PrevRank)
	}
}

func firstOp(m rank.Mode) rank.Op {
	if m == rank.Incr {
		return rank.OpDelta
	}
	return rank.OpValue
}

func applyTo(t *testing.T, s rank.Store, board string, e rank.Event) (rank.Result, error) {
	t.Helper()
	e.Board = board
	return rank.ApplyWait(t.Context(), s, e)
}

// compareTwins reads both boards whole and every member with neighbours.
func compareTwins(t *testing.T, s rank.Store, sh, tw rank.Board, members []string) {
	t.Helper()
	exact := sh.Tiebreak == rank.Shared
	a, b := all(t, s, sh.ID, ""), all(t, s, tw.ID, "")
	if a.Total != b.Total || len(a.Entries) != int(a.Total) {
		t.Fatalf("%s: total %d (%d entries), twin %d", sh.ID, a.Total, len(a.Entries), b.Total)
	}
	if exact {
		wantEntries(t, sh.ID+" whole board", a.Entries, b.Entries...)
	} else {
		sameUpToTies(t, sh, a.Entries, b.Entries)
	}
	// Pages at odd offsets are slices of the whole listing.
	for _, w := range [][2]int{{0, 1}, {0, 10}, {3, 7}, {17, 100}, {39, 5}, {len(a.Entries), 3}} {
		pg := top(t, s, sh.ID, "", w[0], w[1])
		lo, hi := min(w[0], len(a.Entries)), min(w[0]+w[1], len(a.Entries))
		wantEntries(t, fmt.Sprintf("%s page %d+%d", sh.ID, w[0], w[1]), pg.Entries, a.Entries[lo:hi]...)
		if pg.Total != a.Total {
			t.Fatalf("%s page %d+%d: total %d, want %d", sh.ID, w[0], w[1], pg.Total, a.Total)
		}
	}
	for _, around := range []int{0, 2, 25} {
		ra := ranks(t, s, sh.ID, "", around, members...)
		rb := ranks(t, s, tw.ID, "", around, members...)
		if ra.Total != rb.Total {
			t.Fatalf("%s ranks: total %d, twin %d", sh.ID, ra.Total, rb.Total)
		}
		for i, m := range ra.Members {
			o := rb.Members[i]
			if m.Found != o.Found || m.Score != o.Score {
				t.Fatalf("%s rank of %s: %+v, twin %+v", sh.ID, m.Member, m, o)
			}
			if !m.Found {
				continue
			}
			if exact {
				if m.Rank != o.Rank {
					t.Fatalf("%s rank of %s: %d, twin %d", sh.ID, m.Member, m.Rank, o.Rank)
				}
				wantEntries(t, fmt.Sprintf("%s around %s (%d)", sh.ID, m.Member, around), m.Around, o.Around...)
				continue
			}
			// First/last: the sharded board's own listing is the reference.
			pos := slices.IndexFunc(a.Entries, func(e rank.Entry) bool { return e.Member == m.Member })
			if pos < 0 || a.Entries[pos].Rank != m.Rank {
				t.Fatalf("%s rank of %s: %d, its listing says %d", sh.ID, m.Member, m.Rank, pos+1)
			}
			lo, hi := max(0, pos-around), min(len(a.Entries), pos+around+1)
			wantEntries(t, fmt.Sprintf("%s around %s (%d)", sh.ID, m.Member, around), m.Around, a.Entries[lo:hi]...)
		}
	}
}

// sameUpToTies holds a first/last listing to its twin's: the same scores
// rank by rank, each tie group the same members, and within a group the
// members of one shard in the twin's order (exact within a shard, R24).
func sameUpToTies(t *testing.T, sh rank.Board, got, want []rank.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, twin %d", sh.ID, len(got), len(want))
	}
	for i := range got {
		if got[i].Score != want[i].Score || got[i].Rank != int64(i+1) || got[i].Name != want[i].Name {
			t.Fatalf("%s: entry %d is %s, twin %s\n%s\n%s", sh.ID, i, fmtEntries(got[i:i+1]), fmtEntries(want[i:i+1]), fmtEntries(got), fmtEntries(want))
		}
	}
	for i := 0; i < len(got); {
		j := i
		for j < len(got) && got[j].Score == got[i].Score {
			j++
		}
		for shard := range sh.ShardCount() {
			g, w := ofShard(got[i:j], shard, sh.ShardCount()), ofShard(want[i:j], shard, sh.ShardCount())
			if g != w {
				t.Fatalf("%s: score %d, shard %d: members %s, twin %s", sh.ID, got[i].Score, shard, g, w)
			}
		}
		i = j
	}
}

func ofShard(es []rank.Entry, shard, n int) string {
	var b strings.Builder
	for _, e := range es {
		if rank.ShardOf(e.Member, n) == shard {
			b.WriteString(e.Member + " ")
		}
	}
	return b.String()
}

// testShardedConfig: a sharded board's shards are fixed at creation; a sharded page
// reaches at most 10000 entries deep.
func testShardedConfig(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	b := put(t, s, board("rt-shcfg", func(b *rank.Board) { b.Shards = 8 }))
	for _, n := range []int{0, 1, 7, 64} {
		next := b
		next.Shards = n
		if _, err := s.PutBoard(ctx, next); !errors.Is(err, rank.ErrShardsFixed) {
			t.Errorf("changing shards 8 -> %d: %v, want ErrShardsFixed", n, err)
		}
	}
	// Other fields still change.
	retitled := b
	retitled.Title = "renamed"
	put(t, s, retitled)
	if got, err := s.GetBoard(ctx, b.ID); err != nil || got != retitled {
		t.Fatalf("GetBoard after retitle: %+v, %v", got, err)
	}
	var g ids
	apply(t, s, delta(b.ID, g.next(), "m1", 5))
	if _, err := s.Top(ctx, b.ID, "", 9990, 11); !errors.Is(err, rank.ErrBadRequest) {
		t.Errorf("page past 10000 on a sharded board: %v, want ErrBadRequest", err)
	}
	if pg := top(t, s, b.ID, "", 9900, 100); pg.Total != 1 || len(pg.Entries) != 0 {
		t.Errorf("page at 9900+100: %+v", pg)
	}
	// Deleting a sharded board removes every shard's data.
	if err := s.DeleteBoard(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	put(t, s, b)
	if pg := top(t, s, b.ID, "", 0, 10); pg.Total != 0 || len(pg.Entries) != 0 {
		t.Errorf("re-created sharded board has data: %+v", pg)
	}
}

// testShardedPeriods: periods, `at` and grace (R17), max_submissions (R18)
// and idempotency on a sharded board and its twin, across a period
// boundary, on the store's (injected) clock.
func testShardedPeriods(t *testing.T, f Factory) {
	for _, ack := range []rank.AckRank{rank.AckRankNone, rank.AckRankGlobal} {
		t.Run(string(ack), func(t *testing.T) { shardedPeriods(t, f, ack) })
	}
}

func shardedPeriods(t *testing.T, f Factory, ack rank.AckRank) {
	anchor := skewedAnchor().Truncate(time.Hour).Add(50 * time.Minute)
	clk := NewClock(anchor)
	s := f(t, clk.Now)
	sh := put(t, s, board("rt-shper", func(b *rank.Board) {
		b.Reset, b.Shards, b.Tiebreak, b.AckRank = rank.Hourly, 5, rank.Shared, ack
		b.MaxSubmissions, b.Grace = 4, rank.Duration(2*time.Minute)
	}))
	tw := sh
	tw.ID, tw.Shards, tw.AckRank = "rt-shper-twin", 0, ""
	put(t, s, tw)
	rng := rand.New(rand.NewPCG(7, 0x5a4d))
	members := make([]string, 12)
	for i := range members {
		members[i] = fmt.Sprintf("p%02d", i)
	}
	for i := range 160 {
		if i%20 == 19 {
			clk.Advance(3 * time.Minute) // crosses the hour at i = 79
		}
		e := rank.Event{ID: fmt.Sprintf("e%d", i), Member: members[rng.IntN(len(members))], Op: rank.OpDelta, Amount: int64(rng.IntN(7) - 1)}
		if rng.IntN(6) == 0 {
			e.At = clk.Now().Add(-time.Duration(rng.IntN(8)) * time.Minute).Truncate(time.Millisecond)
		}
		if rng.IntN(10) == 0 && i > 0 {
			e.ID = fmt.Sprintf("e%d", rng.IntN(i))
		}
		a, errA := applyTo(t, s, sh.ID, e)
		b, errB := applyTo(t, s, tw.ID, e)
		if Kind(errA) != Kind(errB) {
			t.Fatalf("event %d %+v: sharded %v, twin %v", i, e, errA, errB)
		}
		if errA == nil {
			sameAsTwin(t, sh, fmt.Sprintf("event %d %+v", i, e), a, b)
		}
	}
	for _, sel := range []rank.PeriodSel{"", "previous"} {
		a, b := all(t, s, sh.ID, sel), all(t, s, tw.ID, sel)
		if a.Period != b.Period || a.Total != b.Total {
			t.Fatalf("period %q: sharded period %d total %d, twin %d %d", sel, a.Period, a.Total, b.Period, b.Total)
		}
		wantEntries(t, fmt.Sprintf("%s period %q", sh.ID, sel), a.Entries, b.Entries...)
		ra, rb := ranks(t, s, sh.ID, sel, 3, members...), ranks(t, s, tw.ID, sel, 3, members...)
		for i := range ra.Members {
			x, y := ra.Members[i], rb.Members[i]
			if x.Found != y.Found || x.Rank != y.Rank || x.Score != y.Score {
				t.Fatalf("period %q %s: sharded %+v, twin %+v", sel, x.Member, x, y)
			}
			wantEntries(t, fmt.Sprintf("period %q around %s", sel, x.Member), x.Around, y.Around...)
		}
	}
	if n, err := s.Count(t.Context(), sh.ID); err != nil || n != all(t, s, tw.ID, "").Total {
		t.Fatalf("Count: %d, %v", n, err)
	}
	// A ban with an until, on the store clock: hidden, then back once it
	// passes, on the page read first after it.
	mod := modOf(t, s)
	cur := all(t, s, tw.ID, "")
	if len(cur.Entries) == 0 {
		t.Fatal("no entries in the current period")
	}
	m := cur.Entries[0].Member
	for _, id := range []string{sh.ID, tw.ID} {
		if _, err := mod.BanMember(t.Context(), id, rank.Ban{Member: m, Reason: "r", Until: clk.Now().Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if a := all(t, s, sh.ID, ""); a.Total != cur.Total-1 {
		t.Fatalf("banned %s still counted: total %d of %d", m, a.Total, cur.Total)
	}
	clk.Advance(2 * time.Minute)
	a := all(t, s, sh.ID, "")
	wantEntries(t, "after the ban's until", a.Entries, all(t, s, tw.ID, "").Entries...)
	wantEntries(t, "after the ban's until, as before it", a.Entries, cur.Entries...)
}

// testShardedSkew: the best members all on one shard, so a merged page
// needs far more than its share of that shard (an engine that reads a
// share per shard must read again), at every offset.
func testShardedSkew(t *testing.T, f Factory) {
	s := f(t, nil)
	sh := put(t, s, board("rt-skew", func(b *rank.Board) { b.Shards = 4 }))
	tw := sh
	tw.ID, tw.Shards = "rt-skew-twin", 0
	put(t, s, tw)
	var hot, cold []string
	for i := 0; len(hot) < 60 || len(cold) < 60; i++ {
		m := fmt.Sprintf("k%03d", i)
		if rank.ShardOf(m, 4) == 2 {
			hot = append(hot, m)
		} else {
			cold = append(cold, m)
		}
	}
	var g ids
	for i := range 60 {
		for _, id := range []string{sh.ID, tw.ID} {
			apply(t, s, delta(id, g.next(), hot[i], int64(1000+i)))
			apply(t, s, delta(id, g.next(), cold[i], int64(i)))
		}
	}
	for _, w := range [][2]int{{0, 1}, {0, 10}, {0, 30}, {5, 50}, {55, 10}, {0, 100}, {59, 2}, {100, 30}} {
		a, b := top(t, s, sh.ID, "", w[0], w[1]), top(t, s, tw.ID, "", w[0], w[1])
		wantEntries(t, fmt.Sprintf("skewed page %d+%d", w[0], w[1]), a.Entries, b.Entries...)
		if a.Total != b.Total {
			t.Fatalf("skewed page: total %d, twin %d", a.Total, b.Total)
		}
	}
	ra, rb := ranks(t, s, sh.ID, "", 25, hot[0], hot[59], cold[59], cold[0]), ranks(t, s, tw.ID, "", 25, hot[0], hot[59], cold[59], cold[0])
	for i := range ra.Members {
		x, y := ra.Members[i], rb.Members[i]
		if x.Rank != y.Rank || x.Score != y.Score {
			t.Fatalf("skewed rank of %s: %+v, twin %+v", x.Member, x, y)
		}
		wantEntries(t, "skewed around "+x.Member, x.Around, y.Around...)
	}
}

// testShardedAckRank: R24 v1.3. ack_rank is refused on an unsharded board
// and takes none or global. A sharded board's acks carry no rank and no
// previous rank by default (none), and everything else as an unsharded
// board's: the score, whether the member was new and its previous score,
// a seq one above the board's last however many events run at once (each
// seq taken once), and a duplicate answering the first result; reads stay
// exact. With global the acks carry the global ranks a read right after
// gives; a change back and forth keeps every earlier event's duplicate
// answer as it was first given.
func testShardedAckRank(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	for _, n := range []int{0, 1} {
		for _, ar := range []rank.AckRank{rank.AckRankNone, rank.AckRankGlobal} {
			b := board("rt-ack-flat", func(b *rank.Board) { b.Shards, b.AckRank = n, ar })
			if _, err := s.PutBoard(ctx, b); !errors.Is(err, rank.ErrInvalidConfig) || !strings.Contains(err.Error(), "ack_rank") {
				t.Errorf("ack_rank %q on a board of %d shards: %v, want ErrInvalidConfig naming ack_rank", ar, n, err)
			}
		}
	}
	if _, err := s.PutBoard(ctx, board("rt-ack-bogus", func(b *rank.Board) { b.Shards, b.AckRank = 3, "exact" })); !errors.Is(err, rank.ErrInvalidConfig) || !strings.Contains(err.Error(), "ack_rank") {
		t.Errorf("ack_rank exact: %v, want ErrInvalidConfig naming ack_rank", err)
	}
	sh := put(t, s, board("rt-ack", func(b *rank.Board) { b.Shards = 6 }))
	score := map[string]int64{}
	var lastSeq int64
	var g ids
	type sent struct {
		e rank.Event
		r rank.Result
	}
	var history []sent
	check := func(what string, e rank.Event, r rank.Result, ranked bool) {
		t.Helper()
		old, had := score[e.Member]
		score[e.Member] = old + e.Amount
		if r.Duplicate || r.Score != old+e.Amount || r.Had != had || (had && r.PrevScore != old) || r.Seq != lastSeq+1 {
			t.Fatalf("%s %+v: %+v; want score %d from %d (had %v), seq %d", what, e, r, old+e.Amount, old, had, lastSeq+1)
		}
		lastSeq = r.Seq
		read := one(t, s, sh.ID, e.Member, 0)
		switch {
		case !read.Found || read.Score != r.Score:
			t.Fatalf("%s %+v: read %+v after ack %+v", what, e, read, r)
		case ranked && (r.Rank != read.Rank || (had != (r.PrevRank > 0))):
			t.Fatalf("%s %+v: ack %+v, read rank %d", what, e, r, read.Rank)
		case !ranked && (r.Rank != 0 || r.PrevRank != 0):
			t.Fatalf("%s %+v: ack %+v carries ranks with ack_rank none", what, e, r)
		}
		history = append(history, sent{e, r})
	}
	round := func(what string, ranked bool) {
		for i := range 40 {
			e := delta(sh.ID, g.next(), fmt.Sprintf("a%02d", (i*7)%25), int64(i%5))
			check(what, e, apply(t, s, e), ranked)
		}
		// Many at once, on every shard: each seq once, the board's total
		// equal to the sum of the acks' moves.
		const n = 60
		res := make([]rank.Result, n)
		evs := make([]rank.Event, n)
		done := make(chan int, n)
		for i := range n {
			evs[i] = delta(sh.ID, g.next(), fmt.Sprintf("c%02d", i), int64(i+1))
			go func() {
				r, err := rank.ApplyWait(ctx, s, evs[i])
				if err != nil {
					t.Errorf("concurrent %+v: %v", evs[i], err)
				}
				res[i] = r
				done <- i
			}()
		}
		for range n {
			<-done
		}
		seen := map[int64]bool{}
		for i, r := range res {
			if r.Seq <= lastSeq || r.Seq > lastSeq+n || seen[r.Seq] || (!ranked && r.Rank != 0) || (ranked && r.Rank < 1) {
				t.Fatalf("%s concurrent %d: %+v (seqs from %d)", what, i, r, lastSeq+1)
			}
			seen[r.Seq] = true
			score[evs[i].Member] += evs[i].Amount
			history = append(history, sent{evs[i], r})
		}
		lastSeq += n
		// Every earlier event's duplicate answers its first result.
		for _, h := range history {
			d := apply(t, s, h.e)
			want := h.r
			want.Duplicate = true
			if d != want {
				t.Fatalf("%s: duplicate of %+v: %+v, want %+v", what, h.e, d, want)
			}
		}
	}
	round("none", false)
	sh.AckRank = rank.AckRankGlobal
	put(t, s, sh)
	round("global", true)
	sh.AckRank = rank.AckRankNone
	put(t, s, sh)
	round("none again", false)
	if p := all(t, s, sh.ID, ""); p.Seq != lastSeq {
		t.Fatalf("the board's seq %d, want %d", p.Seq, lastSeq)
	}
}
