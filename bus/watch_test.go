package bus

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// TestPerBoardWatch: a PerBoard bus receives the changes of the boards it
// watches only, from the moment Watch returns (a change published right
// after arrives), nothing after Unwatch; board events reach it whatever it
// watches. A board "a.b" is not the hierarchy a → b: watching it gets
// neither "a"'s changes nor the other way round. A bus without PerBoard
// (the control) gets everything.
func TestPerBoardWatch(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	var rb, rc recorder
	a := newBus(t, Config{URL: srv.URL(), Node: "a"})
	b := newBus(t, rb.wire(Config{URL: srv.URL(), Node: "b", PerBoard: true}))
	c := newBus(t, rc.wire(Config{URL: srv.URL(), Node: "c"}))
	ready(t, a, b, c)

	var published int64
	var seq int64
	// round publishes one change of each board, then a board event behind
	// them, and waits for b and c to get the event: what b did not get of
	// the changes by then, it never will.
	round := func() {
		t.Helper()
		for _, board := range []string{"a", "a.b", "a%2Eb", "x"} {
			seq++
			a.Publish(rank.Change{Board: board, Seq: seq, Member: "m", New: seq, Rank: 1})
			published++
		}
		testenv.Until(t, 10*time.Second, "changes handed to NATS", func() bool { return a.Stats().Published == published })
		nb, nc := len(rb.boardEvents()), len(rc.boardEvents())
		a.PublishBoard(BoardEvent{Board: "x"})
		testenv.Until(t, 10*time.Second, "the board event at b and c", func() bool {
			return len(rb.boardEvents()) > nb && len(rc.boardEvents()) > nc
		})
	}
	boardsOf := func(r *recorder) []string {
		var out []string
		for _, c := range r.changes() {
			out = append(out, c.Board)
		}
		return out
	}

	round()
	if got := boardsOf(&rb); len(got) != 0 {
		t.Fatalf("b watches nothing and got changes of %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Watch(ctx, "a.b", "a.b"); err != nil {
		t.Fatal(err)
	}
	if s := b.Stats(); s.Watched != 1 {
		t.Fatalf("watching %d boards, want 1", s.Watched)
	}
	round()
	if got := boardsOf(&rb); !slices.Equal(got, []string{"a.b"}) {
		t.Fatalf("b watching a.b got changes of %v", got)
	}
	if err := b.Unwatch("a.b", "never-watched"); err != nil {
		t.Fatal(err)
	}
	round()
	if got := boardsOf(&rb); !slices.Equal(got, []string{"a.b"}) {
		t.Fatalf("b got changes after Unwatch: %v", got)
	}
	if s := b.Stats(); s.Watched != 0 || s.In.Changes != 1 || s.In.Boards != 3 {
		t.Fatalf("b's stats %+v: want 0 watched, 1 change message, 3 board events", s)
	}
	if got := len(rc.changes()); got != 12 {
		t.Fatalf("the control got %d changes, want 12", got)
	}
	// Without PerBoard, Watch and Unwatch change nothing.
	if err := c.Watch(ctx, "x"); err != nil || c.Stats().Watched != 0 || c.Unwatch("x") != nil {
		t.Fatalf("Watch on a bus without PerBoard: %v, %d watched", err, c.Stats().Watched)
	}
}
