package ranktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/wsgateway/wsgateway/rank"
)

// HooksFactory makes a fresh, empty Store whose engine calls back into
// hooks. The factory registers cleanup with t.
type HooksFactory func(t *testing.T, hooks rank.Hooks) rank.Store

// RunApply checks the completion contract of rank.Store.Apply: done is
// called exactly once per event; the sink hears of every applied,
// non-duplicate event exactly once, before its done, with the result's
// fields, and never of a duplicate or a failure; one submitter's events
// are applied in the order it submitted them although it does not wait
// between them, also while other submitters (rank.Event.Submitter) apply
// to the same board; an event whose ctx ended before it was sent is not
// applied; every done runs inside a Hooks.Complete call, which runs its
// batch exactly once.
func RunApply(t *testing.T, f HooksFactory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, f HooksFactory)
	}{
		{"Completion", testCompletion},
		{"CompleteWrapsDones", testCompleteWrapsDones},
		{"ManyInFlight", testManyInFlight},
		{"Submitters", testSubmitters},
		{"CancelledBeforeSending", testCancelledBeforeSending},
		{"CohortChanges", testCohortChanges},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, f)
		})
	}
}

// recorder is a sink that remembers every change it heard, and the done
// callbacks that check against it.
type recorder struct {
	mu      sync.Mutex
	changes map[string]rank.Change // by board/seq
	heard   int                    // changes heard, repeats included
	batches int
}

func newRecorder() *recorder { return &recorder{changes: map[string]rank.Change{}} }

func changeKey(board string, seq int64) string { return fmt.Sprintf("%s/%d", board, seq) }

func (r *recorder) sink(batch []rank.Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches++
	for _, c := range batch {
		r.heard++
		r.changes[changeKey(c.Board, c.Seq)] = c
	}
}

func (r *recorder) get(board string, seq int64) (rank.Change, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.changes[changeKey(board, seq)]
	return c, ok
}

// outcome is what one event's done received, and how often it ran.
type outcome struct {
	r     rank.Result
	err   error
	calls int
	// seen: the sink had heard of the change when done ran; change is it.
	seen   bool
	change rank.Change
}

// submitAll submits events from one goroutine without waiting and returns
// their outcomes once every done has run.
func submitAll(t *testing.T, s rank.Store, rec *recorder, ctx context.Context, events []rank.Event) []outcome {
	t.Helper()
	out := make([]outcome, len(events))
	var mu sync.Mutex // guards out
	var wg sync.WaitGroup
	wg.Add(len(events))
	for i, e := range events {
		s.Apply(ctx, e, func(r rank.Result, err error) {
			var c rank.Change
			var seen bool
			if err == nil {
				c, seen = rec.get(r.Board, r.Seq)
			}
			mu.Lock()
			o := &out[i]
			o.calls++
			first := o.calls == 1
			if first {
				o.r, o.err, o.seen, o.change = r, err, seen, c
			}
			mu.Unlock()
			if first {
				wg.Done()
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return append([]outcome(nil), out...)
}

func testCompletion(t *testing.T, f HooksFactory) {
	rec := newRecorder()
	s := f(t, rank.Hooks{Sink: rec.sink})
	a := put(t, s, rank.DefaultBoard("rt-done"))
	b := put(t, s, board("rt-done-best", func(b *rank.Board) { b.Mode = rank.Best; b.MaxDelta = 1000 }))
	events := []rank.Event{
		named(delta(a.ID, "1", "x", 5), "Xena"),
		delta(a.ID, "2", "y", 7),
		value(b.ID, "1", "x", 50),
		delta(a.ID, "3", "x", 3),             // x passes y: 8 over 7
		delta(a.ID, "1", "x", 5),             // duplicate: no change
		delta(a.ID, "2", "y", 8),             // conflict: no change
		delta(a.ID, "4", "y", rank.MaxScore), // out_of_range: no change
		value(b.ID, "2", "x", 5000),          // delta_too_large: no change
		value(b.ID, "3", "x", 40),            // best not improved: applied, score kept
		delta(a.ID, "5", "z", -1),
		value(a.ID, "6", "z", 1), // a value on an incr board: bad_request
	}
	wantErr := []error{nil, nil, nil, nil, nil, rank.ErrIdempotencyConflict, rank.ErrOutOfRange,
		rank.ErrDeltaTooLarge, nil, nil, rank.ErrBadRequest}
	out := submitAll(t, s, rec, t.Context(), events)

	applied := 0
	for i, o := range out {
		e := events[i]
		if o.calls != 1 {
			t.Fatalf("event %d: done called %d times", i, o.calls)
		}
		if wantErr[i] != nil || o.err != nil {
			if !errors.Is(o.err, wantErr[i]) {
				t.Fatalf("event %d (%+v): %v, want %v", i, e, o.err, wantErr[i])
			}
			continue
		}
		if o.r.Board != e.Board || o.r.Member != e.Member {
			t.Fatalf("event %d: result %+v is not of %+v", i, o.r, e)
		}
		if o.r.Duplicate {
			continue
		}
		applied++
		if !o.seen {
			t.Fatalf("event %d: done ran before the sink heard of seq %d", i, o.r.Seq)
		}
		want := rank.Change{Board: e.Board, Seq: o.r.Seq, Member: e.Member, New: o.r.Score, Rank: o.r.Rank,
			PrevRank: o.r.PrevRank, Period: o.r.Period, Name: e.Name}
		got := o.change
		if (got.Old == nil) != !o.r.Had || (got.Old != nil && *got.Old != o.r.PrevScore) {
			t.Fatalf("event %d: change old %v, result %+v", i, got.Old, o.r)
		}
		got.Old = nil
		if got != want {
			t.Fatalf("event %d: change %+v\nwant %+v", i, got, want)
		}
	}
	if !out[4].r.Duplicate || out[0].r.Duplicate {
		t.Fatalf("duplicate flags: first %+v, repeat %+v", out[0].r, out[4].r)
	}
	// The results the sink's changes were checked against are right too.
	for i, w := range []struct {
		i                          int
		score, rk, prevRank, prevS int64
	}{{0, 5, 1, 0, 0}, {1, 7, 1, 0, 0}, {2, 50, 1, 0, 0}, {3, 8, 1, 2, 5}, {8, 50, 1, 1, 50}, {9, -1, 3, 0, 0}} {
		r := out[w.i].r
		if r.Score != w.score || r.Rank != w.rk || r.PrevRank != w.prevRank || r.PrevScore != w.prevS {
			t.Fatalf("check %d: event %d = %+v; want score %d rank %d prev %d/%d", i, w.i, r, w.score, w.rk, w.prevRank, w.prevS)
		}
	}
	rec.mu.Lock()
	heard, distinct := rec.heard, len(rec.changes)
	rec.mu.Unlock()
	if heard != applied || distinct != applied {
		t.Fatalf("the sink heard %d changes (%d distinct); %d events were applied (no duplicate, no failure)", heard, distinct, applied)
	}
}

func testManyInFlight(t *testing.T, f HooksFactory) {
	rec := newRecorder()
	s := f(t, rank.Hooks{Sink: rec.sink})
	b := put(t, s, board("rt-inflight", func(b *rank.Board) { b.Tiebreak = rank.Shared }))
	const n = 1500
	events := make([]rank.Event, n)
	for i := range events {
		events[i] = delta(b.ID, fmt.Sprintf("f%d", i), fmt.Sprintf("m%d", i%7), int64(i%9-2))
	}
	out := submitAll(t, s, rec, t.Context(), events)
	sums := map[string]int64{}
	for i, o := range out {
		sums[events[i].Member] += events[i].Amount
		if o.calls != 1 || o.err != nil || !o.seen || o.r.Duplicate {
			t.Fatalf("event %d: %+v (done called %d times, sink heard first: %v)", i, o.r, o.calls, o.seen)
		}
		// In submission order: seq i+1, and the member's running sum.
		if o.r.Seq != int64(i+1) || o.r.Score != sums[events[i].Member] {
			t.Fatalf("event %d: seq %d score %d; want seq %d score %d (out of order)", i, o.r.Seq, o.r.Score, i+1, sums[events[i].Member])
		}
	}
	rec.mu.Lock()
	heard, batches := rec.heard, rec.batches
	rec.mu.Unlock()
	if heard != n {
		t.Fatalf("sink heard %d changes, want %d", heard, n)
	}
	t.Logf("%d changes in %d sink batches", heard, batches)
}

// testSubmitters: submitters that apply to one board at once, each from
// its own goroutine without waiting, over members of their own. Each
// one's events are applied in its order (the board's seq increases along
// them, and each member's score is its running sum), and together they
// took every seq once: a store may interleave submitters, never reorder
// one.
func testSubmitters(t *testing.T, f HooksFactory) {
	rec := newRecorder()
	s := f(t, rank.Hooks{Sink: rec.sink})
	b := put(t, s, board("rt-submitters", nil))
	const submitters, each = 5, 300
	outs := make([][]outcome, submitters)
	evs := make([][]rank.Event, submitters)
	var wg sync.WaitGroup
	for w := range submitters {
		for i := range each {
			e := delta(b.ID, fmt.Sprintf("s%d-%d", w, i), fmt.Sprintf("m%d-%d", w, i%3), int64(i%4+1))
			e.Submitter = uint64(w + 1)
			evs[w] = append(evs[w], e)
		}
		wg.Go(func() { outs[w] = submitAll(t, s, rec, t.Context(), evs[w]) })
	}
	wg.Wait()
	seqs := map[int64]bool{}
	for w, out := range outs {
		sums := map[string]int64{}
		var last int64
		for i, o := range out {
			e := evs[w][i]
			sums[e.Member] += e.Amount
			if o.err != nil || o.r.Duplicate {
				t.Fatalf("submitter %d event %d: %+v %v", w, i, o.r, o.err)
			}
			if o.r.Seq <= last || o.r.Score != sums[e.Member] {
				t.Fatalf("submitter %d event %d: seq %d score %d; want seq > %d and score %d (out of its order)", w, i, o.r.Seq, o.r.Score, last, sums[e.Member])
			}
			last = o.r.Seq
			seqs[o.r.Seq] = true
		}
	}
	for q := int64(1); q <= submitters*each; q++ {
		if !seqs[q] {
			t.Fatalf("no event took seq %d of %d: the store's order has a gap or a repeat", q, submitters*each)
		}
	}
}

func testCancelledBeforeSending(t *testing.T, f HooksFactory) {
	rec := newRecorder()
	s := f(t, rank.Hooks{Sink: rec.sink})
	b := put(t, s, rank.DefaultBoard("rt-cancel"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	out := submitAll(t, s, rec, ctx, []rank.Event{delta(b.ID, "c1", "a", 1), delta(b.ID, "c2", "b", 1)})
	for i, o := range out {
		if o.calls != 1 || !errors.Is(o.err, context.Canceled) {
			t.Fatalf("event %d with a cancelled ctx: %+v, %v (done called %d times); want context.Canceled", i, o.r, o.err, o.calls)
		}
	}
	if pg := top(t, s, b.ID, "", 0, 10); pg.Total != 0 || pg.Seq != 0 {
		t.Fatalf("events whose ctx had ended were applied: %+v", pg)
	}
	// Not recorded either: the same ids apply now.
	if r := apply(t, s, delta(b.ID, "c1", "a", 1)); r.Duplicate || r.Seq != 1 {
		t.Fatalf("re-sent after a cancelled attempt: %+v", r)
	}
	rec.mu.Lock()
	heard := rec.heard
	rec.mu.Unlock()
	if heard != 1 {
		t.Fatalf("sink heard %d changes, want 1 (only the re-sent event)", heard)
	}
}

// testCompleteWrapsDones: each done runs inside a Hooks.Complete call, in
// submission order with its event's result, and every Complete call runs
// its batch exactly once (a done left out would never be answered).
func testCompleteWrapsDones(t *testing.T, f HooksFactory) {
	var (
		mu      sync.Mutex
		depth   int // Complete calls running
		batches int
		empty   int // batches whose run answered no event
		ran     int // dones run in the current batch
	)
	s := f(t, rank.Hooks{Complete: func(run func()) {
		mu.Lock()
		depth++
		batches++
		ran = 0
		mu.Unlock()
		run()
		mu.Lock()
		depth--
		if ran == 0 {
			empty++
		}
		mu.Unlock()
	}})
	b := put(t, s, rank.DefaultBoard("rt-complete"))
	const n = 400
	var (
		wg      sync.WaitGroup
		outside int
		last    int64
		order   = true
	)
	wg.Add(n)
	for i := range n {
		s.Apply(t.Context(), delta(b.ID, fmt.Sprintf("c%d", i), "m", 1), func(r rank.Result, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			ran++
			if depth == 0 {
				outside++
			}
			if err != nil || r.Score != last+1 {
				order = false
			}
			last = r.Score
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if outside != 0 {
		t.Fatalf("%d of %d dones ran outside Complete", outside, n)
	}
	if !order || last != n {
		t.Fatalf("dones did not run in submission order with their results (last score %d of %d)", last, n)
	}
	if batches < 1 || batches > n || empty != 0 {
		t.Fatalf("Complete ran %d times (%d of them empty) for %d events", batches, empty, n)
	}
	t.Logf("%d events in %d batches", n, batches)
}
