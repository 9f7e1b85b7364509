package ranktest

// Lifecycle (§6, R17–R18): schedules, grace, `at`, max_submissions,
// retain. Every store clock here is hours away from the test's own, so an
// engine that reads the node's clock anywhere fails.

import (
	"errors"
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
