package live

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

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

// viewersSaid lists the viewers of r's board frames of board, -1 for a
// frame without them.
func viewersSaid(r *reader, board string) []int {
	var out []int
	for _, f := range r.boards[board] {
		n := -1
		if f.Viewers != nil {
			n = *f.Viewers
		}
		out = append(out, n)
	}
	return out
}

// TestViewersFrames: board frames carry the board's viewers (this node's
// subscribers plus the other nodes'), sent when the count changed and at
// most every 5 s; a new subscriber's first board frame has the count last
// told; the lifecycle in them is the one subscribers know.
func TestViewersFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var others atomic.Int64
		others.Store(2)
		h := newHarness(t, Config{OtherViewers: func(string) int { return int(others.Load()) }}, nil)
		h.board(rank.DefaultBoard("vf"))
		r1, r2 := newReader(t), newReader(t)
		want := func(what string, r *reader, counts ...int) {
			t.Helper()
			h.settle()
			r.drain()
			if got := viewersSaid(r, "vf"); !slices.Equal(got, counts) {
				t.Fatalf("%s: board frames with viewers %v, want %v", what, got, counts)
			}
			for _, f := range r.boards["vf"] {
				if f.State != "open" {
					t.Fatalf("%s: board frame %+v", what, f)
				}
			}
		}
		h.subscribe(r1, "vf", 3, "", 0)
		start := time.Now()
		want("the subscription's frame, no count yet", r1, -1)
		time.Sleep(time.Until(start.Add(5 * time.Second)))
		want("the first look, 5 s later", r1, -1, 3)
		start = time.Now()
		h.subscribe(r2, "vf", 0, "m", 1)
		want("a second subscriber: the count told", r2, 3)
		time.Sleep(4 * time.Second)
		want("within 5 s of the last frame: nothing new", r1, -1, 3)
		time.Sleep(time.Until(start.Add(5 * time.Second)))
		want("5 s later: the new count", r1, -1, 3, 4)
		want("to both", r2, 3, 4)
		time.Sleep(5 * time.Second)
		want("no change: no frame", r1, -1, 3, 4)
		others.Store(0)
		h.e.Unsubscribe(r2.o, "vf")
		time.Sleep(5 * time.Second)
		want("the others left, and r2", r1, -1, 3, 4, 1)
	})
}

// BenchmarkViewers measures one count of 10,000 subscriptions spread over
// 10 boards: the walk a node makes, under the engine's lock, per report.
func BenchmarkViewers(b *testing.B) {
	clock := time.Unix(1e9, 0)
	e, ms := benchEngine(b, 10, &clock)
	ctx := context.Background()
	for i := range 10 {
		if _, err := ms.PutBoard(ctx, rank.DefaultBoard(fmt.Sprintf("g%d", i))); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 10000 {
		if err := e.Subscribe(ctx, NewOutbox(0, nil), fmt.Sprintf("g%d", i%10), 10, "", 0); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if n := e.Viewers(); n["g3"] != 1000 {
			b.Fatalf("g3 has %d viewers", n["g3"])
		}
	}
}
