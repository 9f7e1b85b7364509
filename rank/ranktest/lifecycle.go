package ranktest

// Lifecycle (§6, R17–R18): schedules, grace, `at`, max_submissions,
// retain. Every store clock here is hours away from the test's own, so an
// engine that reads the node's clock anywhere fails.

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// skewedAnchor is a store time hours away from the real one, on a whole
// second.
func skewedAnchor() time.Time { return nowAnchor().Add(-7*time.Hour - 13*time.Minute) }

// testFinalBoard: a final board's config no longer changes; it can still be
// deleted; before it is final it changes freely.
func testFinalBoard(t *testing.T, f Factory) {
	clk := NewClock(skewedAnchor())
	s := f(t, clk.Now)
	ctx := t.Context()
	b := put(t, s, board("rt-final", func(b *rank.Board) {
		b.EndsAt = rank.At(clk.Now().Add(time.Hour))
		b.Grace = rank.Duration(time.Minute)
	}))
	if now, err := s.Now(ctx); err != nil || !now.Equal(clk.Now()) {
		t.Fatalf("Now = %s, %v; want the injected %s", now, err, clk.Now())
	}
	b.Title = "renamed while open"
	put(t, s, b)
	clk.Set(b.EndsAt.Time) // closing
	b.Title = "renamed while closing"
	put(t, s, b)
	clk.Set(b.FinalAt())
	changed := b
	changed.Title = "renamed when final"
	if _, err := s.PutBoard(ctx, changed); !errors.Is(err, rank.ErrBoardClosed) {
		t.Fatalf("PutBoard of a final board: %v, want ErrBoardClosed", err)
	}
	if got, err := s.GetBoard(ctx, b.ID); err != nil || got != b {
		t.Fatalf("after a refused PUT: %+v, %v; want %+v", got, err, b)
	}
	if err := s.DeleteBoard(ctx, b.ID); err != nil {
		t.Fatalf("DeleteBoard of a final board: %v", err)
	}
	put(t, s, changed) // a new board under the old id
}

func at(e rank.Event, t time.Time) rank.Event {
	e.At = t
	return e
}

// testSchedule: R17 on a board without reset: nothing before starts_at,
// events up to ends_at, late ones (at < ends_at) until ends_at + grace,
// nothing after; the edges exact to the millisecond; refusals change nothing.
func testSchedule(t *testing.T, f Factory) {
	clk := NewClock(skewedAnchor())
	s := f(t, clk.Now)
	start := clk.Now().Add(time.Hour)
	b := put(t, s, board("rt-sched", func(b *rank.Board) {
		b.StartsAt, b.EndsAt = rank.At(start), rank.At(start.Add(time.Hour))
		b.Grace = rank.Duration(time.Minute)
	}))
	end := b.EndsAt.Time
	notStarted := rank.ClosedError{Reason: rank.ClosedNotStarted, StartsAt: start.UnixMilli()}
	ended := rank.ClosedError{Reason: rank.ClosedEnded, FinalAt: end.Add(time.Minute).UnixMilli()}
	var g ids
	applyClosed(t, s, delta(b.ID, g.next(), "a", 1), notStarted) // scheduled
	clk.Set(start.Add(-time.Millisecond))
	applyClosed(t, s, delta(b.ID, g.next(), "a", 1), notStarted)
	clk.Set(start)
	apply(t, s, delta(b.ID, g.next(), "a", 1))
	// An `at` before starts_at is refused even while open.
	applyClosed(t, s, at(delta(b.ID, g.next(), "a", 1), start.Add(-time.Millisecond)), notStarted)
	clk.Set(end.Add(-time.Millisecond))
	apply(t, s, delta(b.ID, g.next(), "a", 1))
	// Up to 5 s ahead of the store clock is allowed, beyond is a bad request.
	applyErr(t, s, at(delta(b.ID, g.next(), "a", 1), clk.Now().Add(5*time.Second+time.Millisecond)), rank.ErrBadRequest)
	clk.Set(end) // closing: the clock's own time is past the end
	applyClosed(t, s, delta(b.ID, g.next(), "a", 1), ended)
	applyClosed(t, s, at(delta(b.ID, g.next(), "a", 1), end), ended) // exactly ends_at
	late := at(delta(b.ID, g.next(), "a", 10), end.Add(-time.Millisecond))
	clk.Set(end.Add(time.Minute - time.Millisecond)) // the last millisecond of grace
	if r := apply(t, s, late); r.Score != 12 || r.Period != 0 {
		t.Fatalf("late event within grace: %+v", r)
	}
	clk.Set(end.Add(time.Minute)) // exactly ends_at + grace: final
	before := snapshot(t, s, b.ID)
	applyClosed(t, s, at(delta(b.ID, g.next(), "a", 1), end.Add(-time.Millisecond)), ended)
	// A retry of an event applied in time is still answered (R4).
	if r := apply(t, s, late); !r.Duplicate || r.Score != 12 {
		t.Fatalf("retry after the end: %+v", r)
	}
	if after := snapshot(t, s, b.ID); after != before {
		t.Fatalf("refused events changed the board:\n%s\nwant\n%s", after, before)
	}
}

// testGracePeriods: R17 with periods: a late event lands in the period
// that contains its time while that period is within its grace; never two
// periods back, never ahead; the ack says which period.
func testGracePeriods(t *testing.T, f Factory) {
	anchor := skewedAnchor()
	clk := NewClock(anchor)
	s := f(t, clk.Now)
	b := put(t, s, board("rt-grace", func(b *rank.Board) {
		b.Reset = "10m"
		b.Grace = rank.Duration(30 * time.Second)
	}))
	p0 := rank.PeriodAt(b, anchor)
	p1 := rank.PeriodAt(b, p0.End)
	p2 := rank.PeriodAt(b, p1.End)
	var g ids
	clk.Set(p0.End.Add(-time.Second))
	if r := apply(t, s, delta(b.ID, g.next(), "a", 1)); r.Period != p0.Index {
		t.Fatalf("in p0: %+v", r)
	}
	// The clock moves into p1; a result from p0 arrives late.
	clk.Set(p1.Start.Add(29*time.Second + 999*time.Millisecond))
	if r := apply(t, s, at(delta(b.ID, g.next(), "a", 5), p0.End.Add(-time.Millisecond))); r.Period != p0.Index || r.Score != 6 {
		t.Fatalf("late into p0 within grace: %+v", r)
	}
	if r := apply(t, s, delta(b.ID, g.next(), "a", 2)); r.Period != p1.Index || r.Score != 2 {
		t.Fatalf("current p1: %+v", r)
	}
	// At exactly p0's end + grace, p0 is final.
	p0over := rank.ClosedError{Reason: rank.ClosedPeriodOver, Period: p0.Index, GraceEnd: p0.End.Add(30 * time.Second).UnixMilli()}
	clk.Set(p1.Start.Add(30 * time.Second))
	applyClosed(t, s, at(delta(b.ID, g.next(), "a", 5), p0.End.Add(-time.Millisecond)), p0over)
	// An `at` in the next period (within 5 s of the clock) is not the
	// current one: that period has not started.
	clk.Set(p1.End.Add(-time.Second))
	applyClosed(t, s, at(delta(b.ID, g.next(), "a", 5), p1.End),
		rank.ClosedError{Reason: rank.ClosedNotStarted, StartsAt: p2.Start.UnixMilli()})
	// Two periods back is refused whatever the grace.
	clk.Set(p2.Start)
	applyClosed(t, s, at(delta(b.ID, g.next(), "a", 5), p0.End.Add(-time.Millisecond)), p0over)
	if r := apply(t, s, at(delta(b.ID, g.next(), "a", 3), p1.End.Add(-time.Millisecond))); r.Period != p1.Index || r.Score != 5 {
		t.Fatalf("late into p1: %+v", r)
	}
	pg := top(t, s, b.ID, rank.PeriodSel(fmtIndex(p0.Index)), 0, 10)
	wantEntries(t, "p0", pg.Entries, ent(1, "a", 6))
	pg = top(t, s, b.ID, "previous", 0, 10)
	wantEntries(t, "p1", pg.Entries, ent(1, "a", 5))
	if pg := top(t, s, b.ID, "", 0, 10); pg.Total != 0 {
		t.Fatalf("current p2: %+v", pg)
	}
}

func fmtIndex(i int64) string { return strconv.FormatInt(i, 10) }

// testMaxSubmissions: R18 per member per period; duplicates and refused
// events do not count; a new period starts over; racing submitters never
// get more than N applied.
func testMaxSubmissions(t *testing.T, f Factory) {
	anchor := skewedAnchor()
	clk := NewClock(anchor)
	s := f(t, clk.Now)
	b := put(t, s, board("rt-maxsub", func(b *rank.Board) {
		b.Reset = "1h"
		b.MaxSubmissions = 3
		b.MaxDelta = 100
	}))
	var g ids
	first := delta(b.ID, g.next(), "a", 1)
	apply(t, s, first)
	apply(t, s, first)                                                     // a duplicate: not counted
	applyErr(t, s, delta(b.ID, g.next(), "a", 101), rank.ErrDeltaTooLarge) // refused: not counted
	apply(t, s, delta(b.ID, g.next(), "a", 1))
	apply(t, s, delta(b.ID, g.next(), "a", 1))
	before := snapshot(t, s, b.ID)
	applyErr(t, s, delta(b.ID, g.next(), "a", 1), rank.ErrLimitReached)
	if after := snapshot(t, s, b.ID); after != before {
		t.Fatalf("limit_reached changed the board:\n%s\nwant\n%s", after, before)
	}
	apply(t, s, delta(b.ID, g.next(), "b", 1)) // another member has its own count
	if r := apply(t, s, first); !r.Duplicate {
		t.Fatalf("a retry past the limit: %+v", r)
	}
	clk.Set(rank.PeriodAt(b, anchor).End)
	apply(t, s, delta(b.ID, g.next(), "a", 1)) // a new period starts over

	// Racing: 16 goroutines × 4 events for one member, at most 3 applied.
	b2 := put(t, s, board("rt-maxsub-race", func(b *rank.Board) { b.MaxSubmissions = 3 }))
	var wg sync.WaitGroup
	var mu sync.Mutex
	applied, limited := 0, 0
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 4 {
				_, err := rank.ApplyWait(t.Context(), s, delta(b2.ID, fmt.Sprintf("w%d-%d", w, i), "racer", 1))
				mu.Lock()
				switch {
				case err == nil:
					applied++
				case errors.Is(err, rank.ErrLimitReached):
					limited++
				default:
					t.Errorf("racing apply: %v", err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if applied != 3 || limited != 61 {
		t.Fatalf("racing: %d applied, %d limited; want 3 and 61", applied, limited)
	}
	wantTop(t, s, b2.ID, ent(1, "racer", 3))
}

// testBoundaryUnderLoad: events racing a period boundary each land in
// exactly one period, the one their ack names, and the ledger of acks
// equals the two periods' standings.
func testBoundaryUnderLoad(t *testing.T, f Factory) {
	anchor := skewedAnchor()
	b := board("rt-boundary", func(b *rank.Board) { b.Reset = "1m"; b.Grace = rank.Duration(time.Second) })
	p0 := rank.PeriodAt(b, anchor)
	clk := NewClock(p0.End.Add(-50 * time.Millisecond))
	s := f(t, clk.Now)
	put(t, s, b)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ledger := map[int64]map[string]int64{}
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if w == 0 {
					clk.Advance(2 * time.Millisecond) // one writer moves the store clock across the boundary
				}
				member := fmt.Sprintf("m%d", (w+i)%5)
				r, err := rank.ApplyWait(t.Context(), s, delta(b.ID, fmt.Sprintf("w%d-%d", w, i), member, int64(i+1)))
				if err != nil {
					t.Errorf("apply: %v", err)
					return
				}
				mu.Lock()
				if ledger[r.Period] == nil {
					ledger[r.Period] = map[string]int64{}
				}
				ledger[r.Period][member] += int64(i + 1)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(ledger) != 2 || ledger[p0.Index] == nil {
		t.Fatalf("acks name periods %v; want %d and the next", keys(ledger), p0.Index)
	}
	for idx, want := range ledger {
		pg := all(t, s, b.ID, rank.PeriodSel(fmtIndex(idx)))
		got := map[string]int64{}
		for _, e := range pg.Entries {
			got[e.Member] = e.Score
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("period %d: standings %v, ledger %v", idx, got, want)
		}
	}
}

func keys[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// testRetain: retain past periods stay readable; older ones are gone.
func testRetain(t *testing.T, f Factory) {
	anchor := skewedAnchor()
	clk := NewClock(anchor)
	s := f(t, clk.Now)
	b := put(t, s, board("rt-retain", func(b *rank.Board) { b.Reset = "1m"; b.Retain = 3 }))
	var g ids
	var idx []int64
	p := rank.PeriodAt(b, anchor)
	for i := range 5 {
		clk.Set(p.Start)
		idx = append(idx, apply(t, s, delta(b.ID, g.next(), "a", int64(i+1))).Period)
		p = rank.PeriodAt(b, p.End)
	}
	clk.Set(p.Start) // the sixth period: the last three past ones stay
	for i, want := range []int64{0, 0, 3, 4, 5} {
		pg := top(t, s, b.ID, rank.PeriodSel(fmtIndex(idx[i])), 0, 10)
		if want == 0 {
			if pg.Total != 0 || pg.Period != idx[i] {
				t.Errorf("period %d, %d back, beyond retain 3: %+v", idx[i], 5-i, pg)
			}
			continue
		}
		wantEntries(t, fmt.Sprintf("period %d", idx[i]), pg.Entries, ent(1, "a", want))
	}
}

// testClosedReasons: R30 where testSchedule and testGracePeriods do not
// reach: a board that ends inside a period says ended (with its final
// time) for a late event of that period, not period_over; a hot board says
// not_started and ended as any board, and outside_window for a bucket that
// has left the window. Refusals change nothing.
func testClosedReasons(t *testing.T, f Factory) {
	anchor := skewedAnchor()
	clk := NewClock(anchor)
	s := f(t, clk.Now)
	p0 := rank.PeriodAt(board("x", func(b *rank.Board) { b.Reset = "10m" }), anchor)
	end := p0.Start.Add(5 * time.Minute) // inside p0
	b := put(t, s, board("rt-closed", func(b *rank.Board) {
		b.Reset = "10m"
		b.EndsAt = rank.At(end)
		b.Grace = rank.Duration(time.Minute)
	}))
	var g ids
	clk.Set(end.Add(-time.Second))
	apply(t, s, delta(b.ID, g.next(), "a", 1))
	clk.Set(end.Add(time.Minute))
	before := snapshot(t, s, b.ID)
	applyClosed(t, s, at(delta(b.ID, g.next(), "a", 1), end.Add(-time.Second)),
		rank.ClosedError{Reason: rank.ClosedEnded, FinalAt: end.Add(time.Minute).UnixMilli()})
	if after := snapshot(t, s, b.ID); after != before {
		t.Fatalf("a refused event changed the board:\n%s\nwas\n%s", after, before)
	}
	// A sharded board refuses on the member's shard with the same reasons.
	sh := put(t, s, board("rt-closed-sh", func(b *rank.Board) {
		b.Shards = 2
		b.StartsAt, b.EndsAt = rank.At(clk.Now().Add(time.Hour)), rank.At(clk.Now().Add(2*time.Hour))
	}))
	for _, m := range []string{"a", "b", "c", "d"} {
		applyClosed(t, s, delta(sh.ID, g.next(), m, 1), rank.ClosedError{Reason: rank.ClosedNotStarted, StartsAt: sh.StartsAt.UnixMilli()})
	}
	clk.Set(sh.EndsAt.Time)
	applyClosed(t, s, delta(sh.ID, g.next(), "a", 1), rank.ClosedError{Reason: rank.ClosedEnded, FinalAt: sh.EndsAt.UnixMilli()})

	hclk := NewClock(hotAnchor())
	hs := f(t, hclk.Now)
	start := hclk.Now().Add(time.Hour)
	h := hotBoard("rt-closed-hot", time.Hour, 2, 0.5)
	h.StartsAt, h.EndsAt = rank.At(start), rank.At(start.Add(4*time.Hour))
	h.Grace = rank.Duration(time.Minute)
	h = put(t, hs, h)
	applyClosed(t, hs, delta(h.ID, g.next(), "a", 1), rank.ClosedError{Reason: rank.ClosedNotStarted, StartsAt: start.UnixMilli()})
	hclk.Set(start.Add(3 * time.Hour))
	apply(t, hs, delta(h.ID, g.next(), "a", 1))
	applyClosed(t, hs, at(delta(h.ID, g.next(), "a", 1), start.Add(30*time.Minute)), rank.ClosedError{Reason: rank.ClosedOutsideWindow})
	hclk.Set(h.EndsAt.Add(time.Minute))
	applyClosed(t, hs, at(delta(h.ID, g.next(), "a", 1), h.EndsAt.Add(-time.Second)),
		rank.ClosedError{Reason: rank.ClosedEnded, FinalAt: h.EndsAt.Add(time.Minute).UnixMilli()})
}
