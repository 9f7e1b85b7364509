package ranktest

// Season data (docs/protocol.md §18): Scan against the board's pages, the
// restore of a past period, caps (R39) and the names an import gives
// profiles.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/rank"
)

// scanAll reads a whole period with Scan, limit entries a chunk.
func scanAll(t *testing.T, s rank.Store, boardID string, p rank.PeriodSel, limit int, hidden bool) ([]rank.ScanEntry, int64) {
	t.Helper()
	var out []rank.ScanEntry
	var from rank.Cursor
	var period int64
	for chunks := 0; ; chunks++ {
		pg, err := s.Scan(t.Context(), boardID, p, from, limit, hidden)
		if err != nil {
			t.Fatalf("Scan(%s, %q, %q, %d): %v", boardID, p, from, limit, err)
		}
		if len(pg.Entries) > limit {
			t.Fatalf("Scan(%s) limit %d: %d entries", boardID, limit, len(pg.Entries))
		}
		if chunks > 0 && pg.Period != period {
			t.Fatalf("Scan(%s): period %d, then %d", boardID, period, pg.Period)
		}
		period = pg.Period
		out = append(out, pg.Entries...)
		if pg.Next == "" {
			return out, period
		}
		if len(pg.Entries) == 0 {
			t.Fatalf("Scan(%s): an empty chunk with a next cursor %q", boardID, pg.Next)
		}
		from = pg.Next
	}
}

func plainEntries(es []rank.ScanEntry) []rank.Entry {
	out := make([]rank.Entry, len(es))
	for i, e := range es {
		out[i] = e.Entry
	}
	return out
}

// wantScanAsPages scans p in chunks of several sizes and wants the
// board's pages, whole.
func wantScanAsPages(t *testing.T, s rank.Store, boardID string, p rank.PeriodSel) {
	t.Helper()
	pages := all(t, s, boardID, p)
	for _, limit := range []int{1, 7, 50, rank.MaxScan} {
		got, period := scanAll(t, s, boardID, p, limit, false)
		wantEntries(t, fmt.Sprintf("scan of %s period %q by %d", boardID, p, limit), plainEntries(got), pages.Entries...)
		if period != pages.Period {
			t.Fatalf("scan of %s period %q: period %d, pages say %d", boardID, p, period, pages.Period)
		}
		for _, e := range got {
			if e.Hidden {
				t.Fatalf("scan of %s without hidden: %+v marked hidden", boardID, e)
			}
		}
	}
}

// fill applies n random events over members m00… with few distinct
// scores (ties everywhere), some with names and meta.
func fill(t *testing.T, s rank.Store, b rank.Board, seed uint64, n, members int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x5ea5))
	for i := range n {
		e := rank.Event{Board: b.ID, ID: fmt.Sprintf("f%d", i), Member: fmt.Sprintf("m%03d", rng.IntN(members)), Op: rank.OpDelta, Amount: int64(rng.IntN(7) - 1)}
		if b.Mode != rank.Incr {
			e.Op = rank.OpValue
		}
		if rng.IntN(4) == 0 {
			e.Name = fmt.Sprintf("Name %d", rng.IntN(100))
		}
		if rng.IntN(3) == 0 && !b.Hot() {
			e.Meta = meta.Meta(fmt.Sprintf(`{"k":%d}`, i))
		}
		apply(t, s, e)
	}
}

// testSeasonScan: Scan lists every entry of a period in the order and with
// the ranks, scores, names and meta of the board's pages, whatever the
// chunk size, on every kind of board: orders, ties, shards, cohorts (global
// standings), derived and hot boards, past periods.
func testSeasonScan(t *testing.T, f Factory) {
	clk := NewClock(skewedAnchor())
	s := f(t, clk.Now)
	cases := []rank.Board{
		board("rt-scan-first", nil),
		board("rt-scan-asc-last", func(b *rank.Board) { b.Order, b.Tiebreak = rank.Asc, rank.Last }),
		board("rt-scan-shared", func(b *rank.Board) { b.Tiebreak = rank.Shared }),
		board("rt-scan-best", func(b *rank.Board) { b.Mode, b.Tiebreak = rank.Best, rank.Shared; b.Order = rank.Asc }),
		board("rt-scan-sh", func(b *rank.Board) { b.Shards = 5 }),
		board("rt-scan-sh-shared", func(b *rank.Board) { b.Shards = 3; b.Tiebreak = rank.Shared }),
		board("rt-scan-cohort", func(b *rank.Board) { b.Cohort = rank.Cohort{Size: 4} }),
		board("rt-scan-hot", func(b *rank.Board) {
			b.Decay = rank.Decay{Bucket: rank.Duration(time.Hour), Buckets: 4, Factor: 0.5}
			b.Tiebreak = rank.Shared
		}),
	}
	for i, b := range cases {
		put(t, s, b)
		fill(t, s, b, uint64(i), 300, 80)
		wantScanAsPages(t, s, b.ID, "")
	}
	// A sharded board whose best entries all sit in one shard: a chunk
	// must not run past what it read of that shard.
	skew := put(t, s, board("rt-scan-skew", func(b *rank.Board) { b.Shards = 5 }))
	for i := range 400 {
		m := fmt.Sprintf("k%03d", i)
		sc := int64(i % 7)
		if rank.ShardOf(m, skew.Shards) == 0 {
			sc += 1000
		}
		apply(t, s, delta(skew.ID, "k", m, sc))
	}
	wantScanAsPages(t, s, skew.ID, "")
	// A derived union, and a board's past period.
	src := put(t, s, board("rt-scan-src", func(b *rank.Board) { b.Group = "rt-scan-g"; b.Reset = rank.Daily }))
	putDerived(t, s, board("rt-scan-union", func(b *rank.Board) { b.Group = "rt-scan-g"; b.Source = rank.UnionOf([]string{src.ID}, []int64{3}) }), rank.Desc, rank.Daily)
	fill(t, s, src, 99, 200, 60)
	wantScanAsPages(t, s, "rt-scan-union", "")
	clk.Advance(24 * time.Hour)
	apply(t, s, delta(src.ID, "next-day", "m000", 5))
	wantScanAsPages(t, s, src.ID, "previous")
	wantScanAsPages(t, s, src.ID, "")
	// Nothing to read: an empty chunk, no cursor.
	put(t, s, board("rt-scan-empty", nil))
	got, _ := scanAll(t, s, "rt-scan-empty", "", 10, true)
	if len(got) != 0 {
		t.Fatalf("scan of an empty board: %+v", got)
	}
}

// testSeasonScanHidden: without hidden a Scan lists what reads show; with
// it, banned members' entries come back in their places, marked, ranked as
// if nobody were hidden (the pages before the ban).
func testSeasonScanHidden(t *testing.T, f Factory) {
	s := f(t, nil)
	for _, b := range []rank.Board{
		board("rt-scanh", nil),
		board("rt-scanh-shared", func(b *rank.Board) { b.Tiebreak = rank.Shared }),
		board("rt-scanh-sh", func(b *rank.Board) { b.Shards = 4 }),
	} {
		put(t, s, b)
		fill(t, s, b, 7, 200, 40)
		before := all(t, s, b.ID, "")
		banned := map[string]bool{}
		for _, i := range []int{0, 3, 17} {
			m := before.Entries[i].Member
			banned[m] = true
			if _, err := s.BanMember(t.Context(), b.ID, rank.Ban{Member: m, Reason: "test"}); err != nil {
				t.Fatal(err)
			}
		}
		wantScanAsPages(t, s, b.ID, "")
		for _, limit := range []int{1, 6, 1000} {
			got, _ := scanAll(t, s, b.ID, "", limit, true)
			wantEntries(t, fmt.Sprintf("%s with hidden by %d", b.ID, limit), plainEntries(got), before.Entries...)
			for _, e := range got {
				if e.Hidden != banned[e.Member] {
					t.Fatalf("%s: %+v hidden %v, want %v", b.ID, e.Entry, e.Hidden, banned[e.Member])
				}
			}
		}
	}
}

// testSeasonScanLive: a scan of a period that changes between its chunks
// never goes back, and lists every entry that did not change exactly
// once, in its place.
func testSeasonScanLive(t *testing.T, f Factory) {
	s := f(t, nil)
	for _, b := range []rank.Board{
		board("rt-scanl", nil),
		board("rt-scanl-sh", func(b *rank.Board) { b.Shards = 3; b.Tiebreak = rank.Shared }),
	} {
		put(t, s, b)
		const members = 120
		for i := range members {
			apply(t, s, delta(b.ID, "init", fmt.Sprintf("m%03d", i), int64(i%40)))
		}
		changed := map[string]bool{}
		rng := rand.New(rand.NewPCG(3, 4))
		var got []rank.ScanEntry
		var from rank.Cursor
		for n := 0; ; n++ {
			pg, err := s.Scan(t.Context(), b.ID, "", from, 9, false)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, pg.Entries...)
			if pg.Next == "" {
				break
			}
			from = pg.Next
			// Between chunks, the cursor's own member moves, down then up,
			// and other members move both ways, across the cursor too.
			last := pg.Entries[len(pg.Entries)-1].Member
			changed[last] = true
			apply(t, s, delta(b.ID, fmt.Sprintf("cursor%d", n), last, int64(25-50*(n%2))))
			for k := range 5 {
				m := fmt.Sprintf("m%03d", rng.IntN(members))
				changed[m] = true
				apply(t, s, delta(b.ID, fmt.Sprintf("live%d-%d", n, k), m, int64(rng.IntN(61)-30)))
			}
		}
		seen := map[string]int{}
		for i, e := range got {
			seen[e.Member]++
			if i > 0 && b.Better(e.Score, got[i-1].Score) {
				t.Fatalf("%s: the scan went back: %+v after %+v", b.ID, e.Entry, got[i-1].Entry)
			}
		}
		for i := range members {
			m := fmt.Sprintf("m%03d", i)
			if !changed[m] && seen[m] != 1 {
				t.Fatalf("%s: unchanged member %s listed %d times", b.ID, m, seen[m])
			}
		}
	}
}

// testSeasonScanErrors: a limit outside 1..MaxScan and a cursor that is no
// cursor are bad requests; a board that is not there is unknown.
func testSeasonScanErrors(t *testing.T, f Factory) {
	s := f(t, nil)
	put(t, s, board("rt-scane", nil))
	ctx := t.Context()
	for _, limit := range []int{0, -1, rank.MaxScan + 1} {
		if _, err := s.Scan(ctx, "rt-scane", "", "", limit, false); !errors.Is(err, rank.ErrBadRequest) {
			t.Errorf("Scan limit %d: %v, want bad_request", limit, err)
		}
	}
	if _, err := s.Scan(ctx, "rt-scane", "", "no cursor", 10, false); !errors.Is(err, rank.ErrBadRequest) {
		t.Errorf("Scan of a made-up cursor: %v, want bad_request", err)
	}
	if _, err := s.Scan(ctx, "rt-scane-none", "", "", 10, false); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Errorf("Scan of no board: %v, want unknown_board", err)
	}
	if _, err := s.Scan(ctx, "rt/bad", "", "", 10, false); !errors.Is(err, rank.ErrInvalidBoard) {
		t.Errorf("Scan of a bad id: %v, want invalid_board", err)
	}
}

// testRestore: an event with Into writes that past period at its start,
// whatever R17 says of the clock; idempotent as any event; derived boards
// follow it into their views of that period; a period the board does not
// retain, the current one, a league or a final board are refused.
func testRestore(t *testing.T, f Factory) {
	anchor := skewedAnchor()
	clk := NewClock(anchor)
	s := f(t, clk.Now)
	src := put(t, s, board("rt-restore", func(b *rank.Board) { b.Reset = rank.Daily; b.Retain = 3; b.Group = "rt-rs-g"; b.History = 5 }))
	putDerived(t, s, board("rt-restore-u", func(b *rank.Board) {
		b.Group, b.Retain = "rt-rs-g", 3
		b.Source = rank.UnionOf([]string{src.ID}, []int64{2})
	}), rank.Desc, rank.Daily)
	day0 := rank.PeriodAt(src, anchor)
	apply(t, s, delta(src.ID, "live", "a", 5))
	clk.Advance(48 * time.Hour) // day0 is two periods back
	day1 := rank.PeriodAt(src, day0.End)
	into := func(e rank.Event, p int64) rank.Event { e.Into = p; return e }

	// Plain R17 refuses day0; a restore writes it, at its start.
	applyErr(t, s, at(delta(src.ID, "late", "a", 1), day0.Start.Add(time.Hour)), rank.ErrBoardClosed)
	r := apply(t, s, into(delta(src.ID, "imp:1", "b", 7), day0.Index))
	if r.Period != day0.Index || r.Score != 7 || r.Rank != 1 {
		t.Fatalf("restore into %d: %+v", day0.Index, r)
	}
	r = apply(t, s, into(delta(src.ID, "imp:2", "a", 3), day0.Index))
	if r.Score != 8 || r.Rank != 1 || r.PrevRank != 2 {
		t.Fatalf("restore of a into %d: %+v", day0.Index, r)
	}
	if d := apply(t, s, into(delta(src.ID, "imp:2", "a", 3), day0.Index)); !d.Duplicate || d.Score != 8 {
		t.Fatalf("a restore sent again: %+v, want the first result, duplicate", d)
	}
	applyErr(t, s, into(delta(src.ID, "imp:2", "a", 4), day0.Index), rank.ErrIdempotencyConflict)
	day0Sel := rank.PeriodSel(fmtIndex(day0.Index))
	wantEntries(t, "the restored period", top(t, s, src.ID, day0Sel, 0, 10).Entries, ent(1, "a", 8), ent(2, "b", 7))
	wantEntries(t, "the union's view of it", top(t, s, "rt-restore-u", day0Sel, 0, 10).Entries, ent(1, "a", 16), ent(2, "b", 14))
	if got := top(t, s, src.ID, "", 0, 10); got.Total != 0 {
		t.Fatalf("the current period took a restore: %+v", got)
	}
	if h, err := s.History(t.Context(), src.ID, day0Sel, "b"); err != nil || len(h) != 1 || h[0].At != day0.Start.UnixMilli() {
		t.Fatalf("history of a restored event: %+v, %v (want at %d, the period's start)", h, err, day0.Start.UnixMilli())
	}
	// The day between, empty until now; the oldest day retained, and the
	// union's view of it.
	apply(t, s, into(delta(src.ID, "imp:3", "c", 1), day1.Index))
	wantEntries(t, "a period restored from nothing", top(t, s, src.ID, rank.PeriodSel(fmtIndex(day1.Index)), 0, 10).Entries, ent(1, "c", 1))
	oldest := day0.Previous(src)
	apply(t, s, into(delta(src.ID, "imp:4", "d", 2), oldest.Index))
	wantEntries(t, "the union's view of the oldest day", top(t, s, "rt-restore-u", rank.PeriodSel(fmtIndex(oldest.Index)), 0, 10).Entries, ent(1, "d", 4))

	cur := rank.PeriodAt(src, clk.Now())
	applyErr(t, s, into(delta(src.ID, "x1", "a", 1), cur.Index), rank.ErrBadRequest)
	old := day0.Previous(src).Previous(src)
	applyErr(t, s, into(delta(src.ID, "x2", "a", 1), old.Index), rank.ErrBadRequest) // past retain 3
	applyErr(t, s, into(delta(src.ID, "x3", "a", 1), 20000101), rank.ErrBadRequest)
	league := leagueBoard("rt-restore-lg", 3, 1, 0, "low", "high")
	league.Reset = rank.Daily
	put(t, s, league)
	applyErr(t, s, into(delta(league.ID, "x4", "a", 1), day1.Index), rank.ErrBadRequest)
	ended := put(t, s, board("rt-restore-end", func(b *rank.Board) {
		b.Reset = rank.Daily
		b.EndsAt = rank.At(clk.Now().Add(-time.Hour))
	}))
	applyErr(t, s, into(delta(ended.ID, "x5", "a", 1), day1.Index), rank.ErrBoardClosed)
}

// testCaps: a capped board applies what fits of a positive delta (capped,
// with the part applied), refuses one with nothing left (limit_reached,
// nothing changed), lets negative deltas through without giving points
// back, answers a re-send with the first result; per period and per UTC
// day, each starting over; history keeps the part applied.
func testCaps(t *testing.T, f Factory) {
	day0 := time.Date(2026, 3, 10, 22, 0, 0, 0, time.UTC)
	clk := NewClock(day0)
	s := f(t, clk.Now)
	for _, per := range []rank.CapPer{rank.CapPeriod, rank.CapDay} {
		b := put(t, s, board("rt-cap-"+string(per), func(b *rank.Board) {
			b.Cap = rank.Cap{Points: 100, Per: per}
			b.Reset = rank.Weekly
			b.History = 10
		}))
		clk.Set(day0)
		r := apply(t, s, delta(b.ID, "a1", "a", 60))
		if r.Score != 60 || r.Capped {
			t.Fatalf("%s: 60 of 100: %+v", b.ID, r)
		}
		r = apply(t, s, delta(b.ID, "a2", "a", 60))
		if r.Score != 100 || !r.Capped || r.Applied != 40 || r.PrevScore != 60 {
			t.Fatalf("%s: 60 past 60 of 100: %+v, want score 100, capped, applied 40", b.ID, r)
		}
		if d := apply(t, s, delta(b.ID, "a2", "a", 60)); !d.Duplicate || !d.Capped || d.Applied != 40 || d.Score != 100 {
			t.Fatalf("%s: a capped event sent again: %+v, want its first result", b.ID, d)
		}
		before := snapshot(t, s, b.ID)
		applyErr(t, s, delta(b.ID, "a3", "a", 1), rank.ErrLimitReached)
		if after := snapshot(t, s, b.ID); after != before {
			t.Fatalf("%s: a refused event changed the board:\n%s\nwas\n%s", b.ID, after, before)
		}
		if r = apply(t, s, delta(b.ID, "a3", "a", -30)); r.Score != 70 || r.Capped {
			t.Fatalf("%s: a negative delta past the cap: %+v", b.ID, r)
		}
		applyErr(t, s, delta(b.ID, "a4", "a", 5), rank.ErrLimitReached) // -30 gave nothing back
		if r = apply(t, s, delta(b.ID, "a5", "a", 0)); r.Score != 70 {
			t.Fatalf("%s: a zero delta with nothing left: %+v", b.ID, r)
		}
		if r = apply(t, s, delta(b.ID, "b1", "b", 250)); r.Score != 100 || !r.Capped || r.Applied != 100 {
			t.Fatalf("%s: another member's cap: %+v", b.ID, r)
		}
		h, err := s.History(t.Context(), b.ID, "", "b")
		if err != nil || len(h) != 1 || h[0].Amount != 100 {
			t.Fatalf("%s: history of a capped event %+v, %v; want the 100 applied", b.ID, h, err)
		}
		// The next UTC day (the same week): a day cap starts over, a
		// period cap does not.
		clk.Set(day0.Add(3 * time.Hour))
		r, err = rank.ApplyWait(t.Context(), s, delta(b.ID, "a6", "a", 50))
		switch per {
		case rank.CapDay:
			if err != nil || r.Score != 120 || r.Capped {
				t.Fatalf("%s: the next day: %+v, %v; want 50 applied", b.ID, r, err)
			}
		case rank.CapPeriod:
			if !errors.Is(err, rank.ErrLimitReached) {
				t.Fatalf("%s: the next day of the same period: %+v, %v; want limit_reached", b.ID, r, err)
			}
		}
		// The next period: every cap starts over.
		clk.Set(rank.PeriodAt(b, day0).End.Add(time.Hour))
		if r = apply(t, s, delta(b.ID, "a7", "a", 150)); r.Score != 100 || !r.Capped || r.Applied != 100 {
			t.Fatalf("%s: the next period: %+v", b.ID, r)
		}
	}
	// Caps hold on a sharded board, on a hot one, and on a restore.
	sh := put(t, s, board("rt-cap-sh", func(b *rank.Board) { b.Shards = 3; b.Cap = rank.Cap{Points: 10, Per: rank.CapPeriod} }))
	for _, m := range []string{"a", "b", "c", "d"} {
		if r := apply(t, s, delta(sh.ID, "s1", m, 25)); r.Score != 10 || !r.Capped || r.Applied != 10 {
			t.Fatalf("sharded cap: %+v", r)
		}
		applyErr(t, s, delta(sh.ID, "s2", m, 1), rank.ErrLimitReached)
	}
	hot := put(t, s, board("rt-cap-hot", func(b *rank.Board) {
		b.Decay = rank.Decay{Bucket: rank.Duration(time.Hour), Buckets: 2, Factor: 0.5}
		b.Tiebreak = rank.Shared
		b.Cap = rank.Cap{Points: 10, Per: rank.CapDay}
	}))
	if r := apply(t, s, delta(hot.ID, "h1", "a", 25)); r.Score != 10000 || !r.Capped || r.Applied != 10 {
		t.Fatalf("hot cap: %+v (scores in thousandths)", r)
	}
	applyErr(t, s, delta(hot.ID, "h2", "a", 1), rank.ErrLimitReached)
}

// testCapsConcurrent: R39 in one store: many submitters racing on one
// member never pass the cap, and what the acks say was applied adds up to
// the score.
func testCapsConcurrent(t *testing.T, f Factory) {
	s := f(t, nil)
	for _, b := range []rank.Board{
		board("rt-capc", func(b *rank.Board) { b.Cap = rank.Cap{Points: 100, Per: rank.CapPeriod} }),
		board("rt-capc-sh", func(b *rank.Board) { b.Shards = 4; b.Cap = rank.Cap{Points: 100, Per: rank.CapDay} }),
	} {
		put(t, s, b)
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			applied int64
			refused int
		)
		for i := range 60 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e := delta(b.ID, fmt.Sprintf("c%d", i), "a", 7)
				e.Submitter = uint64(i)
				r, err := rank.ApplyWait(t.Context(), s, e)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case errors.Is(err, rank.ErrLimitReached):
					refused++
				case err != nil:
					t.Errorf("%s: %v", b.ID, err)
				case r.Capped:
					applied += r.Applied
				default:
					applied += 7
				}
			}()
		}
		wg.Wait()
		m := one(t, s, b.ID, "a", 0)
		if m.Score != 100 || applied != 100 || refused != 60-15 {
			t.Fatalf("%s: score %d, acks applied %d, %d refused; want 100, 100, 45", b.ID, m.Score, applied, refused)
		}
	}
}

// testCapValidation: a cap is for incr boards that apply events, with
// points 1..2^53-1 and per period or day; the error names cap.
func testCapValidation(t *testing.T, f Factory) {
	s := f(t, nil)
	ok := board("rt-capv", func(b *rank.Board) { b.Cap = rank.Cap{Points: 5, Per: rank.CapDay} })
	put(t, s, ok)
	for _, bad := range []rank.Board{
		board("rt-capv-best", func(b *rank.Board) { b.Mode = rank.Best; b.Cap = rank.Cap{Points: 5, Per: rank.CapDay} }),
		board("rt-capv-0", func(b *rank.Board) { b.Cap = rank.Cap{Points: -1, Per: rank.CapDay} }),
		board("rt-capv-big", func(b *rank.Board) { b.Cap = rank.Cap{Points: rank.MaxScore + 1, Per: rank.CapDay} }),
		board("rt-capv-per", func(b *rank.Board) { b.Cap = rank.Cap{Points: 5, Per: "week"} }),
		board("rt-capv-u", func(b *rank.Board) {
			b.Source = rank.UnionOf([]string{ok.ID}, []int64{1})
			b.Cap = rank.Cap{Points: 5, Per: rank.CapDay}
		}),
	} {
		_, err := s.PutBoard(t.Context(), bad)
		if !errors.Is(err, rank.ErrInvalidConfig) || !containsField(err.Error(), "cap") {
			t.Errorf("PutBoard(%s, cap %+v): %v; want invalid_config naming cap", bad.ID, bad.Cap, err)
		}
	}
	for _, body := range []string{`{"cap":{"points":0,"per":"day"}}`, `{"cap":{"points":5}}`, `{"cap":{"points":5,"per":"day","x":1}}`, `{"mode":"set","cap":{"points":5,"per":"day"}}`} {
		if _, err := rank.ParseBoard("rt-capv-p", []byte(body)); !errors.Is(err, rank.ErrInvalidConfig) || !containsField(err.Error(), "cap") {
			t.Errorf("ParseBoard(%s): %v; want invalid_config naming cap", body, err)
		}
	}
}

// testNameProfiles: an import's names go to profiles without a name (made
// when missing); a name a profile has stays.
func testNameProfiles(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	if err := s.PutProfile(ctx, "rt-np-named", rank.Profile{Name: "Kept"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutProfile(ctx, "rt-np-flag", rank.Profile{Country: "FR"}); err != nil {
		t.Fatal(err)
	}
	changed, err := s.NameProfiles(ctx, []rank.MemberName{{Member: "rt-np-named", Name: "New"}, {Member: "rt-np-flag", Name: "Flag"}, {Member: "rt-np-none", Name: "Fresh"}, {Member: "rt-np-none", Name: "Again"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]rank.Profile{"rt-np-named": {Name: "Kept"}, "rt-np-flag": {Name: "Flag", Country: "FR"}, "rt-np-none": {Name: "Fresh"}}
	for m, p := range want {
		if got, err := s.GetProfile(ctx, m); err != nil || got != p {
			t.Errorf("profile of %s: %+v, %v; want %+v", m, got, err, p)
		}
	}
	if len(changed) != 2 || !containsAll(changed, "rt-np-flag", "rt-np-none") {
		t.Errorf("changed %v; want rt-np-flag and rt-np-none", changed)
	}
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// testImportMarks: an import's mark starts at the store's clock when first
// made and only moves forward; marks are per board and import id.
func testImportMarks(t *testing.T, f Factory) {
	clk := NewClock(skewedAnchor())
	s := f(t, clk.Now)
	ctx := t.Context()
	put(t, s, board("rt-marks", nil))
	put(t, s, board("rt-marks-2", nil))
	if m, err := s.ImportMark(ctx, "rt-marks", "imp"); err != nil || m != (rank.ImportMark{}) {
		t.Fatalf("a mark never made: %+v, %v", m, err)
	}
	start := clk.Now()
	mark := func(board, id string, line int64) {
		t.Helper()
		if err := s.MarkImport(ctx, board, id, line); err != nil {
			t.Fatal(err)
		}
	}
	want := func(board, id string, line int64, at time.Time) {
		t.Helper()
		m, err := s.ImportMark(ctx, board, id)
		if err != nil || m.Line != line || m.Start.UnixMilli() != at.UnixMilli() {
			t.Fatalf("mark of %s/%s: %+v, %v; want line %d from %s", board, id, m, err, line, at)
		}
	}
	mark("rt-marks", "imp", 10)
	want("rt-marks", "imp", 10, start)
	clk.Advance(time.Hour)
	mark("rt-marks", "imp", 5)
	want("rt-marks", "imp", 10, start)
	mark("rt-marks", "imp", 25)
	want("rt-marks", "imp", 25, start)
	mark("rt-marks", "other", 3)
	want("rt-marks", "other", 3, clk.Now())
	if m, _ := s.ImportMark(ctx, "rt-marks-2", "imp"); m != (rank.ImportMark{}) {
		t.Fatalf("a mark of another board: %+v", m)
	}
	if err := s.MarkImport(ctx, "rt-marks-none", "imp", 1); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("a mark on no board: %v", err)
	}
}
