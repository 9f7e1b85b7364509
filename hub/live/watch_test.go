package live

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/wsgateway/wsgateway/rank"
)

// watchLog records OnWatch calls in order.
type watchLog struct {
	mu    sync.Mutex
	calls []string
}

func (w *watchLog) hook(board string, watched bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := "-" + board
	if watched {
		s = "+" + board
	}
	w.calls = append(w.calls, s)
}

// net folds the calls into the boards watched now, checking that calls of
// a board alternate (+ then -), as a refcount relies on.
func (w *watchLog) net(t *testing.T) []string {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	on := map[string]bool{}
	for _, c := range w.calls {
		b, add := c[1:], c[0] == '+'
		if on[b] == add {
			t.Fatalf("OnWatch %s while already so: %v", c, w.calls)
		}
		on[b] = add
	}
	var out []string
	for b, ok := range on {
		if ok {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return out
}

// TestOnWatch: a board's first local subscription (top or view) reports
// it watched, its last one leaving (unsubscribe, the connection dropped,
// the board deleted) reports it unwatched; other subscribers in between,
// and a connection changing its subscription, leave it watched.
func TestOnWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w watchLog
		h := newHarness(t, Config{OnWatch: w.hook}, nil)
		for _, id := range []string{"w1", "w2", "w3"} {
			h.board(rank.DefaultBoard(id))
		}
		want := func(what string, boards ...string) {
			t.Helper()
			if got := w.net(t); !slices.Equal(got, boards) {
				t.Fatalf("%s: watched %v, want %v (calls %v)", what, got, boards, w.calls)
			}
		}
		r1, r2 := newReader(t), newReader(t)
		want("nothing yet")
		h.subscribe(r1, "w1", 5, "", 0)
		want("r1 on w1", "w1")
		h.subscribe(r2, "w1", 0, "m", 2)
		h.subscribe(r1, "w1", 3, "m", 1) // r1 changes its subscription
		want("r1 and r2 on w1", "w1")
		h.e.Unsubscribe(r1.o, "w1")
		want("r2 left on w1", "w1")
		h.e.Unsubscribe(r2.o, "w1")
		want("nobody on w1")

		h.subscribe(r1, "w1", 5, "", 0)
		h.subscribe(r1, "w2", 0, "m", 1)
		h.subscribe(r2, "w3", 1, "", 0)
		want("r1 on w1, w2, r2 on w3", "w1", "w2", "w3")
		h.subscribe(r1, "w2", 2, "", 0) // alone on w2, from a view to a top
		want("r1 still on w2", "w1", "w2", "w3")
		h.e.Drop(r1.o)
		want("r1 gone", "w3")
		h.e.BoardDeleted("w3")
		want("w3 deleted")

		// A failed first read (unknown board) leaves nothing watched.
		if err := h.e.Subscribe(t.Context(), r2.o, "nope", 5, "", 0); err == nil {
			t.Fatal("subscribed to an unknown board")
		}
		want("after a refused subscription")
	})
}
