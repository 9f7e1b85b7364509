package live

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// TestR19BoardFrames: a scheduled board's subscriber is told each state
// from the store's clock (open, closing, final) within a tick, then gets
// the final standings once; deletion ends the subscription with "deleted".
func TestR19BoardFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{}, nil)
		start := time.Now()
		b := rank.DefaultBoard("life")
		b.EndsAt = rank.At(start.Add(2 * time.Second))
		b.Grace = rank.Duration(time.Second)
		h.board(b)
		r := newReader(t)
		h.subscribe(r, "life", 5, "", 0)
		h.apply("life", "alice", 7, true)
		h.settle()
		r.drain()
		wantStates(t, r, "life", "open")
		bf := r.boards["life"][0]
		if bf.EndsAt == nil || *bf.EndsAt != b.EndsAt.UnixMilli() || bf.FinalAt == nil ||
			*bf.FinalAt != b.FinalAt().UnixMilli() || bf.StartsAt != nil || bf.Period != 0 {
			t.Fatalf("board frame %+v", bf)
		}

		time.Sleep(time.Until(b.EndsAt.Time))
		h.settle()
		r.drain()
		wantStates(t, r, "life", "open", "closing")
		if len(r.finals["life"]) != 0 {
			t.Fatalf("final frame while closing: %+v", r.finals["life"])
		}
		time.Sleep(time.Until(b.FinalAt()))
		h.settle()
		r.drain()
		wantStates(t, r, "life", "open", "closing", "final")
		fs := r.finals["life"]
		if len(fs) != 1 || len(fs[0].Entries) != 1 || fs[0].Entries[0].Member != "alice" || fs[0].Entries[0].Score != 7 {
			t.Fatalf("final frames %+v", fs)
		}
		h.settle()
		r.drain()
		if len(r.finals["life"]) != 1 || len(r.boards["life"]) != 3 {
			t.Fatalf("repeated frames: %d final, %d board", len(r.finals["life"]), len(r.boards["life"]))
		}

		h.e.BoardDeleted("life")
		r.drain()
		wantStates(t, r, "life", "open", "closing", "final", "deleted")
		// A board of the same id, created anew, sends nothing to the ended
		// subscription.
		if err := h.st.DeleteBoard(t.Context(), "life"); err != nil {
			t.Fatal(err)
		}
		h.board(rank.DefaultBoard("life"))
		h.apply("life", "alice", 1, true)
		h.settle()
		before := r.n
		r.drain()
		if r.n != before {
			t.Fatalf("%d frames after deleted", r.n-before)
		}
	})
}

// TestR19PeriodFinal: on a board with reset, the next period's board frame
// comes at the boundary, and the ended period's final top frame, with its
// period, once its grace is over.
func TestR19PeriodFinal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{}, nil)
		// Past the grace of the period before the bubble's start, which
		// would be final (and framed) during the test otherwise.
		time.Sleep(10 * time.Second)
		b := rank.DefaultBoard("rounds")
		b.Reset = "1m"
		b.Grace = rank.Duration(5 * time.Second)
		h.board(b)
		p0 := rank.PeriodAt(b, time.Now())
		r := newReader(t)
		h.subscribe(r, "rounds", 3, "", 0)
		h.apply("rounds", "bob", 4, true)
		h.settle()
		r.drain()
		if bs := r.boards["rounds"]; len(bs) != 1 || bs[0].Period != p0.Index || bs[0].FinalAt != nil {
			t.Fatalf("board frames %+v", bs)
		}
		time.Sleep(time.Until(p0.End))
		h.settle()
		r.drain()
		p1 := rank.PeriodAt(b, p0.End)
		if bs := r.boards["rounds"]; len(bs) != 2 || bs[1].Period != p1.Index || bs[1].State != "open" {
			t.Fatalf("board frames after the boundary %+v", bs)
		}
		if len(r.finals["rounds"]) != 0 {
			t.Fatalf("final before grace: %+v", r.finals["rounds"])
		}
		time.Sleep(time.Until(p0.End.Add(5 * time.Second)))
		h.settle()
		r.drain()
		fs := r.finals["rounds"]
		if len(fs) != 1 || fs[0].Period != p0.Index || len(fs[0].Entries) != 1 || fs[0].Entries[0].Score != 4 {
			t.Fatalf("final frames %+v", fs)
		}
	})
}

func wantStates(t *testing.T, r *reader, board string, want ...string) {
	t.Helper()
	got := []string{}
	for _, b := range r.boards[board] {
		got = append(got, b.State)
	}
	if len(got) != len(want) {
		t.Fatalf("board frames of %s: %v, want %v", board, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("board frames of %s: %v, want %v", board, got, want)
		}
	}
}

// TestR19FinalIsLast: an event accepted within the grace makes a read due
// just as the board goes final; the frame that read brings must not follow
// the final one looking live. Every top frame from the final one on says
// final, with the late event in it, however the read and the final frame
// fall on the schedule.
func TestR19FinalIsLast(t *testing.T) {
	for _, lead := range []time.Duration{time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond} {
		t.Run(lead.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Config{}, nil)
				b := rank.DefaultBoard("cup")
				b.EndsAt = rank.At(time.Now().Add(2 * time.Second))
				b.Grace = rank.Duration(time.Second)
				h.board(b)
				r := newReader(t)
				h.subscribe(r, "cup", 5, "", 0)
				h.apply("cup", "ann", 5, true)
				h.settle()
				r.drain()

				// A read just before puts the next one on the schedule
				// after the final moment.
				time.Sleep(time.Until(b.FinalAt().Add(-90 * time.Millisecond)))
				late := func(id, member string, delta int64) {
					res, err := rank.ApplyWait(t.Context(), h.st, rank.Event{Board: "cup", ID: id, Member: member, Op: rank.OpDelta, Amount: delta, At: b.EndsAt.Add(-time.Millisecond)})
					if err != nil {
						t.Fatal(err)
					}
					h.e.Changed([]rank.Change{changeOf(res)})
				}
				late("late1", "ann", 1)
				synctest.Wait()
				r.drain()
				time.Sleep(time.Until(b.FinalAt().Add(-lead)))
				late("late2", "bob", 7)
				h.settle()
				r.drain()
				h.settle()
				r.drain()
				if len(r.finals["cup"]) == 0 {
					t.Fatal("no final top frame")
				}
				// The reader keeps each board's latest top frame.
				if m := r.top["cup"]; !m.Final || len(m.Entries) != 2 || m.Entries[0].Member != "bob" || m.Entries[0].Score != 7 {
					t.Fatalf("the last top frame: %+v", m)
				}
			})
		})
	}
}
