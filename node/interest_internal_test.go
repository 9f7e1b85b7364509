package node

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeBus records the interest worker's Watch and Unwatch calls and the
// resyncs that follow; fail makes Watch fail (NATS down).
type fakeBus struct {
	mu      sync.Mutex
	watched map[string]bool
	calls   []string // "+board", "-board", "resync board", in order
	fail    bool
}

func (f *fakeBus) Watch(_ context.Context, boards ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errors.New("nats down")
	}
	for _, b := range boards {
		f.watched[b] = true
		f.calls = append(f.calls, "+"+b)
	}
	return nil
}

func (f *fakeBus) Unwatch(boards ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range boards {
		delete(f.watched, b)
		f.calls = append(f.calls, "-"+b)
	}
	return nil
}

func (f *fakeBus) resync(board string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "resync "+board)
}

func (f *fakeBus) state() (watched []string, calls []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for b := range f.watched {
		watched = append(watched, b)
	}
	slices.Sort(watched)
	return watched, slices.Clone(f.calls)
}

// newTestInterest runs an interest worker on a fakeBus inside the synctest
// bubble.
func newTestInterest(t *testing.T, of func(string) []string, linger time.Duration) (*interest, *fakeBus) {
	f := &fakeBus{watched: map[string]bool{}}
	in := newInterest(of, linger, slog.New(slog.DiscardHandler))
	in.start(f, f.resync)
	t.Cleanup(in.stop)
	return in, f
}

func wantWatched(t *testing.T, f *fakeBus, what string, boards ...string) {
	t.Helper()
	synctest.Wait()
	if got, calls := f.state(); !slices.Equal(got, boards) {
		t.Fatalf("%s: watching %v, want %v (calls %v)", what, got, boards, calls)
	}
}

// TestInterestRefcountAndLinger: a board is subscribed while any local
// board naming it is watched, and resynced after the subscription is
// confirmed; it stays subscribed for the linger after the last one leaves
// (a watcher back within it costs nothing), then is unsubscribed.
func TestInterestRefcountAndLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sources := map[string][]string{"sum": {"sum", "a", "b"}}
		of := func(board string) []string {
			if s, ok := sources[board]; ok {
				return s
			}
			return []string{board}
		}
		in, f := newTestInterest(t, of, 5*time.Second)

		in.watch("a", true)
		wantWatched(t, f, "a watched", "a")
		if _, calls := f.state(); !slices.Equal(calls, []string{"+a", "resync a"}) {
			t.Fatalf("calls %v, want the subscription then the resync", calls)
		}
		in.watch("sum", true) // a derived board: its sources and itself
		wantWatched(t, f, "a and sum watched", "a", "b", "sum")
		_, calls := f.state()
		if !slices.Contains(calls, "resync sum") || slices.Contains(calls[2:], "resync a") {
			t.Fatalf("calls %v: sum resynced (its new sources), a not again (its subscription stayed)", calls)
		}

		in.watch("a", false) // sum still needs a
		wantWatched(t, f, "sum alone", "a", "b", "sum")
		in.watch("sum", false)
		time.Sleep(4 * time.Second)
		wantWatched(t, f, "within the linger", "a", "b", "sum")
		in.watch("b", true) // back within the linger: no SUB, no resync
		_, before := f.state()
		time.Sleep(2 * time.Second)
		wantWatched(t, f, "linger over: only b kept", "b")
		_, after := f.state()
		for _, c := range after[len(before):] {
			if c == "+b" || c == "resync b" {
				t.Fatalf("b resubscribed or resynced within the linger: %v", after[len(before):])
			}
		}

		// A flip before the worker runs (last watcher leaves, a new one
		// comes) nets to nothing.
		in.watch("b", false)
		in.watch("b", true)
		time.Sleep(10 * time.Second)
		wantWatched(t, f, "b flipped", "b")
	})
}

// TestInterestRetriesAndRefresh: a subscription NATS does not confirm is
// retried (and the board resynced once it is); a board whose interest
// changes (its config changed) moves its subscriptions.
func TestInterestRetriesAndRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		src := []string{"d", "x"}
		of := func(string) []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(src) }
		in, f := newTestInterest(t, of, -1)

		f.mu.Lock()
		f.fail = true
		f.mu.Unlock()
		in.watch("d", true)
		wantWatched(t, f, "NATS down")
		f.mu.Lock()
		f.fail = false
		f.mu.Unlock()
		time.Sleep(watchRetry)
		wantWatched(t, f, "retried", "d", "x")
		if _, calls := f.state(); !slices.Contains(calls, "resync d") {
			t.Fatalf("no resync after the retried subscription: %v", calls)
		}

		mu.Lock()
		src = []string{"d", "y"}
		mu.Unlock()
		in.refresh("d")
		in.refresh("other") // not watched here: nothing
		wantWatched(t, f, "sources changed", "d", "y")
		in.watch("d", false)
		wantWatched(t, f, "no linger")

		// A board released while its subscription is unconfirmed is still
		// unsubscribed (the bus made the SUB even though the round trip
		// failed), and not retried.
		f.mu.Lock()
		f.fail = true
		f.mu.Unlock()
		mu.Lock()
		src = []string{"e"}
		mu.Unlock()
		in.watch("e", true)
		synctest.Wait()
		in.watch("e", false)
		time.Sleep(3 * watchRetry)
		if _, calls := f.state(); !slices.Contains(calls, "-e") || slices.Contains(calls, "+e") {
			t.Fatalf("calls %v: want e unwatched, never confirmed", calls)
		}
	})
}
