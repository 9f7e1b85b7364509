package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

type asyncResult struct {
	i   int
	r   rank.Result
	err error
}

// submitAll submits events with Apply without waiting and returns the
// results indexed by submission order.
func submitAll(s *Store, events []rank.Event) []asyncResult {
	out := make([]asyncResult, len(events))
	var wg sync.WaitGroup
	for i, e := range events {
		wg.Add(1)
		s.Apply(context.Background(), e, func(r rank.Result, err error) {
			out[i] = asyncResult{i, r, err}
			wg.Done()
		})
	}
	wg.Wait()
	return out
}

// Several submitters, each with many events in flight over three members,
// share pipelines on the store's two lanes; each one's events are applied
// in its submission order (cumulative scores per member, and the board's
// seq increasing across the submitter's members), across a SCRIPT FLUSH
// (NOSCRIPT resend) and a config version change by another store (stale
// retry inside each lane). Both lanes carry events.
func TestApplyAsyncOrder(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "async", Lanes: 2})
	other := newStore(t, srv, Config{Prefix: "async"})
	const id, submitters, each, members = "aorder", 6, 300, 3
	mustPut(t, s, rank.DefaultBoard(id))
	mustApply(t, s, incr(id, "warm", "warm", 1)) // s caches the config

	var wg sync.WaitGroup
	results := make([][]asyncResult, submitters)
	for w := range submitters {
		wg.Go(func() {
			var events []rank.Event
			for i := range each {
				e := incr(id, fmt.Sprintf("a%d-%d", w, i), fmt.Sprintf("m%d-%d", w, i%members), int64(i%5+1))
				e.Submitter = uint64(w + 1)
				events = append(events, e)
			}
			results[w] = submitAll(s, events)
		})
	}
	wg.Go(func() {
		for s.LaneStats().Events <= submitters*each/3 {
			time.Sleep(time.Millisecond)
		}
		if got, err := testenv.RedisCommand(srv.Addr(), "SCRIPT", "FLUSH"); err != nil || got != "+OK" {
			t.Errorf("SCRIPT FLUSH: %q, %v", got, err)
		}
		b := rank.DefaultBoard(id)
		b.MaxDelta = 1000 // a new config version: s's cached one is stale
		mustPut(t, other, b)
	})
	wg.Wait()
	for w, rs := range results {
		var sums [members]int64
		var seq int64
		for i, r := range rs {
			if r.err != nil {
				t.Fatalf("submitter %d event %d: %v", w, i, r.err)
			}
			sums[i%members] += int64(i%5 + 1)
			if r.r.Score != sums[i%members] || r.r.Seq <= seq {
				for j := max(0, i-3); j < min(len(rs), i+3); j++ {
					t.Logf("%d: %+v", j, rs[j].r)
				}
				t.Fatalf("submitter %d event %d: %+v, want score %d and seq > %d (out of order)", w, i, r.r, sums[i%members], seq)
			}
			seq = r.r.Seq
		}
	}
	for i, l := range s.lanes {
		if l.calls.Load() == 0 {
			t.Errorf("lane %d sent nothing: the submitters did not spread over the lanes", i)
		}
	}
	if st := s.LaneStats(); st.Pipelines*4 >= st.Events {
		t.Fatalf("%d calls in %d pipelines: async calls were not batched", st.Events, st.Pipelines)
	}
}

// Close answers every async call exactly once: queued ones and later ones
// with ErrClosed; a cancelled caller's queued event is not applied.
func TestApplyAsyncClose(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{})
	mustPut(t, s, rank.DefaultBoard("aclose"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := submitAll(s, []rank.Event{incr("aclose", "x1", "x", 1)})
	if r[0].err != nil {
		t.Fatalf("apply: %v", r[0].err)
	}
	done := make(chan error, 1)
	s.Apply(ctx, incr("aclose", "x2", "x", 1), func(_ rank.Result, err error) { done <- err })
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v, want context.Canceled", err)
	}

	const n = 2000
	var mu sync.Mutex
	calls := map[int]int{}
	var wg sync.WaitGroup
	wg.Add(n)
	go func() {
		for i := range n {
			s.Apply(context.Background(), incr("aclose", fmt.Sprintf("c%d", i), "y", 1), func(_ rank.Result, err error) {
				mu.Lock()
				calls[i]++
				mu.Unlock()
				wg.Done()
			})
		}
	}()
	for s.lanes[0].calls.Load() < 10 {
		time.Sleep(time.Millisecond)
	}
	s.Close()
	wg.Wait()
	for i := range n {
		if calls[i] != 1 {
			t.Fatalf("call %d answered %d times", i, calls[i])
		}
	}
	if s.Count(t.Context(), "aclose"); !s.closed.Load() {
		t.Fatal("store not closed")
	}
}

// A batch whose board config changed elsewhere is refused by the scripts
// (stale) and re-sent as one pipeline, not one round trip per event, and
// its events still apply in order. work runs on the test's goroutine here,
// as the lane would run it.
func TestRefusedTailOnePipeline(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "tail"})
	other := newStore(t, srv, Config{Prefix: "tail"})
	const id, n = "tail", 40
	mustPut(t, s, rank.DefaultBoard(id))
	mustPut(t, s, rank.DefaultBoard("fresh"))
	mustApply(t, s, incr(id, "warm", "m", 1)) // s caches the config
	b := rank.DefaultBoard(id)
	b.MaxDelta = 1000 // a new version: s's cached config is stale
	mustPut(t, other, b)

	var events []rank.Event
	for i := range n {
		board := id
		if i%5 == 0 {
			board = "fresh" // not refused: applied in the first pipeline
		}
		events = append(events, incr(board, fmt.Sprintf("t%d", i), "m", 1))
	}
	bt := lanecalls(t, s, events)
	p0 := s.lanes[0].pipelines.Load()
	s.work(s.lanes[0], bt)
	if p := s.lanes[0].pipelines.Load() - p0; p != 2 {
		t.Fatalf("%d pipelines for a batch with a stale board; want 2 (the batch, then its refused events together)", p)
	}
	sums := map[string]int64{id: 1}
	for i, c := range bt.calls {
		sums[c.e.Board]++
		if c.err != nil || c.r.Score != sums[c.e.Board] || c.r.Duplicate {
			t.Fatalf("event %d on %s: %+v, %v; want score %d", i, c.e.Board, c.r, c.err, sums[c.e.Board])
		}
	}
}

// lanecalls builds a batch of events as Apply would, for work to run on
// the test's goroutine.
func lanecalls(t *testing.T, s *Store, events []rank.Event) *batch {
	bt := newBatch(len(events))
	for i, e := range events {
		c := s.lanes[0].get()
		c.ctx, c.deadline = t.Context(), time.Now().Add(time.Minute)
		c.e = e
		c.setRecord(e, "tok-", uint64(i))
		bt.calls = append(bt.calls, c)
	}
	return bt
}

// A pipeline's events of one board go in one apply.lua call, and each
// event's result is the one it would have alone, applied in order (R3 per
// event): the same results as the memory engine applying them one by one,
// a failure in the middle included (it changes nothing, the next ones run),
// a duplicate and a conflict within the same call included.
func TestBatchedScript(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{})
	mem := newMem(t)
	for _, b := range []rank.Board{rank.DefaultBoard("bs"), rank.DefaultBoard("bs2")} {
		mustPut(t, s, b)
		if _, err := mem.PutBoard(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	events := []rank.Event{
		incr("bs", "1", "a", 5),
		incr("bs", "2", "b", 7),
		incr("bs2", "1", "a", 1), // another board: its own call
		incr("bs", "3", "a", 3),  // a ties b at 8, reached later: rank 2
		incr("bs", "4", "c", rank.MaxScore),
		incr("bs", "5", "c", 1), // out_of_range: changes nothing
		incr("bs", "6", "b", 1),
		incr("bs", "1", "a", 5), // a duplicate of the first, in the same call
		incr("bs", "2", "b", 8), // a conflict with the second
		incr("bs", "7", "a", -20),
	}
	s0 := s.lanes[0].scripts.Load()
	bt := lanecalls(t, s, events)
	s.work(s.lanes[0], bt)
	if n := s.lanes[0].scripts.Load() - s0; n != 2 {
		t.Fatalf("%d script calls for two boards; want 2", n)
	}
	for i, c := range bt.calls {
		want, werr := rank.ApplyWait(t.Context(), mem, events[i])
		if ranktest.Kind(c.err) != ranktest.Kind(werr) || c.r != want {
			t.Fatalf("event %d (%+v): %+v, %v\nwant %+v, %v", i, events[i], c.r, c.err, want, werr)
		}
	}
}

// The sink hears once per pipeline at most, each time of that pipeline's
// changes in apply order, and before any of their dones.
func TestSinkOncePerPipeline(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	var mu sync.Mutex
	var batches, heard int
	var lastSeq int64
	var bad string
	s := newHooked(t, srv, rank.Hooks{Sink: func(batch []rank.Change) {
		mu.Lock()
		defer mu.Unlock()
		batches++
		for _, c := range batch {
			heard++
			if c.Seq != lastSeq+1 && bad == "" {
				bad = fmt.Sprintf("change seq %d after %d", c.Seq, lastSeq)
			}
			lastSeq = c.Seq
		}
	}}, Config{})
	mustPut(t, s, rank.DefaultBoard("sinks"))
	p0 := s.lanes[0].pipelines.Load()
	var events []rank.Event
	for i := range 2000 {
		events = append(events, incr("sinks", fmt.Sprintf("s%d", i), fmt.Sprintf("m%d", i%13), 1))
	}
	for i, r := range submitAll(s, events) {
		if r.err != nil || r.r.Seq != int64(i+1) {
			t.Fatalf("event %d: %+v, %v", i, r.r, r.err)
		}
	}
	p := s.lanes[0].pipelines.Load() - p0
	mu.Lock()
	defer mu.Unlock()
	if bad != "" || heard != len(events) || int64(batches) > p {
		t.Fatalf("sink: %d changes in %d calls over %d pipelines (%s); want %d changes, at most one call per pipeline", heard, batches, p, bad, len(events))
	}
	t.Logf("%d changes, %d sink calls, %d pipelines", heard, batches, p)
}

// Complete wraps every batch's Done callbacks: each done runs inside a
// Complete call, on its goroutine, in submission order, and every call
// runs its batch exactly once (a done left out would never be answered);
// one call per batch, never more than the pipelines sent.
func TestCompleteOncePerBatch(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	var (
		mu      sync.Mutex
		inside  bool // a Completing call is running
		batches int
	)
	s := newHooked(t, srv, rank.Hooks{Complete: func(run func()) {
		mu.Lock()
		if inside {
			mu.Unlock()
			t.Error("Complete called while another runs (one completer)")
			return
		}
		inside = true
		batches++
		mu.Unlock()
		run()
		mu.Lock()
		inside = false
		mu.Unlock()
	}}, Config{Prefix: "compl"})
	const id, each = "compl", 400
	mustPut(t, s, rank.DefaultBoard(id))
	var events []rank.Event
	for i := range each {
		events = append(events, incr(id, fmt.Sprintf("c%d", i), "m", 1))
	}
	var (
		wg       sync.WaitGroup
		outside  int
		lastSeen int64
		order    = true
	)
	for _, e := range events {
		wg.Add(1)
		s.Apply(context.Background(), e, func(r rank.Result, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if !inside {
				outside++
			}
			if err != nil || r.Score != lastSeen+1 {
				order = false
			}
			lastSeen = r.Score
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if outside != 0 {
		t.Fatalf("%d of %d dones ran outside Complete", outside, each)
	}
	if !order {
		t.Fatal("dones did not run in submission order with each its event's result (scores 1, 2, 3, ...)")
	}
	if lastSeen != each {
		t.Fatalf("last score %d, want %d", lastSeen, each)
	}
	// One per batch: a batch is one pipeline or more (re-sends).
	if p := s.LaneStats().Pipelines; batches < 1 || int64(batches) > p {
		t.Fatalf("Complete ran %d times for %d pipelines: want one per batch", batches, p)
	}
	t.Logf("%d events in %d batches", each, batches)
}
