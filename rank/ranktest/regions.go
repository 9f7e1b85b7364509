package ranktest

// Region boards (§17, R37): placement by the event's region, moves, ranks
// and pages within a region with the board's order and ties, the region
// list, periods, bans and removals, erasure, and the board's own reads
// as without regions. RegionDifferential (regions_model.go) holds an
// engine equal to a model over random events and country changes.

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// RunRegions is the region part of the conformance suite.
func RunRegions(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, f Factory)
	}{
		{"Validation", testRegionValidation},
		{"Placement", testRegionPlacement},
		{"Ties", testRegionTies},
		{"Periods", testRegionPeriods},
		{"Bans", testRegionBans},
		{"Erase", testRegionErase},
		{"Differential", func(t *testing.T, f Factory) {
			for _, seed := range []uint64{1, 2, 3} {
				clk := NewClock(skewedAnchor())
				RegionDifferential(t, f(t, clk.Now), clk, seed, 600)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, f)
		})
	}
}

func regionBoard(id string, mut func(b *rank.Board)) rank.Board {
	return board(id, func(b *rank.Board) {
		b.Regions = true
		if mut != nil {
			mut(b)
		}
	})
}

// in is e placed in region.
func in(e rank.Event, region string) rank.Event {
	e.Region = region
	return e
}

func regionTop(t *testing.T, s rank.Store, id string, p rank.PeriodSel, region string, offset, limit int) rank.Page {
	t.Helper()
	pg, err := s.RegionTop(t.Context(), id, p, region, offset, limit)
	if err != nil {
		t.Fatalf("RegionTop(%s, %q, %s, %d, %d): %v", id, p, region, offset, limit, err)
	}
	return pg
}

func regionList(t *testing.T, s rank.Store, id string, p rank.PeriodSel) []rank.RegionCount {
	t.Helper()
	rs, err := s.Regions(t.Context(), id, p)
	if err != nil {
		t.Fatalf("Regions(%s, %q): %v", id, p, err)
	}
	return rs
}

func regionRanks(t *testing.T, s rank.Store, id string, p rank.PeriodSel, around int, members ...string) []rank.MemberRank {
	t.Helper()
	r, err := s.RegionRanks(t.Context(), id, p, members, around)
	if err != nil {
		t.Fatalf("RegionRanks(%s, %q, %v, %d): %v", id, p, members, around, err)
	}
	if len(r.Members) != len(members) {
		t.Fatalf("RegionRanks(%s, %v) returned %d members", id, members, len(r.Members))
	}
	return r.Members
}

// wantRegions compares a region list with "DE:3 FR:1".
func wantRegions(t *testing.T, what string, got []rank.RegionCount, want string) {
	t.Helper()
	parts := make([]string, len(got))
	for i, r := range got {
		parts[i] = fmt.Sprintf("%s:%d", r.Region, r.Members)
	}
	if s := strings.Join(parts, " "); s != want {
		t.Fatalf("%s: regions %q, want %q", what, s, want)
	}
}

// wantRegionTop compares a whole region's standings and its total.
func wantRegionTop(t *testing.T, s rank.Store, id string, p rank.PeriodSel, region string, want ...rank.Entry) {
	t.Helper()
	pg := regionTop(t, s, id, p, region, 0, 100)
	wantEntries(t, "region "+region+" of "+id, pg.Entries, want...)
	if pg.Total != int64(len(want)) {
		t.Fatalf("region %s of %s: total %d, want %d", region, id, pg.Total, len(want))
	}
}

// wantRegionAck checks an ack's region fields.
func wantRegionAck(t *testing.T, what string, r rank.Result, region string, regionRank int64, from string) {
	t.Helper()
	if r.Region != region || r.RegionRank != regionRank || r.RegionFrom != from {
		t.Fatalf("%s: region %q rank %d from %q, want %q rank %d from %q (%+v)",
			what, r.Region, r.RegionRank, r.RegionFrom, region, regionRank, from, r)
	}
}

// testRegionValidation: §17's config rules, regions fixed at creation, and
// region reads refused where they mean nothing; a refused config changes
// nothing.
func testRegionValidation(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	put(t, s, board("rt-rv-src", nil))
	for name, mut := range map[string]func(b *rank.Board){
		"shards": func(b *rank.Board) { b.Shards = 2 },
		"cohort": func(b *rank.Board) { b.Cohort = rank.Cohort{Size: 10} },
		"decay": func(b *rank.Board) {
			b.Decay = rank.Decay{Bucket: rank.Duration(time.Minute), Buckets: 2, Factor: 0.5}
			b.Tiebreak = rank.Shared
		},
		"source": func(b *rank.Board) {
			b.Source = rank.UnionOf([]string{"rt-rv-src"}, nil)
			b.Group, b.Tiebreak = "rt-rv-src", rank.Shared
		},
	} {
		b := regionBoard("rt-rv-"+name, mut)
		_, err := s.PutBoard(ctx, b)
		if !errors.Is(err, rank.ErrInvalidConfig) || !strings.Contains(err.Error(), "field regions") {
			t.Errorf("regions with %s: PutBoard = %v, want ErrInvalidConfig naming regions", name, err)
		}
		if _, err := s.GetBoard(ctx, b.ID); !errors.Is(err, rank.ErrUnknownBoard) {
			t.Errorf("regions with %s: a refused config was stored (%v)", name, err)
		}
	}
	rb := put(t, s, regionBoard("rt-rv", nil))
	plain := put(t, s, board("rt-rv-plain", nil))
	for _, c := range []struct {
		b  rank.Board
		to bool
	}{{rb, false}, {plain, true}} {
		b := c.b
		b.Regions = c.to
		if _, err := s.PutBoard(ctx, b); !errors.Is(err, rank.ErrRegionsFixed) {
			t.Errorf("%s: regions %t → %t: PutBoard = %v, want ErrRegionsFixed", b.ID, !c.to, c.to, err)
		}
		if got, err := s.GetBoard(ctx, b.ID); err != nil || got != c.b {
			t.Errorf("%s after a refused change: %+v, %v", b.ID, got, err)
		}
	}
	renamed := rb
	renamed.Title = "by country"
	put(t, s, renamed) // other fields still change

	for name, call := range map[string]func(id string) error{
		"RegionTop":   func(id string) error { _, err := s.RegionTop(ctx, id, "", "DE", 0, 10); return err },
		"Regions":     func(id string) error { _, err := s.Regions(ctx, id, ""); return err },
		"RegionRanks": func(id string) error { _, err := s.RegionRanks(ctx, id, "", []string{"a"}, 0); return err },
	} {
		if err := call(plain.ID); !errors.Is(err, rank.ErrBadRequest) {
			t.Errorf("%s on a board without regions: %v, want ErrBadRequest", name, err)
		}
		if err := call("rt-rv-none"); !errors.Is(err, rank.ErrUnknownBoard) {
			t.Errorf("%s on no board: %v, want ErrUnknownBoard", name, err)
		}
		if err := call("bad board"); !errors.Is(err, rank.ErrInvalidBoard) {
			t.Errorf("%s on a malformed board id: %v, want ErrInvalidBoard", name, err)
		}
	}
	for _, bad := range []string{"", "de", "XX", "DEU", "Z", "D1"} {
		if _, err := s.RegionTop(ctx, rb.ID, "", bad, 0, 10); !errors.Is(err, rank.ErrBadRequest) {
			t.Errorf("RegionTop of region %q: %v, want ErrBadRequest", bad, err)
		}
	}
	if _, err := s.RegionTop(ctx, rb.ID, "", "DE", -1, 10); !errors.Is(err, rank.ErrBadRequest) {
		t.Errorf("RegionTop at offset -1: %v, want ErrBadRequest", err)
	}
	if _, err := s.RegionRanks(ctx, rb.ID, "", []string{"a"}, -1); !errors.Is(err, rank.ErrBadRequest) {
		t.Errorf("RegionRanks around -1: %v, want ErrBadRequest", err)
	}
	if _, err := s.RegionRanks(ctx, rb.ID, "", []string{"bad member"}, 0); !errors.Is(err, rank.ErrInvalidMember) {
		t.Errorf("RegionRanks of a malformed member: %v, want ErrInvalidMember", err)
	}
	if pg := regionTop(t, s, rb.ID, "", "DE", 0, 10); pg.Total != 0 || len(pg.Entries) != 0 {
		t.Errorf("a region nobody is in: %+v, want an empty page", pg)
	}
	wantRegions(t, "an empty board", regionList(t, s, rb.ID, ""), "")
}

// testRegionPlacement: each event places its member in the region it
// names ("" = ZZ), moving it when it changed; acks, pages, lists and member
// reads of regions; the board's own reads as without regions; a retry
// after a move is a duplicate with its first result.
func testRegionPlacement(t *testing.T, f Factory) {
	s := f(t, nil)
	b := put(t, s, regionBoard("rt-rg", nil))
	var g ids
	wantRegionAck(t, "a", apply(t, s, in(delta(b.ID, g.next(), "a", 10), "DE")), "DE", 1, "")
	wantRegionAck(t, "b", apply(t, s, in(delta(b.ID, g.next(), "b", 30), "FR")), "FR", 1, "")
	wantRegionAck(t, "c", apply(t, s, in(delta(b.ID, g.next(), "c", 20), "DE")), "DE", 1, "")
	wantRegionAck(t, "d", apply(t, s, delta(b.ID, g.next(), "d", 5)), rank.RegionNone, 1, "")
	r := apply(t, s, in(delta(b.ID, g.next(), "e", 20), "DE")) // ties with c, who was first
	wantRegionAck(t, "e", r, "DE", 2, "")
	if r.Rank != 3 || r.PrevRank != 0 {
		t.Fatalf("e's board rank %d prev %d, want 3 and 0 (the board's ranks as without regions)", r.Rank, r.PrevRank)
	}

	wantRegions(t, "five members", regionList(t, s, b.ID, ""), "DE:3 FR:1 ZZ:1")
	wantRegionTop(t, s, b.ID, "", "DE", ent(1, "c", 20), ent(2, "e", 20), ent(3, "a", 10))
	wantEntries(t, "DE from offset 1", regionTop(t, s, b.ID, "", "DE", 1, 1).Entries, ent(2, "e", 20))
	wantTop(t, s, b.ID, ent(1, "b", 30), ent(2, "c", 20), ent(3, "e", 20), ent(4, "a", 10), ent(5, "d", 5))

	mr := one(t, s, b.ID, "a", 1)
	if mr.Rank != 4 || mr.Region != "DE" || mr.RegionRank != 3 {
		t.Fatalf("Ranks(a): %+v, want board rank 4, region DE rank 3", mr)
	}
	wantEntries(t, "a's board neighbours", mr.Around, ent(3, "e", 20), ent(4, "a", 10), ent(5, "d", 5))
	vs := regionRanks(t, s, b.ID, "", 1, "a", "b", "nobody")
	if v := vs[0]; !v.Found || v.Rank != 3 || v.Region != "DE" || v.RegionRank != 3 {
		t.Fatalf("RegionRanks(a): %+v, want rank 3 in DE", v)
	}
	wantEntries(t, "a's region neighbours", vs[0].Around, ent(2, "e", 20), ent(3, "a", 10))
	wantEntries(t, "b's region neighbours", vs[1].Around, ent(1, "b", 30))
	if vs[2].Found || vs[2].Region != "" {
		t.Fatalf("RegionRanks(nobody): %+v, want not found", vs[2])
	}

	// a moves to FR with its event; DE closes up.
	moveID := g.next()
	r = apply(t, s, in(delta(b.ID, moveID, "a", 15), "FR"))
	wantRegionAck(t, "a moving", r, "FR", 2, "DE")
	wantRegionTop(t, s, b.ID, "", "DE", ent(1, "c", 20), ent(2, "e", 20))
	wantRegionTop(t, s, b.ID, "", "FR", ent(1, "b", 30), ent(2, "a", 25))
	wantRegions(t, "after the move", regionList(t, s, b.ID, ""), "DE:2 FR:2 ZZ:1")
	// A move without a score change keeps a's place among equal scores.
	apply(t, s, in(delta(b.ID, g.next(), "c", 5), "DE"))
	r = apply(t, s, in(delta(b.ID, g.next(), "a", 0), "DE"))
	wantRegionAck(t, "a back", r, "DE", 1, "FR")
	apply(t, s, in(delta(b.ID, g.next(), "e", 5), "DE")) // e reaches 25 after a
	wantRegionTop(t, s, b.ID, "", "DE", ent(1, "a", 25), ent(2, "c", 25), ent(3, "e", 25))
	wantRegionTop(t, s, b.ID, "", "FR", ent(1, "b", 30))
	// A retry names another region: still the first result, nothing moves.
	dup, err := rank.ApplyWait(t.Context(), s, in(delta(b.ID, moveID, "a", 15), "ZZ"))
	if err != nil || !dup.Duplicate {
		t.Fatalf("retry of a's move: %+v, %v; want a duplicate", dup, err)
	}
	wantRegionAck(t, "a's retry", dup, "FR", 2, "")
	wantRegions(t, "after the retry", regionList(t, s, b.ID, ""), "DE:3 FR:1 ZZ:1")
}

// testRegionTies: a region's standings are the board's, filtered to the
// region: same order, same ties (first, last, shared; desc and asc).
func testRegionTies(t *testing.T, f Factory) {
	s := f(t, nil)
	regions := []string{"DE", "FR", ""}
	for _, tb := range []rank.Tiebreak{rank.First, rank.Last, rank.Shared} {
		for _, o := range []rank.Order{rank.Desc, rank.Asc} {
			b := put(t, s, regionBoard(fmt.Sprintf("rt-rgt-%s-%s", tb, o), func(b *rank.Board) { b.Tiebreak, b.Order = tb, o }))
			var g ids
			for i := range 40 {
				m := fmt.Sprintf("m%d", i%13)
				apply(t, s, in(delta(b.ID, g.next(), m, int64(i%3)), regions[(i*7)%3]))
			}
			global := all(t, s, b.ID, "").Entries
			where := map[string]string{}
			for _, e := range global {
				where[e.Member] = one(t, s, b.ID, e.Member, 0).Region
			}
			for _, region := range []string{"DE", "FR", rank.RegionNone} {
				var want []rank.Entry
				for _, e := range global {
					if where[e.Member] == region {
						want = append(want, e)
					}
				}
				for i := range want {
					want[i].Rank = int64(i + 1)
					if tb == rank.Shared && i > 0 && want[i].Score == want[i-1].Score {
						want[i].Rank = want[i-1].Rank
					}
				}
				wantRegionTop(t, s, b.ID, "", region, want...)
				for _, e := range want {
					if mr := one(t, s, b.ID, e.Member, 0); mr.RegionRank != e.Rank {
						t.Fatalf("%s: %s's region rank %d, want %d", b.ID, e.Member, mr.RegionRank, e.Rank)
					}
				}
			}
		}
	}
}

// testRegionPeriods: each period has its own regions; a late event within
// grace lands in its period's regions; past periods stay readable while
// retained.
func testRegionPeriods(t *testing.T, f Factory) {
	clk := NewClock(skewedAnchor())
	s := f(t, clk.Now)
	b := put(t, s, regionBoard("rt-rgp", func(b *rank.Board) {
		b.Reset, b.Retain, b.Grace = "1m", 1, rank.Duration(30*time.Second)
	}))
	p := rank.PeriodAt(b, clk.Now())
	clk.Set(p.Start.Add(time.Second))
	var g ids
	apply(t, s, in(delta(b.ID, g.next(), "a", 5), "DE"))
	apply(t, s, in(delta(b.ID, g.next(), "b", 3), "FR"))
	clk.Set(p.End.Add(10 * time.Second))
	r := apply(t, s, in(delta(b.ID, g.next(), "a", 1), "FR"))
	wantRegionAck(t, "a in the next period", r, "FR", 1, "") // no move: a new period
	if r.Period != p.Index+1 {
		t.Fatalf("a's period %d, want %d", r.Period, p.Index+1)
	}
	late := delta(b.ID, g.next(), "c", 4)
	late.At = p.End.Add(-time.Second)
	if r := apply(t, s, in(late, "DE")); r.Period != p.Index || r.RegionRank != 2 || r.Region != "DE" {
		t.Fatalf("late event: %+v, want period %d, rank 2 in DE", r, p.Index)
	}
	wantRegions(t, "current", regionList(t, s, b.ID, ""), "FR:1")
	wantRegions(t, "previous", regionList(t, s, b.ID, "previous"), "DE:2 FR:1")
	wantRegionTop(t, s, b.ID, "previous", "DE", ent(1, "a", 5), ent(2, "c", 4))
	wantRegionTop(t, s, b.ID, rank.PeriodSel(fmt.Sprint(p.Index)), "FR", ent(1, "b", 3))
	if v := regionRanks(t, s, b.ID, "previous", 1, "c")[0]; v.Rank != 2 || v.Region != "DE" {
		t.Fatalf("c's previous period: %+v, want rank 2 in DE", v)
	}
	clk.Set(p.End.Add(2 * time.Minute)) // past retain
	wantRegions(t, "two periods on", regionList(t, s, b.ID, rank.PeriodSel(fmt.Sprint(p.Index))), "")
	wantRegionTop(t, s, b.ID, rank.PeriodSel(fmt.Sprint(p.Index)), "DE")
}

// testRegionBans: a banned member leaves its region's standings (R21) and
// comes back to the same region when the ban is lifted, whatever its
// events named meanwhile (they were refused); a removed entry leaves its
// region, and the member's next event places it anew.
func testRegionBans(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	b := put(t, s, regionBoard("rt-rgb", nil))
	var g ids
	for i, m := range []string{"a", "b", "c"} {
		apply(t, s, in(delta(b.ID, g.next(), m, int64(30-10*i)), "DE"))
	}
	apply(t, s, in(delta(b.ID, g.next(), "x", 50), "FR"))
	if _, err := s.BanMember(ctx, b.ID, rank.Ban{Member: "a"}); err != nil {
		t.Fatal(err)
	}
	wantRegionTop(t, s, b.ID, "", "DE", ent(1, "b", 20), ent(2, "c", 10))
	wantRegions(t, "a banned", regionList(t, s, b.ID, ""), "DE:2 FR:1")
	if v := regionRanks(t, s, b.ID, "", 0, "a", "c"); v[0].Found || v[1].Rank != 2 {
		t.Fatalf("a banned: %+v", v)
	}
	if mr := one(t, s, b.ID, "c", 0); mr.RegionRank != 2 || mr.Rank != 3 {
		t.Fatalf("c with a banned: %+v, want rank 3, region rank 2", mr)
	}
	applyErr(t, s, in(delta(b.ID, g.next(), "a", 1), "FR"), rank.ErrBanned)
	if err := s.LiftBan(ctx, b.ID, "a"); err != nil {
		t.Fatal(err)
	}
	wantRegionTop(t, s, b.ID, "", "DE", ent(1, "a", 30), ent(2, "b", 20), ent(3, "c", 10))
	wantRegionTop(t, s, b.ID, "", "FR", ent(1, "x", 50))

	if err := s.RemoveMember(ctx, b.ID, "b", ""); err != nil {
		t.Fatal(err)
	}
	wantRegionTop(t, s, b.ID, "", "DE", ent(1, "a", 30), ent(2, "c", 10))
	wantRegionAck(t, "b after its removal", apply(t, s, in(delta(b.ID, g.next(), "b", 15), "FR")), "FR", 2, "")
	wantRegions(t, "b placed anew", regionList(t, s, b.ID, ""), "DE:2 FR:2")

	// A global ban hides too; a removal while hidden drops the placement.
	if _, err := s.PutGlobalBan(ctx, rank.Ban{Member: "c"}); err != nil {
		t.Fatal(err)
	}
	wantRegionTop(t, s, b.ID, "", "DE", ent(1, "a", 30))
	if err := s.RemoveMember(ctx, b.ID, "c", ""); err != nil {
		t.Fatal(err)
	}
	if err := s.LiftGlobalBan(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	wantRegionTop(t, s, b.ID, "", "DE", ent(1, "a", 30))
	wantRegionAck(t, "c after its removal", apply(t, s, in(delta(b.ID, g.next(), "c", 1), "FR")), "FR", 3, "")
}

// testRegionErase: an erased member leaves its region's standings and
// list, and an old event id of it applies anew.
func testRegionErase(t *testing.T, f Factory) {
	s := f(t, nil)
	b := put(t, s, regionBoard("rt-rge", nil))
	apply(t, s, in(delta(b.ID, "1", "a", 10), "DE"))
	apply(t, s, in(delta(b.ID, "1", "b", 5), "DE"))
	apply(t, s, in(delta(b.ID, "1", "c", 7), "FR"))
	if _, err := s.Erase(t.Context(), "c"); err != nil {
		t.Fatal(err)
	}
	wantRegions(t, "c erased", regionList(t, s, b.ID, ""), "DE:2")
	if _, err := s.Erase(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	wantRegionTop(t, s, b.ID, "", "DE", ent(1, "b", 5))
	if r := apply(t, s, in(delta(b.ID, "1", "a", 1), "DE")); r.Duplicate || r.RegionRank != 2 {
		t.Fatalf("a's old id after its erasure: %+v, want applied anew at region rank 2", r)
	}
	wantRegions(t, "a anew", regionList(t, s, b.ID, ""), "DE:2")
}

// testRegionChanges: the sink hears each change on a region board with the
// member's region, region rank and the region it left, as the ack says,
// so live frames route per region.
func testRegionChanges(t *testing.T, f HooksFactory) {
	rec := newRecorder()
	s := f(t, rank.Hooks{Sink: rec.sink})
	b := put(t, s, regionBoard("rt-rgchg", nil))
	out := submitAll(t, s, rec, t.Context(), []rank.Event{
		in(delta(b.ID, "1", "a", 5), "DE"), in(delta(b.ID, "1", "b", 7), "DE"), delta(b.ID, "1", "c", 1),
		in(delta(b.ID, "2", "a", 5), "FR"),
	})
	want := []struct {
		region string
		rank   int64
		from   string
	}{{"DE", 1, ""}, {"DE", 1, ""}, {"ZZ", 1, ""}, {"FR", 1, "DE"}}
	for i, o := range out {
		if o.err != nil || !o.seen {
			t.Fatalf("event %d: %+v", i, o)
		}
		w := want[i]
		wantRegionAck(t, fmt.Sprintf("event %d's ack", i), o.r, w.region, w.rank, w.from)
		if c := o.change; c.Region != w.region || c.RegionRank != w.rank || c.RegionFrom != w.from {
			t.Errorf("event %d's change: %+v, want region %s rank %d from %q", i, c, w.region, w.rank, w.from)
		}
	}
}

// sortedRegions lists a region count map's keys in SortRegions' order.
func sortedRegions(counts map[string]int64) []rank.RegionCount {
	out := make([]rank.RegionCount, 0, len(counts))
	for r, n := range counts {
		out = append(out, rank.RegionCount{Region: r, Members: n})
	}
	return rank.SortRegions(out)
}
