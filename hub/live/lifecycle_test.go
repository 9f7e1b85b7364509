package live

import (
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsgateway/wsgateway/proto"
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

// TestBoardFinalIsCurrent (R19, §15): once a board without reset is final,
// its final frame is its current top frame, for the board's standings and
// for a group's (a cohort's, a region's). A subscriber that watched it
// through the end gets the final frame once, live, and nothing after, as
// does one that joins as the board goes final, owed its first frame; a
// later subscriber's top frame, fresh or resumed from before the end, is
// that final frame, never the last live one.
func TestBoardFinalIsCurrent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		group Group
		mut   func(b *rank.Board)
	}{
		{"board", Group{}, func(*rank.Board) {}},
		{"cohort", Group{Cohort, "1"}, func(b *rank.Board) { b.Cohort = rank.Cohort{Size: 3} }},
		{"region", Group{Region, "FR"}, func(b *rank.Board) { b.Regions = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { finalIsCurrent(t, tc.group, tc.mut) })
		})
	}
}

func finalIsCurrent(t *testing.T, group Group, mut func(b *rank.Board)) {
	// The store's clock moves with skew, the bubble's does not: the engine
	// does not tick between a move and what the test does next.
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	h := newHarness(t, Config{Refresh: -1}, clock)
	b := rank.DefaultBoard("cup")
	b.EndsAt = rank.At(time.Now().Add(2 * time.Second))
	b.Grace = rank.Duration(time.Second)
	mut(&b)
	h.board(b)
	for i, m := range []string{"ann", "bob", "cid"} {
		e := rank.Event{Board: "cup", ID: m, Member: m, Op: rank.OpDelta, Amount: int64(5 + i), Region: "FR"}
		if !b.Regions {
			e.Region = ""
		}
		res, err := rank.ApplyWait(t.Context(), h.st, e)
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := rank.ChangeOf(e, res); ok {
			h.e.Changed([]rank.Change{c})
		}
	}
	subscribe := func(r *reader, top int, since *proto.Since) Joined {
		t.Helper()
		j, err := h.e.SubscribeStream(t.Context(), r.o, Spec{Board: "cup", Top: top, Group: group}, since)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	join := func(r *reader, since *proto.Since) Joined {
		t.Helper()
		j := subscribe(r, 3, since)
		h.settle()
		r.drain()
		return j
	}
	watch, away := newReader(t), newReader(t)
	join(watch, nil)
	j := join(away, nil)
	if m := away.top["cup"]; len(m.Entries) != 3 || m.Final {
		t.Fatalf("top frame before the end: %+v", m)
	}
	since := &proto.Since{Epoch: j.Epoch, Seq: latest(away, "cup")}
	h.e.Drop(away.o)

	// The board goes final; a subscriber of a top key this node holds no
	// frame of joins before the tick tells it, owed the key's next read.
	synctest.Wait()
	skew.Add(int64(b.FinalAt().Sub(clock())))
	edge := newReader(t)
	subscribe(edge, 2, nil)
	h.settle()
	h.settle()
	watch.drain()
	edge.drain()
	fs := watch.finals["cup"]
	if len(fs) != 1 || len(fs[0].Entries) != 3 {
		t.Fatalf("watcher: final frames %+v, want one with the three entries", fs)
	}
	final := fs[0]

	fresh := newReader(t)
	join(fresh, nil)
	back := newReader(t)
	back.boards["cup"] = slices.Clone(away.boards["cup"]) // the client's, for drain's order check
	if j := join(back, since); !j.Resumed {
		t.Fatalf("resume from seq %d: %+v, want resumed", since.Seq, j)
	}
	for who, r := range map[string]*reader{"fresh": fresh, "resumed": back, "joined at the end": edge} {
		m, ok := r.top["cup"]
		want := final.Entries[:min(len(m.Entries), 3)]
		switch {
		case !ok:
			t.Errorf("%s: no top frame after the board went final", who)
		case !m.Final || m.Cohort != final.Cohort || m.Region != final.Region || m.Total != final.Total || len(m.Entries) < 2 || !slices.Equal(m.Entries, want):
			t.Errorf("%s: top frame %+v, want the final one %+v", who, m, final)
		case len(r.finals["cup"]) != 1:
			t.Errorf("%s: final frames %+v, want one", who, r.finals["cup"])
		}
	}

	h.settle()
	h.settle()
	for who, r := range map[string]*reader{"watcher": watch, "joined at the end": edge} {
		r.drain()
		if len(r.finals["cup"]) != 1 || !r.top["cup"].Final {
			t.Errorf("%s: final frames %+v, last top frame %+v; want the one final, last", who, r.finals["cup"], r.top["cup"])
		}
	}
}

// TestBoardFinalJoinWhileTold (R19, §15): a subscriber that joins while
// this node tells the board's final, its final frame being read, gets that
// frame as its first top frame: not the last live one held until then,
// nor the frame of a read that began before the board was final and
// showed the same standings.
func TestBoardFinalJoinWhileTold(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var skew atomic.Int64
		clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		h, b, watch := endingBoard(t, clock)

		// A change's read waits before it reads; meanwhile the board goes
		// final and the store records it, so the read follows the mark.
		read := &gate{held: make(chan struct{}), release: make(chan struct{}), before: true}
		h.st.topGate.Store(read)
		h.apply("cup", "bob", 7, true)
		<-read.held
		skew.Add(int64(b.FinalAt().Sub(clock())))
		if _, err := h.st.Store.(rank.Streams).MarkStream(t.Context(), "cup"); err != nil {
			t.Fatal(err)
		}
		// The job tells the final before it delivers; its final frame's
		// read waits, and a subscriber joins.
		final := &gate{held: make(chan struct{}), release: make(chan struct{}), before: true}
		h.st.topGate.Store(final)
		close(read.release)
		<-final.held
		late := newReader(t)
		if _, err := h.e.SubscribeStream(t.Context(), late.o, Spec{Board: "cup", Top: 3}, nil); err != nil {
			t.Fatal(err)
		}
		late.drain()
		close(final.release)
		h.settle()
		h.settle()
		for who, r := range map[string]*reader{"watcher": watch, "joined": late} {
			r.drain()
			if m := r.top["cup"]; !m.Final || len(m.Entries) != 2 || m.Entries[0].Member != "bob" {
				t.Errorf("%s: last top frame %+v, want the final one", who, m)
			}
			n := 0
			for _, f := range r.all {
				var m proto.Top
				if json.Unmarshal(f, &m) == nil && m.Type == proto.TypeTop && m.Final {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s: %d final top frames, want 1", who, n)
			}
		}
	})
}

// TestBoardFinalReadFails (R19): when the read of a board's final frame
// fails as the board goes final, the board's next read, once the store
// answers, brings it to every top subscriber.
func TestBoardFinalReadFails(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h, b, watch := endingBoard(t, nil)
		h.st.fail.Store(true)
		time.Sleep(time.Until(b.FinalAt()))
		h.settle()
		watch.drain()
		if fs := watch.finals["cup"]; len(fs) != 0 {
			t.Fatalf("final frames %+v with the store failing", fs)
		}
		h.st.fail.Store(false)
		h.settle()
		watch.drain()
		if fs, m := watch.finals["cup"], watch.top["cup"]; len(fs) != 1 || !m.Final || len(m.Entries) != 1 || m.Entries[0].Member != "ann" {
			t.Errorf("final frames %+v, last top frame %+v; want the final one", fs, m)
		}
	})
}

// endingBoard is a harness on clock with the board "cup" (no reset) ending
// in 2 s, grace 1 s, ann scored 5, and a subscriber of its top 3.
func endingBoard(t *testing.T, clock func() time.Time) (*harness, rank.Board, *reader) {
	h := newHarness(t, Config{Refresh: -1}, clock)
	b := rank.DefaultBoard("cup")
	b.EndsAt = rank.At(time.Now().Add(2 * time.Second))
	b.Grace = rank.Duration(time.Second)
	h.board(b)
	h.apply("cup", "ann", 5, true)
	watch := newReader(t)
	h.subscribe(watch, "cup", 3, "", 0)
	h.settle()
	return h, b, watch
}
