package live

import (
	"maps"
	"testing"
	"testing/synctest"

	"github.com/wsgateway/wsgateway/rank"
)

// TestViewers: a connection counts once per board it subscribes to (top,
// view or both), and stops counting when it unsubscribes, drops or the
// board is deleted.
func TestViewers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{}, nil)
		for _, id := range []string{"v1", "v2"} {
			h.board(rank.DefaultBoard(id))
		}
		want := func(what string, counts map[string]int) {
			t.Helper()
			if got := h.e.Viewers(); !maps.Equal(got, counts) {
				t.Fatalf("%s: viewers %v, want %v", what, got, counts)
			}
		}
		r1, r2, r3 := newReader(t), newReader(t), newReader(t)
		want("nobody", map[string]int{})
		h.subscribe(r1, "v1", 5, "m", 2) // top and view: one subscription
		h.subscribe(r2, "v1", 0, "m", 1)
		h.subscribe(r3, "v1", 3, "", 0)
		h.subscribe(r3, "v2", 3, "", 0)
		want("three on v1, one on v2", map[string]int{"v1": 3, "v2": 1})
		h.subscribe(r1, "v1", 2, "", 0) // changes its subscription
		want("r1 changed", map[string]int{"v1": 3, "v2": 1})
		h.e.Unsubscribe(r2.o, "v1")
		want("r2 left", map[string]int{"v1": 2, "v2": 1})
		h.e.Drop(r3.o)
		want("r3 gone", map[string]int{"v1": 1})
		h.e.BoardDeleted("v1")
		want("v1 deleted", map[string]int{})
	})
}
