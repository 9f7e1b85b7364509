package ranktest

// Cohorts and leagues (§12, R27): placement in order of arrival, the size
// cap under concurrent placement, ranks and pages within a cohort, the
// global standings, and tier moves once per final period, checked against
// a model over many periods of an injected clock.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

func cohortBoard(id string, size int) rank.Board {
	return board(id, func(b *rank.Board) { b.Cohort = rank.Cohort{Size: size} })
}

func leagueBoard(id string, size, promote, demote int, tiers ...string) rank.Board {
	lt, _ := rank.LeagueTiersOf(tiers...)
	return board(id, func(b *rank.Board) {
		b.Reset = "1m"
		b.Cohort = rank.Cohort{Size: size}
		b.League = rank.League{Tiers: lt, Promote: promote, Demote: demote}
	})
}

func cohortTop(t *testing.T, s rank.Store, id string, p rank.PeriodSel, cohort string, offset, limit int) rank.Page {
	t.Helper()
	pg, err := s.CohortTop(t.Context(), id, p, cohort, offset, limit)
	if err != nil {
		t.Fatalf("CohortTop(%s, %q, %s, %d, %d): %v", id, p, cohort, offset, limit, err)
	}
	return pg
}

func memberTier(t *testing.T, s rank.Store, id string, p rank.PeriodSel, member string) string {
	t.Helper()
	tier, err := s.MemberTier(t.Context(), id, p, member)
	if err != nil {
		t.Fatalf("MemberTier(%s, %q, %s): %v", id, p, member, err)
	}
	return tier
}

// testCohortValidation: the config rules of §12, and cohort and league
// fixed at creation; a refused config changes nothing.
func testCohortValidation(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	tiers := func(names ...string) rank.LeagueTiers { lt, _ := rank.LeagueTiersOf(names...); return lt }
	ok := leagueBoard("rt-cv", 10, 2, 3, "bronze", "silver", "gold")
	bad := map[string]func(b *rank.Board){
		"size 1":                  func(b *rank.Board) { b.Cohort.Size = 1 },
		"size 1001":               func(b *rank.Board) { b.Cohort.Size = 1001 },
		"size negative":           func(b *rank.Board) { b.Cohort.Size = -2 },
		"league without cohort":   func(b *rank.Board) { b.Cohort = rank.Cohort{} },
		"league without reset":    func(b *rank.Board) { b.Reset = rank.None },
		"league with grace":       func(b *rank.Board) { b.Grace = rank.Duration(time.Second) },
		"one tier":                func(b *rank.Board) { b.League.Tiers = tiers("gold") },
		"repeated tier":           func(b *rank.Board) { b.League.Tiers = tiers("gold", "silver", "gold") },
		"bad tier name":           func(b *rank.Board) { b.League.Tiers = tiers("bronze", "sil ver") },
		"empty tier name":         func(b *rank.Board) { b.League.Tiers = tiers("bronze", "") },
		"promote = size":          func(b *rank.Board) { b.League.Promote = 10 },
		"demote negative":         func(b *rank.Board) { b.League.Demote = -1 },
		"promote + demote > size": func(b *rank.Board) { b.League.Promote, b.League.Demote = 6, 5 },
		"sharded":                 func(b *rank.Board) { b.Shards = 2 },
		"hot": func(b *rank.Board) {
			b.Decay = rank.Decay{Bucket: rank.Duration(time.Minute), Buckets: 2, Factor: 0.5}
			b.Tiebreak = rank.Shared
			b.Reset, b.League = rank.None, rank.League{}
		},
	}
	for name, mut := range bad {
		b := ok
		mut(&b)
		if _, err := s.PutBoard(ctx, b); !errors.Is(err, rank.ErrInvalidConfig) {
			t.Errorf("%s: PutBoard = %v, want ErrInvalidConfig", name, err)
		}
		if _, err := s.GetBoard(ctx, b.ID); !errors.Is(err, rank.ErrUnknownBoard) {
			t.Errorf("%s: a refused config was stored (%v)", name, err)
		}
	}
	put(t, s, ok)
	// Fixed at creation: read_only (ErrCohortFixed), the stored config kept.
	for name, mut := range map[string]func(b *rank.Board){
		"size":    func(b *rank.Board) { b.Cohort.Size = 11 },
		"promote": func(b *rank.Board) { b.League.Promote = 1 },
		"tiers":   func(b *rank.Board) { b.League.Tiers = tiers("bronze", "gold") },
		"none":    func(b *rank.Board) { b.Cohort, b.League = rank.Cohort{}, rank.League{} },
	} {
		b := ok
		mut(&b)
		if _, err := s.PutBoard(ctx, b); !errors.Is(err, rank.ErrCohortFixed) {
			t.Errorf("changing %s: PutBoard = %v, want ErrCohortFixed", name, err)
		}
	}
	if got, err := s.GetBoard(ctx, ok.ID); err != nil || got != ok {
		t.Fatalf("after refused changes: %+v, %v; want %+v", got, err, ok)
	}
	renamed := ok
	renamed.Title = "weekly league"
	put(t, s, renamed) // other fields still change
	// A cohort board is no derived board's source.
	union := board("rt-cv-u", func(b *rank.Board) { b.Source = rank.UnionOf([]string{ok.ID}, nil); b.Group = ok.ID })
	if _, err := s.PutBoard(ctx, union); !errors.Is(err, rank.ErrInvalidConfig) {
		t.Fatalf("a union over a cohort board: %v, want ErrInvalidConfig", err)
	}
	// Reads that need cohorts refuse a board without them.
	plain := put(t, s, board("rt-cv-plain", nil))
	if _, err := s.CohortTop(ctx, plain.ID, "", "1", 0, 10); !errors.Is(err, rank.ErrBadRequest) {
		t.Fatalf("CohortTop of a board without cohorts: %v, want ErrBadRequest", err)
	}
	if tier := memberTier(t, s, plain.ID, "", "a"); tier != "" {
		t.Fatalf("MemberTier on a board without a league: %q", tier)
	}
}

// testCohortArrival: cohorts fill in order of arrival; acks, member reads
// and pages are within the cohort, the board's own top stays global.
func testCohortArrival(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	b := put(t, s, cohortBoard("rt-co", 3))
	var g ids
	// Scores chosen so the global order interleaves the cohorts.
	scores := []int64{10, 70, 40, 60, 20, 50, 30}
	for i, sc := range scores {
		m := fmt.Sprintf("m%d", i)
		r := apply(t, s, delta(b.ID, g.next(), m, sc))
		if want := strconv.Itoa(i/3 + 1); r.Cohort != want || r.Tier != "" {
			t.Fatalf("%s's ack: cohort %q tier %q, want %q and no tier", m, r.Cohort, r.Tier, want)
		}
	}
	// Cohort 1 is m0 m1 m2 (10, 70, 40): m1 first, m2, m0.
	r := apply(t, s, delta(b.ID, "again", "m0", 50)) // 60: passes m2, not m1
	if r.Cohort != "1" || r.Rank != 2 || r.PrevRank != 3 || r.Score != 60 {
		t.Fatalf("m0 to 60: %+v, want cohort 1 rank 2 prev 3", r)
	}
	if dup := apply(t, s, delta(b.ID, "again", "m0", 50)); !dup.Duplicate || dup.Cohort != "1" || dup.Rank != 2 {
		t.Fatalf("the duplicate: %+v, want the first result with its cohort", dup)
	}
	wantEntries(t, "cohort 1", cohortTop(t, s, b.ID, "", "1", 0, 10).Entries,
		ent(1, "m1", 70), ent(2, "m0", 60), ent(3, "m2", 40))
	wantEntries(t, "cohort 2", cohortTop(t, s, b.ID, "", "2", 0, 10).Entries,
		ent(1, "m3", 60), ent(2, "m5", 50), ent(3, "m4", 20))
	pg := cohortTop(t, s, b.ID, "", "3", 0, 10)
	wantEntries(t, "cohort 3", pg.Entries, ent(1, "m6", 30))
	if pg.Total != 1 {
		t.Fatalf("cohort 3 total %d, want 1", pg.Total)
	}
	// Pages of a cohort.
	pg = cohortTop(t, s, b.ID, "", "2", 1, 1)
	wantEntries(t, "cohort 2 [1,2)", pg.Entries, ent(2, "m5", 50))
	if pg.Total != 3 || pg.Offset != 1 {
		t.Fatalf("cohort 2 page: total %d offset %d", pg.Total, pg.Offset)
	}
	if pg := cohortTop(t, s, b.ID, "", "2", 5, 10); len(pg.Entries) != 0 || pg.Total != 3 {
		t.Fatalf("a page past a cohort's end: %+v", pg)
	}
	// A well-formed cohort nobody is in; malformed ids.
	if pg := cohortTop(t, s, b.ID, "", "9", 0, 10); len(pg.Entries) != 0 || pg.Total != 0 {
		t.Fatalf("cohort 9: %+v, want empty", pg)
	}
	for _, id := range []string{"0", "01", "x", "", "-1", "1-1", "+1"} {
		if _, err := s.CohortTop(ctx, b.ID, "", id, 0, 10); !errors.Is(err, rank.ErrBadRequest) {
			t.Errorf("CohortTop(%q): %v, want ErrBadRequest", id, err)
		}
	}
	if _, err := s.CohortTop(ctx, b.ID, "", "1", -1, 10); !errors.Is(err, rank.ErrBadRequest) {
		t.Errorf("CohortTop with a negative offset: %v", err)
	}
	if _, err := s.CohortTop(ctx, "rt-co-none", "", "1", 0, 10); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Errorf("CohortTop of no board: %v, want ErrUnknownBoard", err)
	}
	// The board's top is global.
	wantTop(t, s, b.ID, ent(1, "m1", 70), ent(2, "m3", 60), ent(3, "m0", 60), ent(4, "m5", 50),
		ent(5, "m2", 40), ent(6, "m6", 30), ent(7, "m4", 20))
	// Member reads: rank and around within the cohort.
	rs := ranks(t, s, b.ID, "", 1, "m5", "m6", "nobody", "m1")
	m5 := rs.Members[0]
	if !m5.Found || m5.Rank != 2 || m5.Score != 50 || m5.Cohort != "2" || m5.Tier != "" {
		t.Fatalf("m5: %+v", m5)
	}
	wantEntries(t, "around m5", m5.Around, ent(1, "m3", 60), ent(2, "m5", 50), ent(3, "m4", 20))
	if m6 := rs.Members[1]; !m6.Found || m6.Rank != 1 || m6.Cohort != "3" {
		t.Fatalf("m6: %+v", m6)
	} else {
		wantEntries(t, "around m6", m6.Around, ent(1, "m6", 30))
	}
	if rs.Members[2].Found || rs.Members[2].Cohort != "" {
		t.Fatalf("nobody: %+v", rs.Members[2])
	}
	if m1 := rs.Members[3]; m1.Rank != 1 || m1.Cohort != "1" {
		t.Fatalf("m1: %+v", m1)
	} else {
		wantEntries(t, "around m1", m1.Around, ent(1, "m1", 70), ent(2, "m0", 60))
	}
	// Member lists rank on the whole board (§11): BoardRanks.
	list, err := s.Ranks(ctx, b.ID, "", []string{"m5", "m6", "nobody"}, rank.BoardRanks)
	if err != nil {
		t.Fatalf("Ranks(BoardRanks): %v", err)
	}
	if l := list.Members; !l[0].Found || l[0].Rank != 4 || l[0].Score != 50 || !l[1].Found || l[1].Rank != 6 || l[2].Found || list.Total != 7 {
		t.Fatalf("whole-board ranks of m5, m6, nobody: %+v total %d, want 4, 6, absent of 7", l, list.Total)
	} else {
		wantEntries(t, "m5's own entry", l[0].Around, ent(4, "m5", 50))
	}
	// A later event keeps the member's cohort, whatever its score.
	if r := apply(t, s, delta(b.ID, g.next(), "m6", 100)); r.Cohort != "3" || r.Rank != 1 || r.PrevRank != 1 {
		t.Fatalf("m6 again: %+v", r)
	}
	if r := apply(t, s, delta(b.ID, g.next(), "m7", 1)); r.Cohort != "3" || r.Rank != 2 || r.PrevRank != 0 {
		t.Fatalf("m7: %+v, want cohort 3 rank 2", r)
	}
}

// testCohortTies: the cohort's order among equal scores is the board's
// (R-ties): shared ranks and the first/last tiebreak hold within a cohort.
func testCohortTies(t *testing.T, f Factory) {
	s := f(t, nil)
	// check holds each cohort's page and member reads to the board's own
	// order restricted to the cohort, ranks recounted.
	check := func(b rank.Board) {
		t.Helper()
		global := all(t, s, b.ID, "").Entries
		for _, c := range []string{"1", "2"} {
			pg := cohortTop(t, s, b.ID, "", c, 0, 10)
			in := map[string]bool{}
			for _, e := range pg.Entries {
				in[e.Member] = true
			}
			var want []rank.Entry
			for _, e := range global {
				if in[e.Member] {
					want = append(want, e)
				}
			}
			for i := range want {
				want[i].Rank = int64(i + 1)
				if b.Tiebreak == rank.Shared && i > 0 && want[i].Score == want[i-1].Score {
					want[i].Rank = want[i-1].Rank
				}
			}
			wantEntries(t, fmt.Sprintf("%s (%s) cohort %s", b.ID, b.Tiebreak, c), pg.Entries, want...)
			for _, e := range want {
				if m := one(t, s, b.ID, e.Member, 0); m.Rank != e.Rank || m.Cohort != c {
					t.Fatalf("%s %s: %+v, want rank %d in %s", b.ID, e.Member, m, e.Rank, c)
				}
			}
		}
	}
	for _, tie := range []rank.Tiebreak{rank.First, rank.Last, rank.Shared} {
		for _, order := range []rank.Order{rank.Desc, rank.Asc} {
			b := put(t, s, board(fmt.Sprintf("rt-cot-%s-%s", tie, order), func(b *rank.Board) {
				b.Cohort.Size, b.Tiebreak, b.Order = 4, tie, order
			}))
			var g ids
			for i, sc := range []int64{5, 5, 7, 5, 9, 5, 5, 7} {
				apply(t, s, delta(b.ID, g.next(), fmt.Sprintf("m%d", i), sc))
			}
			apply(t, s, delta(b.ID, g.next(), "m0", 0)) // unchanged: keeps its place
			check(b)
			// Another tiebreak takes effect for later events, in the
			// cohorts as on the board.
			b.Tiebreak = map[rank.Tiebreak]rank.Tiebreak{rank.First: rank.Last, rank.Last: rank.Shared, rank.Shared: rank.First}[tie]
			put(t, s, b)
			apply(t, s, delta(b.ID, g.next(), "m6", 2))
			apply(t, s, delta(b.ID, g.next(), "m1", 2))
			apply(t, s, delta(b.ID, g.next(), "m3", 0))
			check(b)
		}
	}
}

// testCohortPeriods: each period places afresh; a past period's cohorts
// stay readable with its selector.
func testCohortPeriods(t *testing.T, f Factory) {
	clk := NewClock(skewedAnchor())
	s := f(t, clk.Now)
	b := put(t, s, board("rt-cop", func(b *rank.Board) { b.Cohort.Size, b.Reset = 2, "1m" }))
	p := rank.PeriodAt(b, clk.Now())
	clk.Set(p.Start.Add(time.Second))
	var g ids
	for _, m := range []string{"a", "b", "c"} {
		apply(t, s, delta(b.ID, g.next(), m, 1))
	}
	clk.Set(p.End.Add(time.Second))
	for i, m := range []string{"c", "b", "a"} {
		if r := apply(t, s, delta(b.ID, g.next(), m, 1)); r.Cohort != strconv.Itoa(i/2+1) {
			t.Fatalf("%s in the next period: cohort %q", m, r.Cohort)
		}
	}
	wantEntries(t, "previous cohort 2", cohortTop(t, s, b.ID, "previous", "2", 0, 10).Entries, ent(1, "c", 1))
	wantEntries(t, "current cohort 1", cohortTop(t, s, b.ID, "", "1", 0, 10).Entries, ent(1, "c", 1), ent(2, "b", 1))
	prev := rank.PeriodSel(strconv.FormatInt(p.Index, 10))
	if m := ranks(t, s, b.ID, prev, 0, "c").Members[0]; m.Cohort != "2" || m.Rank != 1 {
		t.Fatalf("c in the previous period: %+v", m)
	}
}

// testCohortConcurrent: 60 members placed at once on one store (R27): no
// cohort past its size, each member in exactly one, every cohort but the
// last full.
func testCohortConcurrent(t *testing.T, f Factory) {
	s := f(t, nil)
	b := put(t, s, cohortBoard("rt-coc", 7))
	placeAtOnce(t, []rank.Store{s}, b, 60)
}

// placeAtOnce places n members on b concurrently, spread over stores, and
// checks R27's cap and uniqueness in the acks and the reads.
func placeAtOnce(t *testing.T, stores []rank.Store, b rank.Board, n int) {
	t.Helper()
	cohortOf := make([]string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s := stores[i%len(stores)]
			r, err := rank.ApplyWait(t.Context(), s, rank.Event{Board: b.ID, ID: "p", Member: fmt.Sprintf("c%02d", i), Op: rank.OpDelta, Amount: int64(i), Submitter: uint64(i + 1)})
			if err != nil {
				errs <- err
				return
			}
			cohortOf[i] = r.Cohort
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	size := b.Cohort.Size
	count := map[string]int{}
	for _, c := range cohortOf {
		count[c]++
	}
	full := n / size
	for k := 1; k <= (n+size-1)/size; k++ {
		want := size
		if k > full {
			want = n % size
		}
		c := strconv.Itoa(k)
		if count[c] != want {
			t.Errorf("cohort %s holds %d members by the acks, want %d (all: %v)", c, count[c], want, count)
		}
		pg := cohortTop(t, stores[0], b.ID, "", c, 0, size+1)
		if pg.Total != int64(want) || len(pg.Entries) != want {
			t.Errorf("cohort %s: total %d, %d entries; want %d", c, pg.Total, len(pg.Entries), want)
		}
		for _, e := range pg.Entries {
			var i int
			fmt.Sscanf(e.Member, "c%d", &i)
			if cohortOf[i] != c {
				t.Errorf("%s is in cohort %s's page but its ack said %s", e.Member, c, cohortOf[i])
			}
		}
	}
	if len(count) != (n+size-1)/size {
		t.Errorf("acks name %d cohorts, want %d: %v", len(count), (n+size-1)/size, count)
	}
	if got := all(t, stores[0], b.ID, ""); got.Total != int64(n) {
		t.Errorf("global total %d, want %d", got.Total, n)
	}
}

// CohortNodes is R27 across nodes: a and b are two stores over the same
// data (two Redis engines on one server; the memory engine passes one
// store twice), both on clock clk. 60 members placed at once through both
// never overfill a cohort; a league period's moves are made once when
// another node than the one that played it touches the next period first,
// and once more only after a period that was played.
// It sets clk to a time of its own.
func CohortNodes(t *testing.T, clk *Clock, a, b rank.Store) {
	clk.Set(skewedAnchor())
	co := cohortBoard("rt-nodes-co", 7)
	if _, err := a.PutBoard(t.Context(), co); err != nil {
		t.Fatal(err)
	}
	placeAtOnce(t, []rank.Store{a, b}, co, 60)

	lg := leagueBoard("rt-nodes-lg", 2, 1, 1, "bronze", "silver", "gold")
	if _, err := b.PutBoard(t.Context(), lg); err != nil {
		t.Fatal(err)
	}
	p := rank.PeriodAt(lg, clk.Now())
	clk.Set(p.Start.Add(time.Second))
	var g ids
	// One period on a: n0 beats n1 in bronze-1, n2 beats n3 in bronze-2, …
	const n = 10
	for i := range n {
		apply(t, a, delta(lg.ID, g.next(), fmt.Sprintf("n%d", i), int64(n-i)))
	}
	// Several periods later, every member plays at once through both
	// nodes: whichever folds the moves, they are made once (a winner is
	// silver, not gold).
	clk.Set(p.End.Add(3 * (p.End.Sub(p.Start))))
	tiers := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := []rank.Store{a, b}[i%2]
			r, err := rank.ApplyWait(t.Context(), s, rank.Event{Board: lg.ID, ID: "late", Member: fmt.Sprintf("n%d", i), Op: rank.OpDelta, Amount: 1, Submitter: uint64(100 + i)})
			if err != nil {
				t.Error(err)
				return
			}
			tiers[i] = r.Tier
		}()
	}
	wg.Wait()
	for i, tier := range tiers {
		want := "bronze"
		if i%2 == 0 {
			want = "silver"
		}
		if tier != want {
			t.Errorf("n%d placed in %q, want %q (tiers %v)", i, tier, want, tiers)
		}
		for _, s := range []rank.Store{a, b} {
			if got := memberTier(t, s, lg.ID, "", fmt.Sprintf("n%d", i)); got != want {
				t.Errorf("n%d's tier %q, want %q", i, got, want)
			}
		}
	}
	if r := apply(t, b, delta(lg.ID, g.next(), "n0", 1)); r.Tier != "silver" {
		t.Fatalf("n0 again on the other node: %+v", r)
	}
}

// testLeagueMoves: a league on a scripted history: the first period in
// the lowest tier, moves made once per final period however long the
// board stays untouched, a member not playing keeps its tier, and a tier
// read before the next period is played already shows its moves.
func testLeagueMoves(t *testing.T, f Factory) {
	clk := NewClock(skewedAnchor())
	s := f(t, clk.Now)
	b := put(t, s, leagueBoard("rt-lg", 3, 1, 1, "bronze", "silver", "gold"))
	p := rank.PeriodAt(b, clk.Now())
	clk.Set(p.Start.Add(time.Second))
	var g ids
	play := func(m string, sc int64, cohort string) {
		t.Helper()
		r := apply(t, s, delta(b.ID, g.next(), m, sc))
		if r.Cohort != cohort || r.Tier != cohort[:len(cohort)-2] {
			t.Fatalf("%s: cohort %q tier %q, want %s", m, r.Cohort, r.Tier, cohort)
		}
	}
	if tier := memberTier(t, s, b.ID, "", "a"); tier != "bronze" {
		t.Fatalf("a member never seen: tier %q, want bronze", tier)
	}
	// Period 1: everybody in bronze.
	for i, m := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		play(m, int64(10-i), "bronze-"+strconv.Itoa(i/3+1))
	}
	if r := one(t, s, b.ID, "e", 1); r.Tier != "bronze" || r.Cohort != "bronze-2" || r.Rank != 2 {
		t.Fatalf("e: %+v", r)
	}
	// The next period, before anybody plays it: the tiers shown include
	// the moves (a and d up, c and f down but at the floor; g alone in its
	// cohort goes up: promotion first).
	next := rank.PeriodAt(b, p.End)
	clk.Set(next.Start.Add(time.Second))
	want := map[string]string{"a": "silver", "b": "bronze", "c": "bronze", "d": "silver", "e": "bronze", "f": "bronze", "g": "silver", "x": "bronze"}
	for m, tier := range want {
		if got := memberTier(t, s, b.ID, "", m); got != tier {
			t.Errorf("period 2 before play: %s in %q, want %q", m, got, tier)
		}
		if got := memberTier(t, s, b.ID, "previous", m); m != "x" && got != "bronze" {
			t.Errorf("period 1: %s in %q, want bronze", m, got)
		}
	}
	// Period 2: a d g in silver-1, b in bronze-1; c does not play.
	play("a", 1, "silver-1")
	play("b", 1, "bronze-1")
	play("d", 3, "silver-1")
	play("g", 2, "silver-1")
	play("e", 1, "bronze-1")
	// Long untouched: the fold of period 2 happens when period 7 is
	// played, from a read first.
	later := rank.PeriodAt(b, next.End.Add(5*next.End.Sub(next.Start)))
	clk.Set(later.Start)
	want = map[string]string{"d": "gold", "g": "silver", "a": "bronze", "b": "silver", "e": "bronze", "c": "bronze"}
	for m, tier := range want {
		if got := memberTier(t, s, b.ID, "", m); got != tier {
			t.Errorf("period 7 before play: %s in %q, want %q", m, got, tier)
		}
	}
	play("c", 1, "bronze-1")
	play("a", 1, "bronze-1")
	play("d", 1, "gold-1")
	play("b", 1, "silver-1")
	play("g", 1, "silver-1")
	for m, tier := range want {
		if got := memberTier(t, s, b.ID, "", m); got != tier {
			t.Errorf("period 7: %s in %q, want %q", m, got, tier)
		}
	}
	wantEntries(t, "gold-1", cohortTop(t, s, b.ID, "", "gold-1", 0, 10).Entries, ent(1, "d", 1))
	for _, id := range []string{"gold", "gold-0", "platinum-1", "1", "gold-x"} {
		if _, err := s.CohortTop(t.Context(), b.ID, "", id, 0, 10); !errors.Is(err, rank.ErrBadRequest) {
			t.Errorf("CohortTop(%q) of a league board: %v, want ErrBadRequest", id, err)
		}
	}
}

// testLeagueDifferential runs LeagueDifferential with a few seeds.
func testLeagueDifferential(t *testing.T, f Factory) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			clk := NewClock(skewedAnchor())
			s := f(t, clk.Now)
			LeagueDifferential(t, s, clk, fmt.Sprintf("rt-lgd-%d", seed), seed, 40)
		})
	}
}

// leagueModel is the contract's league, written plainly: placement in
// order of arrival within a tier, and at the end of each period the moves
// of each cohort by its final order (read from the store's global
// standings, whose order the rest of the suite checks).
type leagueModel struct {
	b       rank.Board
	tier    map[string]int // the tier of the member's next placement
	cohort  map[string]string
	placed  map[int]int
	members map[string][]string // cohort -> members
}

func newLeagueModel(b rank.Board) *leagueModel {
	return &leagueModel{b: b, tier: map[string]int{}}
}

func (m *leagueModel) startPeriod() {
	m.cohort, m.placed, m.members = map[string]string{}, map[int]int{}, map[string][]string{}
}

// place is member's cohort, placing it at its first event of the period.
func (m *leagueModel) place(member string) string {
	if c, ok := m.cohort[member]; ok {
		return c
	}
	t := m.tier[member]
	c := rank.CohortID(m.b.League.Tiers.At(t), int64(m.placed[t]/m.b.Cohort.Size+1))
	m.placed[t]++
	m.cohort[member] = c
	m.members[c] = append(m.members[c], member)
	return c
}

// endPeriod makes the period's moves from its final global standings.
func (m *leagueModel) endPeriod(global []rank.Entry) map[string][]string {
	order := map[string][]string{}
	for _, e := range global {
		c := m.cohort[e.Member]
		order[c] = append(order[c], e.Member)
	}
	lg := m.b.League
	for c, ms := range order {
		tier, _, _ := m.b.ParseCohortID(c)
		t := lg.Tiers.Index(tier)
		for i, member := range ms {
			m.tier[member] = lg.MoveTier(t, lg.Step(i+1, len(ms)))
		}
	}
	return order
}

// LeagueDifferential plays random periods on a new league board of s
// (boardID) whose clock is clk, and after every period holds the store
// equal to leagueModel: each ack's cohort and tier, every member's cohort,
// tier and rank, each cohort's page (the board's order restricted to it),
// and every member's tier for the next period before and after it is
// first played. Some periods are skipped, some runs of them past the
// board's retain, so moves are made however long nobody played.
func LeagueDifferential(t *testing.T, s rank.Store, clk *Clock, boardID string, seed uint64, periods int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	size := 2 + rng.IntN(4)
	promote := rng.IntN(size)
	demote := rng.IntN(min(size-1, size-promote) + 1)
	if promote+demote == 0 {
		promote = 1
	}
	lt, _ := rank.LeagueTiersOf("t0", "t1", "t2", "t3")
	b := rank.DefaultBoard(boardID)
	b.Reset, b.Retain = "1m", 2
	b.Cohort = rank.Cohort{Size: size}
	b.League = rank.League{Tiers: lt, Promote: promote, Demote: demote}
	b.Tiebreak = []rank.Tiebreak{rank.First, rank.Last, rank.Shared}[rng.IntN(3)]
	ctx := t.Context()
	if _, err := s.PutBoard(ctx, b); err != nil {
		t.Fatal(err)
	}
	m := newLeagueModel(b)
	pool := make([]string, 3*size+rng.IntN(12))
	for i := range pool {
		pool[i] = fmt.Sprintf("p%02d", i)
	}
	tierName := func(member string) string { return lt.At(m.tier[member]) }
	checkTiers := func(when string) {
		for _, member := range pool {
			got, err := s.MemberTier(ctx, b.ID, "", member)
			if err != nil || got != tierName(member) {
				t.Fatalf("seed %d %s: %s's tier %q (%v), model %q", seed, when, member, got, err, tierName(member))
			}
		}
	}
	p := rank.PeriodAt(b, clk.Now())
	var g ids
	for k := range periods {
		clk.Set(p.Start.Add(time.Duration(rng.IntN(1000)) * time.Millisecond))
		checkTiers(fmt.Sprintf("period %d before play", k))
		m.startPeriod()
		events := rng.IntN(4 * len(pool))
		for range events {
			member := pool[rng.IntN(len(pool))]
			// Few distinct scores: ties decide moves too.
			e := delta(b.ID, g.next(), member, int64(rng.IntN(5)))
			r, err := rank.ApplyWait(ctx, s, e)
			if err != nil {
				t.Fatalf("seed %d period %d: %+v: %v", seed, k, e, err)
			}
			c := m.place(member)
			if r.Cohort != c || r.Tier != tierName(member) {
				t.Fatalf("seed %d period %d: %s's ack in %q tier %q, model %q tier %q", seed, k, member, r.Cohort, r.Tier, c, tierName(member))
			}
			if rng.IntN(20) == 0 {
				clk.Advance(time.Duration(rng.IntN(100)) * time.Millisecond)
			}
		}
		if events > 0 {
			checkTiers(fmt.Sprintf("period %d after play", k))
		}
		// The period's final state, compared before the clock leaves it.
		global := all(t, s, b.ID, "").Entries
		order := m.endPeriod(global)
		for c, ms := range order {
			pg := cohortTop(t, s, b.ID, "", c, 0, size+1)
			got := make([]string, len(pg.Entries))
			for i, e := range pg.Entries {
				got[i] = e.Member
			}
			if !slices.Equal(got, ms) || pg.Total != int64(len(ms)) {
				t.Fatalf("seed %d period %d: cohort %s is %v (total %d), the board's order in it %v", seed, k, c, got, pg.Total, ms)
			}
			if !slices.Equal(m.members[c], sortedCopyBy(ms, m.members[c])) {
				t.Fatalf("seed %d period %d: cohort %s holds %v, model %v", seed, k, c, ms, m.members[c])
			}
		}
		if len(global) > 0 {
			rs, err := s.Ranks(ctx, b.ID, "", pool, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, mr := range rs.Members {
				c, ok := m.cohort[mr.Member]
				if mr.Found != ok || mr.Cohort != c {
					t.Fatalf("seed %d period %d: %s found %v in %q, model %v in %q", seed, k, mr.Member, mr.Found, mr.Cohort, ok, c)
				}
				if ok && (mr.Rank != int64(slices.Index(order[c], mr.Member)+1) && b.Tiebreak != rank.Shared) {
					t.Fatalf("seed %d period %d: %s's rank %d in %s, order %v", seed, k, mr.Member, mr.Rank, c, order[c])
				}
			}
		}
		// The next period, or a jump of several, sometimes past retain.
		skip := 1
		if rng.IntN(4) == 0 {
			skip += rng.IntN(5)
		}
		for range skip {
			p = rank.PeriodAt(b, p.End)
		}
	}
}

// sortedCopyBy is ms in the order of ref (the members of a cohort in the
// model's order of arrival), to compare membership.
func sortedCopyBy(ms, ref []string) []string {
	out := slices.Clone(ms)
	slices.SortFunc(out, func(x, y string) int { return slices.Index(ref, x) - slices.Index(ref, y) })
	return out
}

// testCohortBans: a banned member leaves its cohort's reads and comes back
// to the same place when the ban is lifted (R21); a removed entry leaves
// the cohort, and the member's next event brings it back to the same
// cohort; a member hidden when a league period's moves are made is not in
// the standings they follow, so it keeps its tier.
func testCohortBans(t *testing.T, f Factory) {
	clk := NewClock(skewedAnchor())
	s := f(t, clk.Now)
	ctx := t.Context()
	b := put(t, s, cohortBoard("rt-cob", 3))
	var g ids
	for i, m := range []string{"a", "b", "c", "d"} {
		apply(t, s, delta(b.ID, g.next(), m, int64(30-10*i)))
	}
	if _, err := s.BanMember(ctx, b.ID, rank.Ban{Member: "a"}); err != nil {
		t.Fatal(err)
	}
	pg := cohortTop(t, s, b.ID, "", "1", 0, 10)
	wantEntries(t, "cohort 1, a banned", pg.Entries, ent(1, "b", 20), ent(2, "c", 10))
	if pg.Total != 2 {
		t.Fatalf("cohort 1 total %d with a banned, want 2", pg.Total)
	}
	if r := ranks(t, s, b.ID, "", 1, "a", "c").Members; r[0].Found || r[1].Rank != 2 {
		t.Fatalf("a banned: %+v", r)
	} else {
		wantEntries(t, "around c", r[1].Around, ent(1, "b", 20), ent(2, "c", 10))
	}
	if err := s.LiftBan(ctx, b.ID, "a"); err != nil {
		t.Fatal(err)
	}
	wantEntries(t, "cohort 1, a back", cohortTop(t, s, b.ID, "", "1", 0, 10).Entries,
		ent(1, "a", 30), ent(2, "b", 20), ent(3, "c", 10))
	if err := s.RemoveMember(ctx, b.ID, "b", ""); err != nil {
		t.Fatal(err)
	}
	wantEntries(t, "cohort 1, b removed", cohortTop(t, s, b.ID, "", "1", 0, 10).Entries,
		ent(1, "a", 30), ent(2, "c", 10))
	if r := apply(t, s, delta(b.ID, g.next(), "b", 15)); r.Cohort != "1" || r.Rank != 2 || r.PrevRank != 0 {
		t.Fatalf("b after its removal: %+v, want cohort 1 rank 2", r)
	}
	if r := apply(t, s, delta(b.ID, g.next(), "e", 1)); r.Cohort != "2" {
		t.Fatalf("e: %+v, want cohort 2 (1 stays full)", r)
	}

	lg := put(t, s, leagueBoard("rt-cob-lg", 2, 1, 1, "bronze", "silver"))
	p := rank.PeriodAt(lg, clk.Now())
	clk.Set(p.Start.Add(time.Second))
	apply(t, s, delta(lg.ID, g.next(), "x", 10))
	apply(t, s, delta(lg.ID, g.next(), "y", 5))
	if _, err := s.BanMember(ctx, lg.ID, rank.Ban{Member: "x"}); err != nil {
		t.Fatal(err)
	}
	clk.Set(p.End.Add(time.Second))
	for m, want := range map[string]string{"x": "bronze", "y": "silver"} {
		if got := memberTier(t, s, lg.ID, "", m); got != want {
			t.Errorf("before play: %s in %q, want %q (x was hidden when the period ended)", m, got, want)
		}
	}
	if r := apply(t, s, delta(lg.ID, g.next(), "y", 1)); r.Tier != "silver" {
		t.Fatalf("y: %+v, want silver", r)
	}
	// The moves are made: lifting the ban now changes no tier.
	if err := s.LiftBan(ctx, lg.ID, "x"); err != nil {
		t.Fatal(err)
	}
	if r := apply(t, s, delta(lg.ID, g.next(), "x", 1)); r.Tier != "bronze" {
		t.Fatalf("x: %+v, want bronze", r)
	}
}

// testCohortChanges: on a cohort board the sink hears each change with
// the member's cohort, its ranks within it (so live frames route per
// cohort), as the ack says.
func testCohortChanges(t *testing.T, f HooksFactory) {
	rec := newRecorder()
	s := f(t, rank.Hooks{Sink: rec.sink})
	b := put(t, s, cohortBoard("rt-cochg", 2))
	out := submitAll(t, s, rec, t.Context(), []rank.Event{
		delta(b.ID, "1", "a", 5), delta(b.ID, "1", "b", 7), delta(b.ID, "1", "c", 1), delta(b.ID, "2", "a", 5),
	})
	want := []struct {
		cohort         string
		rank, prevRank int64
	}{{"1", 1, 0}, {"1", 1, 0}, {"2", 1, 0}, {"1", 1, 2}}
	for i, o := range out {
		if o.err != nil || !o.seen {
			t.Fatalf("event %d: %+v", i, o)
		}
		w := want[i]
		if o.r.Cohort != w.cohort || o.r.Rank != w.rank || o.r.PrevRank != w.prevRank {
			t.Errorf("event %d's ack: %+v, want cohort %s rank %d prev %d", i, o.r, w.cohort, w.rank, w.prevRank)
		}
		if c := o.change; c.Cohort != w.cohort || c.Rank != w.rank || c.PrevRank != w.prevRank {
			t.Errorf("event %d's change: %+v, want cohort %s rank %d prev %d", i, c, w.cohort, w.rank, w.prevRank)
		}
	}
}

// LeagueRealPeriods plays a league board of s over two real boundaries of
// 1-minute periods on the store's own clock (a node's view of time plays
// no part): the moves of each period show in the next one's first acks.
// It waits for the boundaries (up to about two and a half minutes), so
// callers run it in parallel with the rest and skip it in -short runs.
func LeagueRealPeriods(t *testing.T, s rank.Store) {
	ctx := t.Context()
	b := put(t, s, leagueBoard("rt-real", 2, 1, 1, "bronze", "silver", "gold"))
	now := func() time.Time {
		t.Helper()
		n, err := s.Now(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// waitFor polls the store's clock until it is a second past at: the
	// clock is an estimate (off by up to half a loaded round trip) while the
	// script reads the server's own, and an event sent at the estimate's
	// boundary could still land in the period before.
	waitFor := func(at time.Time) {
		t.Helper()
		at = at.Add(time.Second)
		deadline := time.Now().Add(at.Sub(now()) + 10*time.Second)
		for now().Before(at) {
			if time.Now().After(deadline) {
				t.Fatalf("the store's clock did not reach %s", at)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	p := rank.PeriodAt(b, now())
	if p.End.Sub(now()) < 10*time.Second {
		waitFor(p.End) // room for the first period's events
		p = rank.PeriodAt(b, p.End)
	}
	var g ids
	play := func(m string, sc int64, cohort string) {
		t.Helper()
		if r := apply(t, s, delta(b.ID, g.next(), m, sc)); r.Cohort != cohort {
			t.Fatalf("%s: %+v, want %s", m, r, cohort)
		}
	}
	play("w", 10, "bronze-1")
	play("l", 5, "bronze-1")
	waitFor(p.End)
	// w won its cohort, l lost it at the floor; each then alone in its tier.
	play("w", 1, "silver-1")
	play("l", 1, "bronze-1")
	waitFor(rank.PeriodAt(b, p.End).End)
	play("l", 1, "silver-1")
	play("w", 1, "gold-1")
}
