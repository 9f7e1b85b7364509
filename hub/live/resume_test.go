package live

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// resume subscribes r as a resume of a client whose greatest seq of the
// board was since (docs/protocol.md §15), and lets the engine settle.
func (h *harness) resume(r *reader, board string, top int, member string, around int, since int64) {
	h.t.Helper()
	sp := Spec{Board: board, Top: top, Member: member, Around: around, Resume: true, Since: since}
	if err := h.e.SubscribeSpec(context.Background(), r.o, sp); err != nil {
		h.t.Fatal(err)
	}
	h.settle()
	r.drain()
}

// latest is the greatest seq r holds of board.
func latest(r *reader, board string) int64 { return max(r.top[board].Seq, r.view[board].Seq) }

// TestResume: each kind answers whether anything of its own changed after
// the client's seq. Unchanged frames are not sent again; a frame a change
// after the seq touched is, from memory; a client that saw a newer seq than
// this node holds gets the next read's frame; a client older than this
// node's watch gets everything; a rename counts as a change.
func TestResume(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h, r := watched(t, Config{Refresh: -1})
		r.drain()
		n := latest(r, "g")

		same := newReader(t)
		top0, ranks0 := h.reads()
		h.resume(same, "g", 3, member(50), 2, n)
		if _, ok := same.top["g"]; ok || same.n != 1 {
			t.Errorf("unchanged resume: %d frames, top %v; want the board frame alone", same.n, same.top["g"])
		}
		if top, ranks := h.reads(); top != top0 || ranks != ranks0 {
			t.Errorf("unchanged resume read the store: top +%d ranks +%d", top-top0, ranks-ranks0)
		}

		// Inside m050's window, far below the top 3: the view changed, the
		// top did not.
		h.apply("g", member(52), 10, true)
		h.settle()
		viewOnly := newReader(t)
		h.resume(viewOnly, "g", 3, member(50), 2, n)
		if _, ok := viewOnly.top["g"]; ok {
			t.Errorf("resume after a view change got a top frame")
		}
		h.check(viewOnly, "g", 0, member(50), 2)

		// Before this node watched the board: it cannot tell, so all.
		old := newReader(t)
		h.resume(old, "g", 3, member(50), 2, 0)
		h.check(old, "g", 3, member(50), 2)

		// A client that saw a seq this node has not read (no change event
		// yet): nothing if that is the store's latest, else the next
		// read's frame, never the older one held here.
		ahead := h.apply("g", member(90), 1, false).Seq
		quiet := newReader(t)
		h.resume(quiet, "g", 3, "", 0, ahead)
		if _, ok := quiet.top["g"]; ok {
			t.Errorf("resume from the store's latest seq %d got a top frame", ahead)
		}
		h.apply("g", member(0), 5, false)
		behind := newReader(t)
		h.resume(behind, "g", 3, "", 0, ahead)
		if f, ok := behind.top["g"]; !ok || f.Seq <= ahead {
			t.Errorf("resume from seq %d: top frame %+v, want one read after it", ahead, f)
		}
		h.check(behind, "g", 3, "", 0)

		// A rename shown in the top changes it, with no seq.
		r.drain()
		n = latest(r, "g")
		h.e.ProfilesChanged([]string{member(0)})
		h.settle()
		renamed := newReader(t)
		h.resume(renamed, "g", 3, "", 0, n)
		if _, ok := renamed.top["g"]; !ok {
			t.Error("resume after a rename in the top got no top frame")
		}
	})
}

// TestSubscribeStorm (R33): subscribers arriving at a board this node
// does not hold share the board's next read, however many; once it holds
// the frames, more cost no read at all, and a busy board's stale frames
// are handed out at once, the scheduled read bringing what changed.
func TestSubscribeStorm(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		seedBoard(h)
		top0, ranks0 := h.reads()
		first := make([]*reader, 50)
		for i := range first {
			first[i] = newReader(t)
			if err := h.e.Subscribe(context.Background(), first[i].o, "g", 10, member(7), 2); err != nil {
				t.Fatal(err)
			}
		}
		h.settle()
		if top, ranks := h.reads(); top-top0 != 1 || ranks-ranks0 != 1 {
			t.Errorf("50 subscribes of a board not held: top +%d ranks +%d reads, want 1 and 1", top-top0, ranks-ranks0)
		}
		for _, r := range first {
			h.check(r, "g", 10, member(7), 2)
		}

		top0, ranks0 = h.reads()
		more := make([]*reader, 50)
		for i := range more {
			more[i] = newReader(t)
			h.subscribe(more[i], "g", 10, member(7), 2)
			h.check(more[i], "g", 10, member(7), 2)
		}
		if top, ranks := h.reads(); top != top0 || ranks != ranks0 {
			t.Errorf("50 subscribes of held frames: top +%d ranks +%d reads, want none", top-top0, ranks-ranks0)
		}

		// Busy: a change marks the frames; the next subscriber gets the
		// held ones at once and the scheduled read's after.
		h.apply("g", member(50), 9000, true) // overtakes m007's window and enters the top 10
		late := newReader(t)
		if err := h.e.Subscribe(context.Background(), late.o, "g", 10, member(7), 2); err != nil {
			t.Fatal(err)
		}
		late.drain()
		if _, ok := late.top["g"]; !ok || late.view["g"].Seq == 0 {
			t.Fatal("a subscriber of held frames waited for a read")
		}
		h.settle()
		h.check(late, "g", 10, member(7), 2)
		if top, ranks := h.reads(); top != top0+1 || ranks != ranks0+1 {
			t.Errorf("a change and a subscribe: top +%d ranks +%d reads, want the scheduled 1 and 1", top-top0, ranks-ranks0)
		}
	})
}

// TestResumeFinalOnce (§15, R34): a resume that joins just as a period
// becomes final, its missed finals taken from a stream that recorded the
// period's end before this node's tick told it, gets that period's final
// frame once and first, not again from the transition the tick then tells;
// a subscriber that stayed gets it live, once.
func TestResumeFinalOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// The store's clock is moved without moving the bubble's: the
		// engine does not tick between the move and the resume.
		var skew atomic.Int64
		clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		h := newHarness(t, Config{Refresh: -1}, clock)
		time.Sleep(10 * time.Second) // past the grace of the period before the bubble's start
		b := rank.DefaultBoard("rf")
		b.Reset = "1m"
		h.board(b)
		join := func(r *reader, since *proto.Since) Joined {
			t.Helper()
			j, err := h.e.SubscribeStream(context.Background(), r.o, Spec{Board: "rf", Top: 3}, since)
			if err != nil {
				t.Fatal(err)
			}
			return j
		}
		stay := newReader(t) // keeps the board watched: its phase is told here
		join(stay, nil)
		h.apply("rf", member(1), 5, true)
		h.apply("rf", member(2), 7, true)
		away := newReader(t)
		j := join(away, nil)
		h.settle()
		away.drain()
		since := &proto.Since{Epoch: j.Epoch, Seq: latest(away, "rf")}
		h.e.Drop(away.o)

		p0 := rank.PeriodAt(b, clock())
		skew.Add(int64(p0.End.Sub(clock()) + time.Second))
		back := newReader(t)
		back.boards["rf"] = away.boards["rf"] // the client's, for drain's order check
		if j := join(back, since); !j.Resumed {
			t.Fatalf("resume across the period's end: %+v, want resumed", j)
		}
		// The missed final goes first, before the board frame.
		fs, _ := back.o.Take(time.Now())
		var first proto.Top
		if len(fs) == 0 || json.Unmarshal(fs[0], &first) != nil || !first.Final || first.Period != p0.Index || len(first.Entries) != 2 {
			t.Fatalf("first frames of the resume: %q, want period %d's final", fs, p0.Index)
		}
		for _, f := range fs[1:] {
			if bytes.Contains(f, []byte(`"final":true`)) {
				t.Errorf("the missed final came twice at once: %s", f)
			}
		}
		for range 3 {
			h.settle()
			back.drain()
			stay.drain()
		}
		if fs := back.finals["rf"]; len(fs) != 0 {
			t.Errorf("resumed: %d more final frames %+v after the missed one", len(fs), fs)
		}
		if fs := stay.finals["rf"]; len(fs) != 1 || fs[0].Period != p0.Index || len(fs[0].Entries) != 2 {
			t.Errorf("stayed: final frames %+v, want period %d's once", fs, p0.Index)
		}

		// The next period's final comes live to the resumed subscription.
		p1 := rank.PeriodAt(b, clock())
		time.Sleep(p1.End.Sub(clock()) + time.Second)
		h.settle()
		back.drain()
		if fs := back.finals["rf"]; len(fs) != 1 || fs[0].Period != p1.Index {
			t.Errorf("resumed: final frames %+v after period %d ended, want its final", fs, p1.Index)
		}
		if back.o.missed != nil {
			t.Errorf("resumed: the Outbox still holds %v once a later final came", back.o.missed)
		}
	})
}
