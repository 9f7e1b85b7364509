package ranktest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/rank"
)

func history(t *testing.T, s rank.Store, boardID string, p rank.PeriodSel, member string) []rank.HistoryEvent {
	t.Helper()
	h, err := s.History(t.Context(), boardID, p, member)
	if err != nil {
		t.Fatalf("History(%s, %q, %s): %v", boardID, p, member, err)
	}
	if h == nil {
		t.Fatalf("History(%s, %q, %s) is nil, want a slice", boardID, p, member)
	}
	return h
}

func fmtHistory(h []rank.HistoryEvent) string {
	var b strings.Builder
	for i, e := range h {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s:%d/%d=%d@%d", e.ID, e.Op, e.Amount, e.Score, e.At)
		if e.Meta != "" {
			b.WriteString(string(e.Meta))
		}
	}
	return "[" + b.String() + "]"
}

func wantHistory(t *testing.T, s rank.Store, boardID string, p rank.PeriodSel, member string, want ...rank.HistoryEvent) {
	t.Helper()
	got := history(t, s, boardID, p, member)
	if fmtHistory(got) != fmtHistory(want) {
		t.Fatalf("history of %s on %s (%q): %s, want %s", member, boardID, p, fmtHistory(got), fmtHistory(want))
	}
}

// testHistory: §11 and R26's history: a board with history N keeps each
// member's last N applied events per period, newest first, with the score
// after each, its time and meta; a duplicate or a refused event never
// enters it.
func testHistory(t *testing.T, f Factory) {
	anchor := skewedAnchor()
	clk := NewClock(anchor)
	s := f(t, clk.Now)
	g := &ids{}
	b := put(t, s, board("rt-hist", func(b *rank.Board) { b.History = 3; b.Reset = rank.Daily }))
	at := func() int64 { return clk.Now().UnixMilli() }

	ev := func(id string, d, score, when int64, m string) rank.HistoryEvent {
		return rank.HistoryEvent{ID: id, Op: rank.OpDelta, Amount: d, Score: score, At: when, Meta: meta.Meta(m)}
	}
	wantHistory(t, s, b.ID, "", "ann") // nothing yet: empty

	e1 := delta(b.ID, g.next(), "ann", 5)
	apply(t, s, e1)
	t1 := at()
	clk.Advance(time.Second)
	e2 := withMeta(delta(b.ID, g.next(), "ann", 7), `{"replay":"https://r.example/2"}`)
	apply(t, s, e2)
	t2 := at()
	wantHistory(t, s, b.ID, "", "ann", ev(e2.ID, 7, 12, t2, `{"replay":"https://r.example/2"}`), ev(e1.ID, 5, 5, t1, ""))

	// A duplicate and refused events never enter it.
	if r := apply(t, s, e1); !r.Duplicate {
		t.Fatalf("resend of %s: %+v, want a duplicate", e1.ID, r)
	}
	applyErr(t, s, delta(b.ID, g.next(), "ann", rank.MaxScore), rank.ErrOutOfRange)
	applyErr(t, s, withMeta(delta(b.ID, g.next(), "ann", 1), `[]`), rank.ErrBadRequest)
	applyErr(t, s, delta(b.ID, e2.ID, "ann", 8), rank.ErrIdempotencyConflict)
	wantHistory(t, s, b.ID, "", "ann", ev(e2.ID, 7, 12, t2, `{"replay":"https://r.example/2"}`), ev(e1.ID, 5, 5, t1, ""))

	// An event's own time is its at; the cap of 3 holds.
	clk.Advance(time.Second)
	e3 := delta(b.ID, g.next(), "ann", -2)
	e3.At = clk.Now().Add(-500 * time.Millisecond)
	apply(t, s, e3)
	t3 := e3.At.UnixMilli()
	e4 := delta(b.ID, g.next(), "ann", 0)
	apply(t, s, e4)
	t4 := at()
	wantHistory(t, s, b.ID, "", "ann", ev(e4.ID, 0, 10, t4, ""), ev(e3.ID, -2, 10, t3, ""), ev(e2.ID, 7, 12, t2, `{"replay":"https://r.example/2"}`))
	wantHistory(t, s, b.ID, "", "bob") // another member's is its own

	// The next period has its own; the previous one stays readable.
	first := rank.PeriodAt(b, clk.Now())
	clk.Set(first.End.Add(time.Minute))
	e5 := delta(b.ID, g.next(), "ann", 1)
	apply(t, s, e5)
	wantHistory(t, s, b.ID, "", "ann", ev(e5.ID, 1, 1, at(), ""))
	prev := []rank.HistoryEvent{ev(e4.ID, 0, 10, t4, ""), ev(e3.ID, -2, 10, t3, ""), ev(e2.ID, 7, 12, t2, `{"replay":"https://r.example/2"}`)}
	wantHistory(t, s, b.ID, "previous", "ann", prev...)
	wantHistory(t, s, b.ID, rank.PeriodSel(fmt.Sprint(first.Index)), "ann", prev...)

	// A best board's history holds every applied event, improving or not,
	// with the score the member kept.
	best := put(t, s, board("rt-hist-best", func(b *rank.Board) { b.History = 2; b.Mode = rank.Best; b.Shards = 3 }))
	v1, v2 := value(best.ID, g.next(), "cat", 40), value(best.ID, g.next(), "cat", 30)
	apply(t, s, v1)
	apply(t, s, v2)
	wantHistory(t, s, best.ID, "", "cat",
		rank.HistoryEvent{ID: v2.ID, Op: rank.OpValue, Amount: 30, Score: 40, At: at()},
		rank.HistoryEvent{ID: v1.ID, Op: rank.OpValue, Amount: 40, Score: 40, At: at()})

	// A board without history keeps none.
	plain := put(t, s, board("rt-hist-none", nil))
	apply(t, s, delta(plain.ID, g.next(), "ann", 1))
	wantHistory(t, s, plain.ID, "", "ann")

	// history is 0..100, and not for derived or hot boards (400 naming it).
	for name, mut := range map[string]func(b *rank.Board){
		"101":     func(b *rank.Board) { b.History = 101 },
		"-1":      func(b *rank.Board) { b.History = -1 },
		"derived": func(b *rank.Board) { b.History = 1; b.Source = rank.UnionOf([]string{b.ID + "-src"}, nil) },
		"hot": func(b *rank.Board) {
			*b = hotBoard(b.ID, time.Hour, 3, 0.5)
			b.History = 1
		},
	} {
		_, err := s.PutBoard(t.Context(), board("rt-hist-bad", mut))
		if !errors.Is(err, rank.ErrInvalidConfig) || !strings.Contains(err.Error(), "history") {
			t.Errorf("history %s: PutBoard = %v, want invalid_config naming history", name, err)
		}
	}
	if _, err := s.History(t.Context(), b.ID, "", "no one"); !errors.Is(err, rank.ErrInvalidMember) {
		t.Errorf("History of an invalid member id: %v", err)
	}
	if _, err := s.History(t.Context(), "rt-hist-absent", "", "ann"); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Errorf("History of an unknown board: %v", err)
	}
}
