package ranktest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
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

// testMetaHistoryAtomic: R26 under concurrency. Writers set scores whose
// meta names the value; readers racing them never see an entry whose meta
// names another value, and afterwards every acknowledged event is in its
// member's history (up to N) and nothing else is.
func testMetaHistoryAtomic(t *testing.T, f Factory) {
	s := f(t, nil)
	for _, mode := range []rank.Mode{rank.Set, rank.Best} {
		b := put(t, s, board("rt-r26-"+string(mode), func(b *rank.Board) { b.Mode = mode; b.History = 100 }))
		const writers, per = 4, 40
		members := []string{"ann", "bob"}
		var wg sync.WaitGroup
		acked := make([][]string, writers)
		errs := make(chan error, writers+2)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range per {
					v := int64(w*1000 + i)
					m := members[(w+i)%len(members)]
					e := value(b.ID, fmt.Sprintf("w%d-%d", w, i), m, v)
					e.Meta = meta.Meta(fmt.Sprintf(`{"v":%d}`, v))
					e.Submitter = uint64(w + 1)
					if _, err := rank.ApplyWait(t.Context(), s, e); err != nil {
						errs <- err
						return
					}
					acked[w] = append(acked[w], m+"/"+e.ID)
				}
			}()
		}
		done := make(chan struct{})
		var readers sync.WaitGroup
		check := func(es []rank.Entry) error {
			for _, e := range es {
				if want := meta.Meta(fmt.Sprintf(`{"v":%d}`, e.Score)); e.Meta != want {
					return fmt.Errorf("%s board: %s has score %d with meta %s", mode, e.Member, e.Score, e.Meta)
				}
			}
			return nil
		}
		for range 2 {
			readers.Add(1)
			go func() {
				defer readers.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					pg, err := s.Top(t.Context(), b.ID, "", 0, 10)
					if err == nil {
						err = check(pg.Entries)
					}
					if err == nil {
						var rs rank.Ranks
						rs, err = s.Ranks(t.Context(), b.ID, "", members, 1)
						for _, mr := range rs.Members {
							if err == nil {
								err = check(mr.Around)
							}
						}
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(done)
		readers.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, a := range acked {
			for _, k := range a {
				want[k] = true
			}
		}
		got := map[string]bool{}
		for _, m := range members {
			for _, e := range history(t, s, b.ID, "", m) {
				if got[m+"/"+e.ID] {
					t.Fatalf("%s board: %s/%s twice in the history", mode, m, e.ID)
				}
				got[m+"/"+e.ID] = true
			}
		}
		if len(got) != len(want) || len(want) != writers*per {
			t.Fatalf("%s board: %d events in the histories, %d acknowledged, want %d", mode, len(got), len(want), writers*per)
		}
		for k := range want {
			if !got[k] {
				t.Fatalf("%s board: acknowledged %s is not in the history", mode, k)
			}
		}
	}
}
