package ranktest

// Derived boards (docs/protocol.md §8, R22–R23): configs, read_only, unions,
// windows, creation over data, bans, and a differential test against a
// from-scratch recomputation from the sources' reads.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// putErr expects PutBoard to fail with want, with a message naming field.
func putErr(t *testing.T, s rank.Store, b rank.Board, want error, field string) {
	t.Helper()
	got, err := s.PutBoard(t.Context(), b)
	if !errors.Is(err, want) {
		t.Fatalf("PutBoard(%s) = %+v, %v; want %v", b.ID, got, err, want)
	}
	if field != "" && !containsField(err.Error(), field) {
		t.Fatalf("PutBoard(%s): %q does not name field %s", b.ID, err, field)
	}
}

func containsField(msg, field string) bool {
	for i := 0; i+len("field "+field) <= len(msg); i++ {
		if msg[i:i+len("field "+field)] == "field "+field {
			return true
		}
	}
	return false
}

// putDerived stores a derived board and checks the fields it takes from
// its sources.
func putDerived(t *testing.T, s rank.Store, b rank.Board, order rank.Order, reset rank.Reset) rank.Board {
	t.Helper()
	got, err := s.PutBoard(t.Context(), b)
	if err != nil {
		t.Fatalf("PutBoard(%s): %v", b.ID, err)
	}
	want := b
	want.Order, want.Tiebreak, want.Reset = order, rank.Shared, reset
	if got != want {
		t.Fatalf("PutBoard(%s) = %+v\nwant %+v", b.ID, got, want)
	}
	if g, err := s.GetBoard(t.Context(), b.ID); err != nil || g != want {
		t.Fatalf("GetBoard(%s) = %+v, %v; want %+v", b.ID, g, err, want)
	}
	return got
}

func testDerivedConfig(t *testing.T, f Factory) {
	s := f(t, nil)
	union := func(id string, boards []string, weights []int64) rank.Board {
		return board(id, func(b *rank.Board) { b.Group = "rt-dc"; b.Source = rank.UnionOf(boards, weights) })
	}
	mk := func(id string, mut func(b *rank.Board)) {
		put(t, s, board(id, func(b *rank.Board) {
			b.Group = "rt-dc"
			if mut != nil {
				mut(b)
			}
		}))
	}
	plain := put(t, s, board("rt-dc-g", nil))
	if got, err := s.GetBoard(t.Context(), plain.ID); err != nil || got.Group != plain.ID {
		t.Fatalf("GetBoard(%s).Group = %q, %v; want the id", plain.ID, got.Group, err)
	}
	mk("rt-dc-a", nil)
	mk("rt-dc-b", nil)
	mk("rt-dc-asc", func(b *rank.Board) { b.Order = rank.Asc })
	mk("rt-dc-day", func(b *rank.Board) { b.Reset = rank.Daily; b.Retain = 3 })
	mk("rt-dc-hour", func(b *rank.Board) { b.Reset = rank.Hourly })
	mk("rt-dc-day2", func(b *rank.Board) { b.Reset = rank.Daily; b.TZ = "Asia/Tokyo" })

	bad := []struct {
		name  string
		b     rank.Board
		field string
	}{
		{"unknown source", union("rt-dc-u", []string{"rt-dc-a", "rt-dc-none"}, nil), "source"},
		{"other group", union("rt-dc-u", []string{"rt-dc-a", "rt-dc-g"}, nil), "source"},
		{"mixed order", union("rt-dc-u", []string{"rt-dc-a", "rt-dc-asc"}, nil), "source"},
		{"mixed reset", union("rt-dc-u", []string{"rt-dc-day", "rt-dc-hour"}, nil), "source"},
		{"mixed tz", union("rt-dc-u", []string{"rt-dc-day", "rt-dc-day2"}, nil), "source"},
		{"itself", union("rt-dc-u", []string{"rt-dc-a", "rt-dc-u"}, nil), "source"},
		{"twice", union("rt-dc-u", []string{"rt-dc-a", "rt-dc-a"}, nil), "source"},
		{"weight 0", union("rt-dc-u", []string{"rt-dc-a", "rt-dc-b"}, []int64{1, 0}), "source"},
		{"weight 1001", union("rt-dc-u", []string{"rt-dc-a"}, []int64{1001}), "source"},
		{"window without reset", board("rt-dc-w", func(b *rank.Board) { b.Group = "rt-dc"; b.Source = rank.WindowOf("rt-dc-a", 2) }), "source"},
		{"window past retain", board("rt-dc-w", func(b *rank.Board) { b.Group = "rt-dc"; b.Source = rank.WindowOf("rt-dc-day", 5) }), "source"},
		{"window of 0", board("rt-dc-w", func(b *rank.Board) { b.Group = "rt-dc"; b.Source = rank.WindowOf("rt-dc-day", 0) }), "source"},
		{"window of 401", board("rt-dc-w", func(b *rank.Board) { b.Group = "rt-dc"; b.Source = rank.WindowOf("rt-dc-day", 401) }), "source"},
		{"bad group", board("rt-dc-x", func(b *rank.Board) { b.Group = "a b" }), "group"},
	}
	for _, tc := range bad {
		before := snapshot(t, s, "rt-dc-a")
		putErr(t, s, tc.b, rank.ErrInvalidConfig, tc.field)
		if _, err := s.GetBoard(t.Context(), tc.b.ID); !errors.Is(err, rank.ErrUnknownBoard) {
			t.Fatalf("%s: the refused board exists: %v", tc.name, err)
		}
		if after := snapshot(t, s, "rt-dc-a"); after != before {
			t.Fatalf("%s: a refused PUT changed a source:\n%s\n%s", tc.name, before, after)
		}
	}

	u := putDerived(t, s, union("rt-dc-u", []string{"rt-dc-a", "rt-dc-b"}, []int64{1, 2}), rank.Desc, rank.None)
	w := putDerived(t, s, board("rt-dc-w", func(b *rank.Board) { b.Group = "rt-dc"; b.Source = rank.WindowOf("rt-dc-day", 4) }), rank.Desc, rank.Daily)
	// No chains: a derived board is not a source.
	putErr(t, s, union("rt-dc-u2", []string{"rt-dc-u"}, nil), rank.ErrInvalidConfig, "source")
	// Group and source are fixed at creation; other fields may change.
	putErr(t, s, board("rt-dc-u", func(b *rank.Board) { *b = u; b.Group = "rt-dc-a" }), rank.ErrInvalidConfig, "group")
	putErr(t, s, board("rt-dc-u", func(b *rank.Board) { *b = u; b.Source = rank.UnionOf([]string{"rt-dc-a"}, nil) }), rank.ErrInvalidConfig, "source")
	putErr(t, s, board("rt-dc-a", func(b *rank.Board) { b.Group = "rt-dc-a" }), rank.ErrInvalidConfig, "group")
	putErr(t, s, board("rt-dc-a", func(b *rank.Board) { b.Group = "rt-dc"; b.Source = rank.UnionOf([]string{"rt-dc-b"}, nil) }), rank.ErrInvalidConfig, "source")
	u2 := u
	u2.Title = "All categories"
	putDerived(t, s, u2, rank.Desc, rank.None)
	// A source keeps what its dependants rely on.
	putErr(t, s, board("rt-dc-a", func(b *rank.Board) { b.Group = "rt-dc"; b.Order = rank.Asc }), rank.ErrInvalidConfig, "order")
	putErr(t, s, board("rt-dc-day", func(b *rank.Board) { b.Group = "rt-dc"; b.Reset = rank.Daily; b.Retain = 2 }), rank.ErrInvalidConfig, "retain")
	put(t, s, board("rt-dc-a", func(b *rank.Board) { b.Group = "rt-dc"; b.Title = "MOBA" }))

	// read_only, whatever the event.
	applyErr(t, s, delta(u.ID, "r1", "m", 1), rank.ErrReadOnly)
	applyErr(t, s, value(w.ID, "r1", "m", 1), rank.ErrReadOnly)

	// A source with dependants is not deleted; the dependant first.
	if err := s.DeleteBoard(t.Context(), "rt-dc-a"); !errors.Is(err, rank.ErrHasDependants) {
		t.Fatalf("DeleteBoard(source) = %v, want ErrHasDependants", err)
	}
	if _, err := s.GetBoard(t.Context(), "rt-dc-a"); err != nil {
		t.Fatalf("the refused delete removed the source: %v", err)
	}
	if err := s.DeleteBoard(t.Context(), u.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteBoard(t.Context(), "rt-dc-a"); err != nil {
		t.Fatalf("DeleteBoard(source without dependants) = %v", err)
	}
}

// expectSum is the from-scratch recomputation: Σ w × score over the given
// source reads, ranked with shared ties, equal scores by member id
// descending (the suite's shared order).
func expectSum(order rank.Order, parts []map[string]int64, weights []int64) []rank.Entry {
	sum := map[string]int64{}
	for i, p := range parts {
		for m, v := range p {
			sum[m] += weights[i] * v
		}
	}
	out := make([]rank.Entry, 0, len(sum))
	for m, v := range sum {
		out = append(out, rank.Entry{Member: m, Score: v})
	}
	better := func(x, y int64) bool {
		if order == rank.Asc {
			return x < y
		}
		return x > y
	}
	slices.SortFunc(out, func(x, y rank.Entry) int {
		switch {
		case better(x.Score, y.Score):
			return -1
		case better(y.Score, x.Score):
			return 1
		case x.Member > y.Member:
			return -1
		case x.Member < y.Member:
			return 1
		}
		return 0
	})
	for i := range out {
		out[i].Rank = int64(i + 1)
		if i > 0 && out[i].Score == out[i-1].Score {
			out[i].Rank = out[i-1].Rank
		}
	}
	return out
}

// scoresOf reads every entry of a period as member -> score.
func scoresOf(t *testing.T, s rank.Store, id string, p rank.PeriodSel) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, e := range all(t, s, id, p).Entries {
		out[e.Member] = e.Score
	}
	return out
}

// noNames drops names so sums compare on ranks and scores.
func noNames(es []rank.Entry) []rank.Entry {
	out := slices.Clone(es)
	for i := range out {
		out[i].Name = ""
	}
	return out
}

func testDerivedUnion(t *testing.T, f Factory) {
	s := f(t, nil)
	var g ids
	grp := func(b *rank.Board) { b.Group = "rt-du" }
	put(t, s, board("rt-du-moba", grp))
	put(t, s, board("rt-du-race", func(b *rank.Board) { grp(b); b.Mode = rank.Best }))
	put(t, s, board("rt-du-act", func(b *rank.Board) { grp(b); b.Mode = rank.Set }))
	u := putDerived(t, s, board("rt-du-all", func(b *rank.Board) {
		grp(b)
		b.Source = rank.UnionOf([]string{"rt-du-moba", "rt-du-race", "rt-du-act"}, []int64{1, 2, 3})
	}), rank.Desc, rank.None)
	wantTop(t, s, u.ID)
	seq0 := top(t, s, u.ID, "", 0, 1).Seq

	apply(t, s, named(delta("rt-du-moba", g.next(), "ann", 10), "Ann"))
	apply(t, s, delta("rt-du-moba", g.next(), "bob", 7))
	apply(t, s, value("rt-du-race", g.next(), "bob", 4))
	apply(t, s, value("rt-du-race", g.next(), "bob", 3)) // best keeps 4: no change
	apply(t, s, value("rt-du-act", g.next(), "cy", 9))
	apply(t, s, value("rt-du-act", g.next(), "cy", 2)) // set: 9 -> 2
	apply(t, s, delta("rt-du-moba", g.next(), "dee", 0))
	// ann 10, bob 7 + 2×4 = 15, cy 3×2 = 6, dee 0 (an entry of 0 is an entry)
	wantTop(t, s, u.ID, ent(1, "bob", 15), ent(2, "ann", 10, "Ann"), ent(3, "cy", 6), ent(4, "dee", 0))
	if seq := top(t, s, u.ID, "", 0, 1).Seq; seq <= seq0 {
		t.Fatalf("the union's seq did not move with its sources: %d then %d", seq0, seq)
	}
	apply(t, s, delta("rt-du-moba", g.next(), "ann", -5))
	apply(t, s, value("rt-du-act", g.next(), "ann", 3))
	m := one(t, s, u.ID, "ann", 1)
	if !m.Found || m.Score != 14 || m.Rank != 2 {
		t.Fatalf("Ranks(ann) on the union = %+v, want score 14 rank 2", m)
	}
	want := expectSum(rank.Desc, []map[string]int64{
		scoresOf(t, s, "rt-du-moba", ""), scoresOf(t, s, "rt-du-race", ""), scoresOf(t, s, "rt-du-act", ""),
	}, []int64{1, 2, 3})
	wantEntries(t, "union against its recomputation", noNames(all(t, s, u.ID, "").Entries), want...)

	// An event refused on a source changes no dependant.
	before := snapshot(t, s, u.ID)
	applyErr(t, s, value("rt-du-race", g.next(), "eve", rank.MaxScore+1), rank.ErrInvalidScore)
	if after := snapshot(t, s, u.ID); after != before {
		t.Fatalf("a refused event moved the union:\n%s\n%s", before, after)
	}
	// A duplicate changes nothing either.
	id := g.next()
	apply(t, s, delta("rt-du-moba", id, "fay", 5))
	before = snapshot(t, s, u.ID)
	if r := apply(t, s, delta("rt-du-moba", id, "fay", 5)); !r.Duplicate {
		t.Fatalf("resend = %+v, want a duplicate", r)
	}
	if after := snapshot(t, s, u.ID); after != before {
		t.Fatalf("a duplicate moved the union:\n%s\n%s", before, after)
	}
}

func testDerivedWindow(t *testing.T, f Factory) {
	day := rank.Board{Reset: rank.Daily}
	start := rank.PeriodAt(day, nowAnchor()).Start.Add(time.Hour)
	clk := NewClock(start)
	s := f(t, clk.Now)
	var g ids
	src := put(t, s, board("rt-dw-run", func(b *rank.Board) { b.Group = "rt-dw"; b.Reset = rank.Daily; b.Retain = 3 }))
	w := putDerived(t, s, board("rt-dw-3d", func(b *rank.Board) {
		b.Group = "rt-dw"
		b.Source = rank.WindowOf(src.ID, 3)
	}), rank.Desc, rank.Daily)
	// Day 1: a 5, b 1. Day 2: a 1, c 4. Day 3: b 10. Day 4: c 1.
	days := [][]struct {
		m string
		d int64
	}{
		{{"a", 5}, {"b", 1}},
		{{"a", 1}, {"c", 4}},
		{{"b", 10}},
		{{"c", 1}},
		{},
		{},
	}
	var daily []map[string]int64
	for i, evs := range days {
		if i > 0 {
			clk.Advance(24 * time.Hour)
		}
		for _, e := range evs {
			apply(t, s, delta(src.ID, g.next(), e.m, e.d))
		}
		daily = append(daily, scoresOf(t, s, src.ID, ""))
		lo := max(0, i-2)
		want := expectSum(rank.Desc, daily[lo:i+1], []int64{1, 1, 1}[:i+1-lo])
		wantEntries(t, fmt.Sprintf("day %d: window against its recomputation", i+1), all(t, s, w.ID, "").Entries, want...)
	}
	// On day 6 the previous period's view (days 3..5) stays readable.
	wantEntries(t, "day 6's previous period", all(t, s, w.ID, "previous").Entries, expectSum(rank.Desc, daily[2:5], []int64{1, 1, 1})...)
}

func testDerivedBuild(t *testing.T, f Factory) {
	day := rank.Board{Reset: rank.Daily}
	clk := NewClock(rank.PeriodAt(day, nowAnchor()).Start.Add(2 * time.Hour))
	s := f(t, clk.Now)
	var g ids
	grp := func(b *rank.Board) { b.Group = "rt-db"; b.Reset = rank.Daily; b.Retain = 4 }
	put(t, s, board("rt-db-a", grp))
	put(t, s, board("rt-db-b", func(b *rank.Board) { grp(b); b.Tiebreak = rank.Last }))
	var daily []map[string]int64
	for d := range 3 {
		if d > 0 {
			clk.Advance(24 * time.Hour)
		}
		for i := range 150 {
			m := "m" + strconv.Itoa((i*7+d)%60)
			apply(t, s, named(delta("rt-db-a", g.next(), m, int64(i%13-3)), "N"+m))
			if i%3 == 0 {
				apply(t, s, delta("rt-db-b", g.next(), m, int64(i%5)))
			}
		}
		daily = append(daily, scoresOf(t, s, "rt-db-a", ""))
	}
	// Both created over data: exact from the moment PutBoard returns.
	u := putDerived(t, s, board("rt-db-u", func(b *rank.Board) {
		b.Group = "rt-db"
		b.Source = rank.UnionOf([]string{"rt-db-a", "rt-db-b"}, []int64{3, 1})
	}), rank.Desc, rank.Daily)
	w := putDerived(t, s, board("rt-db-w", func(b *rank.Board) {
		b.Group = "rt-db"
		b.Source = rank.WindowOf("rt-db-a", 3)
	}), rank.Desc, rank.Daily)
	check := func(what string) {
		t.Helper()
		want := expectSum(rank.Desc, []map[string]int64{scoresOf(t, s, "rt-db-a", ""), scoresOf(t, s, "rt-db-b", "")}, []int64{3, 1})
		wantEntries(t, what+": union", noNames(all(t, s, u.ID, "").Entries), want...)
		want = expectSum(rank.Desc, daily[len(daily)-3:], []int64{1, 1, 1})
		wantEntries(t, what+": window", noNames(all(t, s, w.ID, "").Entries), want...)
	}
	check("at creation")
	if m := one(t, s, u.ID, "m1", 0); !m.Found || m.Name != "Nm1" {
		t.Fatalf("a name on a source is not on the union: %+v", m)
	}
	apply(t, s, delta("rt-db-a", g.next(), "m1", 100))
	apply(t, s, delta("rt-db-b", g.next(), "new", 2))
	daily[len(daily)-1] = scoresOf(t, s, "rt-db-a", "")
	check("after events")
	// The next day: the window keeps the two last days and the new one.
	clk.Advance(24 * time.Hour)
	apply(t, s, delta("rt-db-a", g.next(), "m2", 1))
	daily = append(daily, scoresOf(t, s, "rt-db-a", ""))
	check("the next day")
}

func testDerivedBans(t *testing.T, f Factory) {
	s := f(t, nil)
	mod := modOf(t, s)
	var g ids
	put(t, s, board("rt-dbn-a", func(b *rank.Board) { b.Group = "rt-dbn" }))
	put(t, s, board("rt-dbn-b", func(b *rank.Board) { b.Group = "rt-dbn" }))
	u := putDerived(t, s, board("rt-dbn-u", func(b *rank.Board) {
		b.Group = "rt-dbn"
		b.Source = rank.UnionOf([]string{"rt-dbn-a", "rt-dbn-b"}, nil)
	}), rank.Desc, rank.None)
	apply(t, s, delta("rt-dbn-a", g.next(), "x", 5))
	apply(t, s, delta("rt-dbn-b", g.next(), "x", 2))
	apply(t, s, delta("rt-dbn-a", g.next(), "y", 4))
	// A ban on a source hides nothing on the union: the derived board has
	// its own bans, and a banned member's source score is kept.
	if _, err := mod.BanMember(t.Context(), "rt-dbn-a", rank.Ban{Member: "x", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	wantTop(t, s, u.ID, ent(1, "x", 7), ent(2, "y", 4))
	applyErr(t, s, delta("rt-dbn-a", g.next(), "x", 1), rank.ErrBanned)
	wantTop(t, s, u.ID, ent(1, "x", 7), ent(2, "y", 4))
	// A ban on the union hides the member there; its sum goes on.
	if _, err := mod.BanMember(t.Context(), u.ID, rank.Ban{Member: "y", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	wantTop(t, s, u.ID, ent(1, "x", 7))
	apply(t, s, delta("rt-dbn-b", g.next(), "y", 10))
	apply(t, s, delta("rt-dbn-b", g.next(), "z", 1)) // z is not banned
	if _, err := mod.BanMember(t.Context(), u.ID, rank.Ban{Member: "w", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	apply(t, s, delta("rt-dbn-b", g.next(), "w", 3)) // w: banned before its first entry
	wantTop(t, s, u.ID, ent(1, "x", 7), ent(2, "z", 1))
	for _, m := range []string{"y", "w"} {
		if err := mod.LiftBan(t.Context(), u.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	wantTop(t, s, u.ID, ent(1, "y", 14), ent(2, "x", 7), ent(3, "w", 3), ent(4, "z", 1))
	// Removing a member from a source with dependants is refused: the sum
	// would keep its share.
	if err := mod.RemoveMember(t.Context(), "rt-dbn-a", "y", ""); !errors.Is(err, rank.ErrHasDependants) {
		t.Fatalf("RemoveMember on a source = %v, want ErrHasDependants", err)
	}
	wantTop(t, s, "rt-dbn-a", ent(1, "y", 4))
}

// ---- differential ----

// DerivedDifferential drives random events over several sources (incr,
// best and set; daily and without periods) and their unions and windows,
// with an injected clock crossing day boundaries, and after every boundary
// compares each derived board, current and previous period, with a
// from-scratch recomputation from the sources' own reads. A window board
// is also created midway, over data.
func DerivedDifferential(t *testing.T, f Factory, seed uint64, events int) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	left := events * 5 // about five picks an event
	DerivedScript(t, f, func(n int) (int, bool) {
		if left == 0 {
			return 0, false
		}
		left--
		return r.IntN(n), true
	})
}

// DerivedFuzz is DerivedScript driven by fuzz bytes.
func DerivedFuzz(t *testing.T, f Factory, data []byte) {
	DerivedScript(t, f, func(n int) (int, bool) {
		if len(data) < 2 {
			return 0, false
		}
		v := int(data[0])<<8 | int(data[1])
		data = data[2:]
		return v % n, true
	})
}

// DerivedScript is the differential test's body; next picks a number in
// [0, n) and reports false when the script is over.
func DerivedScript(t *testing.T, f Factory, next func(n int) (int, bool)) {
	day := rank.Board{Reset: rank.Daily}
	clk := NewClock(rank.PeriodAt(day, nowAnchor()).Start.Add(30 * time.Minute))
	s := f(t, clk.Now)
	const grp = "rt-dd"
	src := func(id string, mode rank.Mode, reset rank.Reset) {
		put(t, s, board(id, func(b *rank.Board) { b.Group = grp; b.Mode = mode; b.Reset = reset; b.Retain = 5 }))
	}
	src("rt-dd-a", rank.Incr, rank.Daily)
	src("rt-dd-b", rank.Best, rank.Daily)
	src("rt-dd-c", rank.Set, rank.Daily)
	src("rt-dd-x", rank.Incr, rank.None)
	src("rt-dd-y", rank.Best, rank.None)
	derived := func(id string, so rank.Source) {
		if _, err := s.PutBoard(t.Context(), board(id, func(b *rank.Board) { b.Group = grp; b.Source = so })); err != nil {
			t.Fatalf("PutBoard(%s): %v", id, err)
		}
	}
	type view struct {
		id      string
		boards  []string
		weights []int64
		span    int // periods summed (1: a union)
	}
	views := []view{
		{"rt-dd-u", []string{"rt-dd-a", "rt-dd-b", "rt-dd-c"}, []int64{1, 2, 3}, 1},
		{"rt-dd-w", []string{"rt-dd-a"}, []int64{1}, 4},
		{"rt-dd-w2", []string{"rt-dd-b"}, []int64{1}, 2},
		{"rt-dd-ux", []string{"rt-dd-x", "rt-dd-y"}, []int64{5, 1}, 1},
	}
	derived("rt-dd-u", rank.UnionOf(views[0].boards, views[0].weights))
	derived("rt-dd-w", rank.WindowOf("rt-dd-a", 4))
	derived("rt-dd-w2", rank.WindowOf("rt-dd-b", 2))
	derived("rt-dd-ux", rank.UnionOf(views[3].boards, views[3].weights))

	sources := []string{"rt-dd-a", "rt-dd-b", "rt-dd-c", "rt-dd-x", "rt-dd-y"}
	modes := []rank.Mode{rank.Incr, rank.Best, rank.Set, rank.Incr, rank.Best}
	compare := func(when string) {
		t.Helper()
		now := clk.Now()
		cur := rank.PeriodAt(day, now)
		for _, v := range views {
			for back := range 2 {
				sel := rank.PeriodSel("")
				p := cur
				if back == 1 {
					sel = "previous"
					p = cur.Previous(day)
				}
				var parts []map[string]int64
				var ws []int64
				for i, b := range v.boards {
					q := p
					for range v.span {
						psel := rank.PeriodSel(strconv.FormatInt(q.Index, 10))
						if b == "rt-dd-x" || b == "rt-dd-y" {
							psel = ""
						}
						parts = append(parts, scoresOf(t, s, b, psel))
						ws = append(ws, v.weights[i])
						q = q.Previous(day)
					}
				}
				if (v.id == "rt-dd-ux") && back == 1 {
					continue // no periods
				}
				want := expectSum(rank.Desc, parts, ws)
				wantEntries(t, fmt.Sprintf("%s: %s period %q (%d)", when, v.id, sel, p.Index), noNames(all(t, s, v.id, sel).Entries), want...)
			}
		}
	}
	var g ids
	last := rank.PeriodAt(day, clk.Now()).Index
	built := false
	for n := 0; ; n++ {
		k, ok := next(len(sources))
		if !ok {
			break
		}
		m, _ := next(10)
		a, _ := next(41)
		step, _ := next(8)
		var e rank.Event
		if modes[k] == rank.Incr {
			e = delta(sources[k], g.next(), "m"+strconv.Itoa(m), int64(a-20))
		} else {
			e = value(sources[k], g.next(), "m"+strconv.Itoa(m), int64(a))
		}
		if _, err := rank.ApplyWait(t.Context(), s, e); err != nil {
			t.Fatalf("event %d %+v: %v", n, e, err)
		}
		if step == 0 {
			hours, _ := next(30)
			clk.Advance(time.Duration(hours+1) * time.Hour)
			if idx := rank.PeriodAt(day, clk.Now()).Index; idx != last {
				last = idx
				compare(fmt.Sprintf("after event %d, at %s", n, clk.Now().Format(time.RFC3339)))
			}
		}
		if n == 200 && !built {
			built = true
			derived("rt-dd-w3", rank.WindowOf("rt-dd-c", 3))
			views = append(views, view{"rt-dd-w3", []string{"rt-dd-c"}, []int64{1}, 3})
			compare("at the creation of rt-dd-w3")
		}
	}
	compare("at the end")
}

// testDerivedFanIn: the views one event of a source lands in, summed over
// its derived boards, stay within rank.MaxFanIn: a new derived board past
// it is refused naming source and changes nothing; the bound is exact; a
// board already counted may be put again; deleting a dependant frees its
// share; events still reach every view.
func testDerivedFanIn(t *testing.T, f Factory) {
	s := f(t, nil)
	src := put(t, s, board("rt-fi", func(b *rank.Board) { b.Group = "rt-fi"; b.Reset = rank.Daily; b.Retain = rank.MaxRetain }))
	window := func(id string, periods int) rank.Board {
		return board(id, func(b *rank.Board) { b.Group = "rt-fi"; b.Source = rank.WindowOf(src.ID, periods) })
	}
	union := func(id string) rank.Board {
		return board(id, func(b *rank.Board) { b.Group = "rt-fi"; b.Source = rank.UnionOf([]string{src.ID}, nil) })
	}
	putDerived(t, s, window("rt-fi-w400", rank.MaxWindowPeriods), rank.Desc, rank.Daily)
	w100 := putDerived(t, s, window("rt-fi-w100", 100), rank.Desc, rank.Daily)
	putDerived(t, s, union("rt-fi-u"), rank.Desc, rank.Daily)
	left := rank.MaxFanIn - rank.MaxWindowPeriods - 100 - 1
	refuse := func(b rank.Board) {
		t.Helper()
		before := snapshot(t, s, src.ID)
		putErr(t, s, b, rank.ErrInvalidConfig, "source")
		if _, err := s.GetBoard(t.Context(), b.ID); !errors.Is(err, rank.ErrUnknownBoard) {
			t.Fatalf("the refused board %s exists: %v", b.ID, err)
		}
		if after := snapshot(t, s, src.ID); after != before {
			t.Fatalf("a refused PUT changed the source:\n%s\n%s", before, after)
		}
	}
	refuse(window("rt-fi-over", left+1))
	last := putDerived(t, s, window("rt-fi-last", left), rank.Desc, rank.Daily) // exactly at the bound
	refuse(union("rt-fi-u2"))
	w100.Title = "renamed"
	putDerived(t, s, w100, rank.Desc, rank.Daily)
	if err := s.DeleteBoard(t.Context(), w100.ID); err != nil {
		t.Fatal(err)
	}
	putDerived(t, s, union("rt-fi-u2"), rank.Desc, rank.Daily)
	apply(t, s, delta(src.ID, "e1", "ann", 7))
	for _, id := range []string{"rt-fi-w400", last.ID, "rt-fi-u", "rt-fi-u2"} {
		wantEntries(t, id, top(t, s, id, "", 0, 10).Entries, ent(1, "ann", 7))
	}
}
