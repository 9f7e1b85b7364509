package ranktest

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

// expiryPatience bounds how long an expiry test waits for an engine whose
// expiry runs on a server's real clock (a 1s window, so a few seconds).
const expiryPatience = 10 * time.Second

// nowAnchor starts injected clocks near the real time, so an engine that hands
// absolute expiry times to a server does not see them in the distant past.
func nowAnchor() time.Time { return time.Now().UTC().Truncate(time.Second) }

func testTopPages(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	b := put(t, s, rank.DefaultBoard("rt-pages"))
	if pg := top(t, s, b.ID, "", 0, 10); len(pg.Entries) != 0 || pg.Total != 0 {
		t.Fatalf("empty board page: %+v", pg)
	}
	var g ids
	for i := 1; i <= 5; i++ {
		apply(t, s, delta(b.ID, g.next(), fmt.Sprintf("m%d", i), int64(60-10*i)))
	}
	e := []rank.Entry{ent(1, "m1", 50), ent(2, "m2", 40), ent(3, "m3", 30), ent(4, "m4", 20), ent(5, "m5", 10)}
	cases := []struct {
		offset, limit int
		want          []rank.Entry
	}{
		{0, 10, e},
		{0, 5, e},
		{0, 1, e[:1]},
		{0, 2, e[:2]},
		{3, 2, e[3:]},
		{4, 5, e[4:]},
		{2, 1, e[2:3]},
		{5, 1, nil},
		{100, 10, nil},
		{0, 0, nil},
		{3, 0, nil},
	}
	for _, tc := range cases {
		pg := top(t, s, b.ID, "", tc.offset, tc.limit)
		wantEntries(t, fmt.Sprintf("Top(%d, %d)", tc.offset, tc.limit), pg.Entries, tc.want...)
		if pg.Total != 5 || pg.Offset != tc.offset || pg.Board != b.ID || pg.Seq != 5 {
			t.Fatalf("Top(%d, %d): total %d offset %d board %q seq %d", tc.offset, tc.limit, pg.Total, pg.Offset, pg.Board, pg.Seq)
		}
	}
	for _, bad := range [][2]int{{-1, 10}, {0, -1}} {
		if _, err := s.Top(ctx, b.ID, "", bad[0], bad[1]); !errors.Is(err, rank.ErrBadRequest) {
			t.Fatalf("Top(%d, %d): %v, want ErrBadRequest", bad[0], bad[1], err)
		}
	}
}

func testRanksAround(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	b := put(t, s, rank.DefaultBoard("rt-around"))
	var g ids
	e := make([]rank.Entry, 7)
	for i := range e {
		m := fmt.Sprintf("m%d", i+1)
		apply(t, s, named(delta(b.ID, g.next(), m, int64(70-10*i)), "N"+m))
		e[i] = ent(int64(i+1), m, int64(70-10*i), "N"+m)
	}
	cases := []struct {
		member string
		around int
		want   []rank.Entry // nil: not found
	}{
		{"m1", 2, e[0:3]},
		{"m7", 2, e[4:7]},
		{"m4", 1, e[2:5]},
		{"m4", 10, e},
		{"m1", 100, e},
		{"m4", 0, e[3:4]},
		{"m7", 0, e[6:7]},
		{"absent", 3, nil},
	}
	for _, tc := range cases {
		m := one(t, s, b.ID, tc.member, tc.around)
		if tc.want == nil {
			if m.Found || m.Rank != 0 || m.Score != 0 || len(m.Around) != 0 || m.Member != tc.member {
				t.Fatalf("Ranks(%s): %+v, want not found", tc.member, m)
			}
			continue
		}
		var self rank.Entry
		for _, x := range tc.want {
			if x.Member == tc.member {
				self = x
			}
		}
		if !m.Found || m.Member != tc.member || m.Rank != self.Rank || m.Score != self.Score || m.Name != self.Name {
			t.Fatalf("Ranks(%s, %d) = %+v, want %+v", tc.member, tc.around, m, self)
		}
		wantEntries(t, fmt.Sprintf("around(%s, %d)", tc.member, tc.around), m.Around, tc.want...)
	}

	// Several members in one call, in the order asked.
	rs := ranks(t, s, b.ID, "", 1, "m6", "absent", "m2")
	if rs.Total != 7 || rs.Seq != 7 || rs.Board != b.ID {
		t.Fatalf("Ranks: total %d seq %d board %q", rs.Total, rs.Seq, rs.Board)
	}
	if got := []string{rs.Members[0].Member, rs.Members[1].Member, rs.Members[2].Member}; !slices.Equal(got, []string{"m6", "absent", "m2"}) {
		t.Fatalf("Ranks members in order %v", got)
	}
	wantEntries(t, "m6", rs.Members[0].Around, e[4:7]...)
	if rs.Members[1].Found {
		t.Fatalf("absent member found: %+v", rs.Members[1])
	}
	wantEntries(t, "m2", rs.Members[2].Around, e[0:3]...)

	if rs := ranks(t, s, b.ID, "", 2); rs.Total != 7 || len(rs.Members) != 0 {
		t.Fatalf("Ranks with no members: %+v", rs)
	}
	if _, err := s.Ranks(ctx, b.ID, "", []string{"m1"}, rank.BoardRanks-1); !errors.Is(err, rank.ErrBadRequest) {
		t.Fatalf("Ranks around %d: %v, want ErrBadRequest", rank.BoardRanks-1, err)
	}
	// BoardRanks on a plain board: around 0.
	if rs, err := s.Ranks(ctx, b.ID, "", []string{"m2"}, rank.BoardRanks); err != nil || len(rs.Members) != 1 || !rs.Members[0].Found || len(rs.Members[0].Around) != 1 || rs.Members[0].Around[0].Member != "m2" {
		t.Fatalf("Ranks with BoardRanks: %+v, %v; want m2 with its own entry alone", rs, err)
	}
	if _, err := s.Ranks(ctx, b.ID, "", []string{"m1", "bad member"}, 1); !errors.Is(err, rank.ErrInvalidMember) {
		t.Fatalf("Ranks of an invalid member id: %v, want ErrInvalidMember", err)
	}
}

func testNames(t *testing.T, f Factory) {
	s := f(t, nil)
	b := put(t, s, rank.DefaultBoard("rt-names"))
	other := put(t, s, rank.DefaultBoard("rt-names-other"))
	var g ids
	apply(t, s, named(delta(b.ID, g.next(), "a", 10), "Alice"))
	wantTop(t, s, b.ID, ent(1, "a", 10, "Alice"))
	apply(t, s, delta(b.ID, g.next(), "a", 1)) // "" keeps the stored name
	wantTop(t, s, b.ID, ent(1, "a", 11, "Alice"))
	apply(t, s, named(delta(b.ID, g.next(), "a", 1), "Al ☺"))
	apply(t, s, delta(b.ID, g.next(), "b", 20))
	wantTop(t, s, b.ID, ent(1, "b", 20), ent(2, "a", 12, "Al ☺"))
	m := one(t, s, b.ID, "a", 1)
	if m.Name != "Al ☺" {
		t.Fatalf("Ranks(a).Name = %q", m.Name)
	}
	wantEntries(t, "around a", m.Around, ent(1, "b", 20), ent(2, "a", 12, "Al ☺"))

	// A failed event stores no name.
	applyErr(t, s, named(delta(b.ID, g.next(), "c", rank.MaxScore+1), "Carol"), rank.ErrInvalidScore)
	apply(t, s, delta(b.ID, g.next(), "c", 1))
	wantTop(t, s, b.ID, ent(1, "b", 20), ent(2, "a", 12, "Al ☺"), ent(3, "c", 1))
	// Names belong to a board.
	apply(t, s, delta(other.ID, g.next(), "a", 1))
	wantTop(t, s, other.ID, ent(1, "a", 1))
}

func testPeriods(t *testing.T, f Factory) {
	cases := []struct {
		reset rank.Reset
		tz    string
	}{
		{rank.Hourly, "UTC"},
		{rank.Daily, "UTC"},
		{rank.Weekly, "UTC"},
		{rank.Monthly, "UTC"},
		{rank.Daily, "Asia/Tokyo"},
		{rank.Weekly, "America/New_York"},
		{"1m", "UTC"},
		{"15m", "Asia/Kolkata"},
	}
	for _, tc := range cases {
		t.Run(string(tc.reset)+"-"+tc.tz, func(t *testing.T) {
			t.Parallel()
			b := board("rt-period", func(b *rank.Board) { b.Reset = tc.reset; b.TZ = tc.tz })
			p1 := rank.PeriodAt(b, time.Now())
			// Start one second before the period ends, so one step crosses it.
			clk := NewClock(p1.End.Add(-time.Second))
			s := f(t, clk.Now)
			put(t, s, b)
			r := apply(t, s, named(delta(b.ID, "e1", "a", 10), "Alice"))
			if r.Period != p1.Index {
				t.Fatalf("first write went to period %d, want %d", r.Period, p1.Index)
			}
			apply(t, s, delta(b.ID, "e2", "b", 5))
			clk.Advance(2 * time.Second)
			p2 := rank.PeriodAt(b, clk.Now())
			if p2.Index == p1.Index || p2.Previous(b).Index != p1.Index {
				t.Fatalf("clock did not cross into the next period: %d then %d", p1.Index, p2.Index)
			}
			r = apply(t, s, delta(b.ID, "e3", "a", 3))
			want := rank.Result{Board: b.ID, Member: "a", Score: 3, Rank: 1, Seq: 3, Period: p2.Index}
			if r != want {
				t.Fatalf("first write of the new period = %+v\nwant %+v", r, want)
			}
			if n, err := s.Count(t.Context(), b.ID); err != nil || n != 1 {
				t.Fatalf("Count = %d, %v; want the current period's 1", n, err)
			}
			cur := []rank.Entry{ent(1, "a", 3, "Alice")}
			prev := []rank.Entry{ent(1, "a", 10, "Alice"), ent(2, "b", 5)}
			reads := []struct {
				sel    rank.PeriodSel
				period int64
				want   []rank.Entry
			}{
				{"", p2.Index, cur},
				{"current", p2.Index, cur},
				{rank.PeriodSel(strconv.FormatInt(p2.Index, 10)), p2.Index, cur},
				{"previous", p1.Index, prev},
				{rank.PeriodSel(strconv.FormatInt(p1.Index, 10)), p1.Index, prev},
				{rank.PeriodSel(strconv.FormatInt(p1.Index-1, 10)), p1.Index - 1, nil},
			}
			for _, rd := range reads {
				pg := all(t, s, b.ID, rd.sel)
				wantEntries(t, fmt.Sprintf("Top(%q)", rd.sel), pg.Entries, rd.want...)
				if pg.Period != rd.period || pg.Total != int64(len(rd.want)) || pg.Seq != 3 {
					t.Fatalf("Top(%q): period %d total %d seq %d; want period %d total %d seq 3", rd.sel, pg.Period, pg.Total, pg.Seq, rd.period, len(rd.want))
				}
			}
			rs := ranks(t, s, b.ID, "previous", 1, "b", "a")
			if rs.Period != p1.Index || rs.Total != 2 || rs.Members[0].Rank != 2 || rs.Members[1].Score != 10 {
				t.Fatalf("Ranks(previous) = %+v", rs)
			}
			wantEntries(t, "previous around b", rs.Members[0].Around, prev...)
			if m := one(t, s, b.ID, "b", 1); m.Found {
				t.Fatalf("b found in the current period: %+v", m)
			}
			// A retry across the boundary is still the first result.
			if r := apply(t, s, delta(b.ID, "e1", "a", 10)); !r.Duplicate || r.Period != p1.Index || r.Score != 10 {
				t.Fatalf("retry of a previous period's event: %+v", r)
			}
		})
	}
}

func testPeriodSelectors(t *testing.T, f Factory) {
	clk := NewClock(nowAnchor())
	s := f(t, clk.Now)
	ctx := t.Context()
	none := put(t, s, rank.DefaultBoard("rt-sel-none"))
	daily := put(t, s, board("rt-sel-daily", func(b *rank.Board) { b.Reset = rank.Daily }))
	var g ids
	apply(t, s, delta(none.ID, g.next(), "a", 1))
	apply(t, s, delta(daily.ID, g.next(), "a", 1))
	for _, sel := range []rank.PeriodSel{"", "current"} {
		wantEntries(t, "none "+string(sel), top(t, s, none.ID, sel, 0, 10).Entries, ent(1, "a", 1))
	}
	cases := []struct {
		board string
		sel   rank.PeriodSel
	}{
		{none.ID, "previous"},
		{none.ID, "20240101"},
		{daily.ID, "yesterday"},
		{daily.ID, "-1"},
		{daily.ID, "0"},
		{daily.ID, "1.5"},
		{daily.ID, " 20240101"},
		{daily.ID, "Previous"},
	}
	for _, tc := range cases {
		if _, err := s.Top(ctx, tc.board, tc.sel, 0, 10); !errors.Is(err, rank.ErrBadRequest) {
			t.Errorf("Top(%s, %q): %v, want ErrBadRequest", tc.board, tc.sel, err)
		}
		if _, err := s.Ranks(ctx, tc.board, tc.sel, []string{"a"}, 1); !errors.Is(err, rank.ErrBadRequest) {
			t.Errorf("Ranks(%s, %q): %v, want ErrBadRequest", tc.board, tc.sel, err)
		}
	}
}

func testDeletePeriodBoard(t *testing.T, f Factory) {
	b := board("rt-delete-period", func(b *rank.Board) { b.Reset = rank.Hourly })
	clk := NewClock(rank.PeriodAt(b, time.Now()).End.Add(-time.Second))
	s := f(t, clk.Now)
	put(t, s, b)
	apply(t, s, delta(b.ID, "e1", "a", 1))
	clk.Advance(2 * time.Second)
	apply(t, s, delta(b.ID, "e2", "b", 1))
	if err := s.DeleteBoard(t.Context(), b.ID); err != nil {
		t.Fatal(err)
	}
	put(t, s, b)
	for _, sel := range []rank.PeriodSel{"", "previous"} {
		if pg := top(t, s, b.ID, sel, 0, 10); len(pg.Entries) != 0 || pg.Total != 0 {
			t.Fatalf("period %q survived DeleteBoard: %+v", sel, pg)
		}
	}
}

func testConcurrency(t *testing.T, f Factory) {
	s := f(t, nil)
	b := put(t, s, rank.DefaultBoard("rt-conc"))
	const workers, per, members = 8, 150, 10
	type applied struct {
		member string
		delta  int64
		seq    int64
	}
	logs := make([][]applied, workers)
	var writers, reader sync.WaitGroup
	done := make(chan struct{})
	reader.Add(1)
	go func() {
		defer reader.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			pg, err := s.Top(t.Context(), b.ID, "", 0, members)
			if err != nil {
				t.Errorf("concurrent Top: %v", err)
				return
			}
			for i := 1; i < len(pg.Entries); i++ {
				if pg.Entries[i].Rank != int64(i+1) || pg.Entries[i].Score > pg.Entries[i-1].Score {
					t.Errorf("concurrent Top out of order: %s", fmtEntries(pg.Entries))
					return
				}
			}
		}
	}()
	for w := range workers {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			var last int64
			for i := range per {
				e := delta(b.ID, fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("m%d", rng.IntN(members)), int64(rng.IntN(21)-5))
				r, err := rank.ApplyWait(t.Context(), s, e)
				if err != nil {
					t.Errorf("Apply: %v", err)
					return
				}
				if r.Duplicate || r.Seq <= last || r.Rank < 1 || r.Rank > members {
					t.Errorf("worker %d event %d: %+v after seq %d", w, i, r, last)
				}
				last = r.Seq
				logs[w] = append(logs[w], applied{e.Member, e.Amount, r.Seq})
				if i%10 == 0 { // a retry is applied at most once
					if d, err := rank.ApplyWait(t.Context(), s, e); err != nil || !d.Duplicate || d.Seq != r.Seq || d.Score != r.Score {
						t.Errorf("retry of %s = %+v, %v; want duplicate of %+v", e.ID, d, err, r)
					}
				}
			}
		}()
	}
	writers.Wait()
	close(done)
	reader.Wait()
	if t.Failed() {
		return
	}

	want := map[string]int64{}
	var seqs []int64
	for _, l := range logs {
		for _, a := range l {
			want[a.member] += a.delta
			seqs = append(seqs, a.seq)
		}
	}
	slices.Sort(seqs)
	for i, q := range seqs {
		if q != int64(i+1) {
			t.Fatalf("seqs of %d applied events are not 1..%d: position %d holds %d", len(seqs), len(seqs), i, q)
		}
	}
	pg := all(t, s, b.ID, "")
	if pg.Total != int64(len(want)) || pg.Seq != workers*per {
		t.Fatalf("after the run: total %d seq %d, want %d and %d", pg.Total, pg.Seq, len(want), workers*per)
	}
	for _, e := range pg.Entries {
		if e.Score != want[e.Member] {
			t.Errorf("ledger: %s has %d, the sum of its deltas is %d", e.Member, e.Score, want[e.Member])
		}
	}
}
