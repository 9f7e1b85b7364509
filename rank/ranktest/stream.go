package ranktest

// Streams (§15): the epoch of a board's frame stream and the transitions of
// its schedule recorded on its seq, the first time they are seen.

import (
	"errors"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

func markStream(t *testing.T, s rank.Store, board string) rank.Stream {
	t.Helper()
	st, err := s.MarkStream(t.Context(), board)
	if err != nil {
		t.Fatalf("MarkStream(%s): %v", board, err)
	}
	return st
}

// testStreamMarks: the first MarkStream records the schedule and every
// transition up to the clock at one new seq; a second records nothing and
// moves nothing; events move the seq and not the marks; each transition
// the clock passes is recorded once, at one seq for all those passed
// together; marks older than the retained periods go; the epoch stays.
func testStreamMarks(t *testing.T, f Factory) {
	clk := NewClock(skewedAnchor().Truncate(time.Minute).Add(30 * time.Second))
	s := f(t, clk.Now)
	b := put(t, s, board("rt-stream", func(b *rank.Board) {
		b.Reset = "1m"
		b.Grace = rank.Duration(20 * time.Second)
	}))
	first := markStream(t, s, b.ID)
	if first.Epoch == "" || first.Seq != 1 || first.Schedule != b.ScheduleKey() || first.ScheduleSeq != 1 {
		t.Fatalf("first MarkStream = %+v; want an epoch, seq 1, the schedule recorded at 1", first)
	}
	want := b.Transitions(clk.Now(), rank.MarkDepth(b))
	if len(first.Marks) != len(want) {
		t.Fatalf("first MarkStream recorded %d transitions, want %d: %+v", len(first.Marks), len(want), first.Marks)
	}
	for i, tr := range want {
		if m := first.Marks[i]; m.At != tr.At.UnixMilli() || m.Seq != 1 {
			t.Fatalf("mark %d = %+v, want %d at seq 1", i, m, tr.At.UnixMilli())
		}
	}
	if again := markStream(t, s, b.ID); again.Seq != 1 || again.Epoch != first.Epoch || len(again.Marks) != len(first.Marks) {
		t.Fatalf("second MarkStream = %+v; want nothing new", again)
	}
	var g ids
	if r := apply(t, s, delta(b.ID, g.next(), "a", 5)); r.Seq != 2 {
		t.Fatalf("event after the first mark has seq %d, want 2", r.Seq)
	}
	if st := markStream(t, s, b.ID); st.Seq != 2 || len(st.Marks) != len(first.Marks) {
		t.Fatalf("after an event MarkStream = %+v; want seq 2 and no new mark", st)
	}

	// The next minute starts (a transition), then the last one's grace
	// ends (another): each recorded once, at its own seq.
	next := clk.Now().Truncate(time.Minute).Add(time.Minute)
	clk.Set(next.Add(-time.Millisecond))
	if st := markStream(t, s, b.ID); st.Seq != 2 {
		t.Fatalf("a millisecond before the boundary MarkStream moved the seq to %d", st.Seq)
	}
	clk.Set(next)
	st := markStream(t, s, b.ID)
	if seq, ok := st.MarkOf(next); !ok || seq != 3 || st.Seq != 3 {
		t.Fatalf("at the boundary: %+v; want %s recorded at seq 3", st, next)
	}
	if r := apply(t, s, delta(b.ID, g.next(), "a", 1)); r.Seq != 4 {
		t.Fatalf("event after the boundary mark has seq %d, want 4", r.Seq)
	}
	fin := next.Add(20 * time.Second)
	clk.Set(fin)
	st = markStream(t, s, b.ID)
	if seq, ok := st.MarkOf(fin); !ok || seq != 5 {
		t.Fatalf("at the end of grace: %+v; want %s recorded at seq 5", st, fin)
	}
	if seq, _ := st.MarkOf(next); seq != 3 {
		t.Fatalf("the boundary's mark moved to %d", seq)
	}
	trs := b.Transitions(fin, 1)
	if len(trs) != 1 || !trs[0].Final || trs[0].FinalPeriod != rank.PeriodAt(b, next.Add(-time.Second)).Index {
		t.Fatalf("the transition at the end of grace is %+v, want the final of the period before", trs)
	}

	// Five minutes pass unseen: their ten transitions are recorded at one
	// seq; those before the retained periods are dropped, so every mark
	// left is one of them.
	clk.Set(fin.Add(5 * time.Minute))
	st = markStream(t, s, b.ID)
	if st.Seq != 6 || st.Epoch != first.Epoch {
		t.Fatalf("after five minutes: %+v; want seq 6, the same epoch", st)
	}
	keep := rank.MarkKeep(b, clk.Now())
	n6 := 0
	for _, m := range st.Marks {
		if m.At < keep {
			t.Fatalf("mark %+v is older than the oldest kept %d", m, keep)
		}
		if m.Seq == 6 {
			n6++
		}
	}
	if d := rank.MarkDepth(b); d >= 10 || n6 != d || len(st.Marks) != d {
		t.Fatalf("after five minutes %d marks at seq 6 of %d: %+v; want all %d", n6, len(st.Marks), st.Marks, d)
	}
}

// testStreamEpoch: the epoch is renewed only from itself; a schedule change
// is recorded on the seq; a board made again has another epoch; unknown and
// invalid boards are refused.
func testStreamEpoch(t *testing.T, f Factory) {
	clk := NewClock(skewedAnchor())
	s := f(t, clk.Now)
	ctx := t.Context()
	b := put(t, s, board("rt-epoch", nil))
	e1 := markStream(t, s, b.ID).Epoch
	if e, err := s.RenewEpoch(ctx, b.ID, "not-the-epoch"); err != nil || e != e1 {
		t.Fatalf("RenewEpoch from another epoch = %q, %v; want %q unchanged", e, err, e1)
	}
	e2, err := s.RenewEpoch(ctx, b.ID, e1)
	if err != nil || e2 == e1 || e2 == "" {
		t.Fatalf("RenewEpoch(%q) = %q, %v; want a new epoch", e1, e2, err)
	}
	if e, err := s.RenewEpoch(ctx, b.ID, e1); err != nil || e != e2 {
		t.Fatalf("RenewEpoch from the old epoch again = %q, %v; want %q", e, err, e2)
	}
	st := markStream(t, s, b.ID)
	if st.Epoch != e2 {
		t.Fatalf("MarkStream's epoch %q, want the renewed %q", st.Epoch, e2)
	}

	// A schedule change is itself recorded; another change is not.
	b.Title = "no schedule change"
	put(t, s, b)
	if again := markStream(t, s, b.ID); again.Seq != st.Seq || again.ScheduleSeq != st.ScheduleSeq {
		t.Fatalf("a title change moved the stream: %+v after %+v", again, st)
	}
	b.EndsAt = rank.At(clk.Now().Add(time.Hour))
	put(t, s, b)
	moved := markStream(t, s, b.ID)
	if moved.Seq != st.Seq+1 || moved.ScheduleSeq != moved.Seq || moved.Schedule != b.ScheduleKey() || moved.Epoch != e2 {
		t.Fatalf("after a schedule change: %+v; want the schedule recorded at seq %d", moved, st.Seq+1)
	}

	// Made again: another epoch.
	if err := s.DeleteBoard(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkStream(ctx, b.ID); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("MarkStream of a deleted board: %v, want ErrUnknownBoard", err)
	}
	if _, err := s.RenewEpoch(ctx, b.ID, e2); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("RenewEpoch of a deleted board: %v, want ErrUnknownBoard", err)
	}
	put(t, s, board("rt-epoch", nil))
	if again := markStream(t, s, b.ID); again.Epoch == e1 || again.Epoch == e2 || again.Epoch == "" || again.Seq != 1 {
		t.Fatalf("the board made again: %+v; want a third epoch and seq 1", again)
	}
	if _, err := s.MarkStream(ctx, "bad id"); !errors.Is(err, rank.ErrInvalidBoard) {
		t.Fatalf("MarkStream of an invalid id: %v", err)
	}
}
