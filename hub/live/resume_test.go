package live

import (
	"context"
	"encoding/json"
	"slices"
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

// TestResumeAfterMissed: a board whose changes may not have reached this
// node (Missed: its bus subscription was just confirmed, or a sender
// dropped some) is re-read, and a resume of it compares as before: nothing
// when the re-read shows what the client holds, the re-read's frames when
// a change was missed. A Resync (what was missed may have had no seq)
// counts as a change after every seq.
func TestResumeAfterMissed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h, r := watched(t, Config{Refresh: -1})
		r.drain()
		n := latest(r, "g")

		h.e.Missed("g")
		h.settle()
		same := newReader(t)
		h.resume(same, "g", 3, member(50), 2, n)
		if _, ok := same.top["g"]; ok || same.n != 1 {
			t.Errorf("resume after a re-read that found nothing new: %d frames, top %v; want the board frame alone", same.n, same.top["g"])
		}

		// A change this node never heard of, in the top and in m050's
		// window: the re-read brings it, live and on a resume.
		missed := h.apply("g", member(51), 10000, false).Seq
		h.e.Missed("g")
		h.settle()
		r.drain()
		if f := r.top["g"]; f.Seq < missed {
			t.Errorf("subscriber's top frame after the re-read: seq %d, want ≥ %d", f.Seq, missed)
		}
		behind := newReader(t)
		h.resume(behind, "g", 3, member(50), 2, n)
		h.check(behind, "g", 3, member(50), 2)

		n = latest(r, "g")
		h.e.Resync("g")
		h.settle()
		loose := newReader(t)
		h.resume(loose, "g", 3, "", 0, n)
		if _, ok := loose.top["g"]; !ok {
			t.Error("resume after a Resync got no top frame")
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

// finalRace is a board with one-minute periods, "rf", watched on the node
// by stay (top 3), and a client that left it in period p0 holding since.
// The store's clock moves with skew, the bubble's does not: the engine
// does not tick between a move and what the test does next.
type finalRace struct {
	t     *testing.T
	h     *harness
	skew  atomic.Int64
	b     rank.Board
	p0    rank.Period
	stay  *reader
	since *proto.Since
	told  []proto.Board // the client's board frames
}

func newFinalRace(t *testing.T) *finalRace {
	f := &finalRace{t: t}
	f.h = newHarness(t, Config{Refresh: -1}, f.clock)
	time.Sleep(10 * time.Second) // past the grace of the period before the bubble's start
	f.b = rank.DefaultBoard("rf")
	f.b.Reset = "1m"
	f.h.board(f.b)
	f.stay = newReader(t) // keeps the board watched: its phase is told here
	f.join(t.Context(), f.stay, nil)
	f.h.apply("rf", member(1), 5, true)
	f.h.apply("rf", member(2), 7, true)
	away := newReader(t)
	j := f.join(t.Context(), away, nil)
	f.h.settle()
	away.drain()
	f.since = &proto.Since{Epoch: j.Epoch, Seq: latest(away, "rf")}
	f.told = away.boards["rf"]
	f.h.e.Drop(away.o)
	f.p0 = rank.PeriodAt(f.b, f.clock())
	return f
}

func (f *finalRace) clock() time.Time { return time.Now().Add(time.Duration(f.skew.Load())) }

// endP0 moves the store's clock past p0's end, when p0 becomes final (no
// grace).
func (f *finalRace) endP0() { f.skew.Add(int64(f.p0.End.Sub(f.clock()) + time.Second)) }

func (f *finalRace) join(ctx context.Context, r *reader, since *proto.Since) Joined {
	f.t.Helper()
	j, err := f.h.e.SubscribeStream(ctx, r.o, Spec{Board: "rf", Top: 3}, since)
	if err != nil {
		f.t.Fatal(err)
	}
	return j
}

// back is r (nil: a new reader) as the client's reader coming back.
func (f *finalRace) back(r *reader) *reader {
	if r == nil {
		r = newReader(f.t)
	}
	r.boards["rf"] = slices.Clone(f.told) // for drain's order check
	return r
}

// resume resumes the client on r: resumed, as the epoch is the board's.
func (f *finalRace) resume(ctx context.Context, r *reader) {
	f.t.Helper()
	if j := f.join(ctx, r, f.since); !j.Resumed {
		f.t.Fatalf("resume across p0's end: %+v, want resumed", j)
	}
}

// settle lets the engine tick a few times, draining the readers.
func (f *finalRace) settle(rs ...*reader) {
	for range 3 {
		f.h.settle()
		f.stay.drain()
		for _, r := range rs {
			r.drain()
		}
	}
}

// finalOnce reports unless r got p0's final frame exactly once, and no
// other (p0's standings: its two members).
func (f *finalRace) finalOnce(who string, r *reader) {
	f.t.Helper()
	n := 0
	for _, fr := range r.finals["rf"] {
		if fr.Period == f.p0.Index && len(fr.Entries) == 2 {
			n++
		}
	}
	if n != 1 || len(r.finals["rf"]) != 1 {
		f.t.Errorf("%s: final frames %+v, want period %d's once", who, r.finals["rf"], f.p0.Index)
	}
}

// TestResumeFinalOnce (§15, R34): a resume that joins just as a period
// becomes final, its missed finals taken from a stream that recorded the
// period's end before this node's tick told it, gets that period's final
// frame once and first, not again from the transition the tick then tells;
// a subscriber that stayed gets it live, once.
func TestResumeFinalOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFinalRace(t)
		f.endP0()
		back := f.back(nil)
		f.resume(t.Context(), back)
		back.drain()
		var first proto.Top
		if fs := back.all; len(fs) == 0 || json.Unmarshal(fs[0], &first) != nil || !first.Final || first.Period != f.p0.Index {
			t.Fatalf("first frames of the resume: %q, want period %d's final", fs, f.p0.Index)
		}
		f.settle(back)
		f.finalOnce("resumed", back)
		f.finalOnce("stayed", f.stay)

		// The next period's final comes live to the resumed subscription.
		p1 := rank.PeriodAt(f.b, f.clock())
		time.Sleep(p1.End.Sub(f.clock()) + time.Second)
		f.settle(back)
		if fs := back.finals["rf"]; len(fs) != 2 || fs[1].Period != p1.Index {
			t.Errorf("resumed: final frames %+v after period %d ended, want its final", fs, p1.Index)
		}
	})
}

// TestResumeBoardOnce (§15, R19): a subscriber that joins as a period
// ends, before this node's tick told it, is told the next period's board
// frame once, whether it resumes or subscribes afresh: not again when the
// tick tells the others.
func TestResumeBoardOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFinalRace(t)
		f.endP0()
		back, fresh := f.back(nil), newReader(t)
		f.resume(t.Context(), back)
		f.join(t.Context(), fresh, nil)
		f.settle(back, fresh)
		p1 := f.p0.Index + 1
		for who, r := range map[string]*reader{"resumed": back, "fresh": fresh, "stayed": f.stay} {
			n := 0
			for _, b := range r.boards["rf"] {
				if b.Period == p1 {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s: %d board frames of period %d, want 1: %+v", who, n, p1, r.boards["rf"])
			}
		}
	})
}

// TestResumeOvertaken (§15): a resume whose read of the board's stream
// came before the period's end, and whose subscription registers only
// after this node's tick told that period final to the board's
// subscribers, still gets the period's final frame, once.
func TestResumeOvertaken(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFinalRace(t)
		back := f.back(nil)
		// The resume's second clock read is SubscribeSpec's, after the
		// stream was read and before the subscription registers.
		ctx, g := holdClock(t.Context(), 2)
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.resume(ctx, back)
		}()
		<-g.held
		f.endP0()
		f.settle()
		f.finalOnce("stayed", f.stay) // the tick told it
		close(g.release)
		<-done
		f.settle(back)
		f.finalOnce("resumed", back)
		if bs := back.boards["rf"]; len(bs) == 0 || bs[len(bs)-1].Period != f.p0.Index+1 {
			t.Errorf("resumed: board frames %+v, want period %d's last", bs, f.p0.Index+1)
		}
	})
}

// TestResumeNoStaleTop (§15, R19): the final frame of a period is the last
// top frame of it a subscriber gets. A resume handed a period's missed
// final is not sent the period's last live frame after it: neither the one
// this node holds until its next read, nor one a read in flight brings. Its
// first top frame is the next period's.
func TestResumeNoStaleTop(t *testing.T) {
	t.Parallel()
	for _, inFlight := range []bool{false, true} {
		t.Run(map[bool]string{false: "held", true: "read"}[inFlight], func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { noStaleTop(t, inFlight) })
		})
	}
}

func noStaleTop(t *testing.T, inFlight bool) {
	f := newFinalRace(t)
	g := &gate{held: make(chan struct{}), release: make(chan struct{})}
	if inFlight {
		f.h.st.topGate.Store(g) // the read of the change below, once it read p0
	}
	f.h.apply("rf", member(3), 9, true) // after since: the top changed
	if inFlight {
		<-g.held
	} else {
		f.settle()
	}
	f.endP0()
	back := f.back(newEagerReader(t)) // takes what the resume queues at once
	f.resume(t.Context(), back)
	if inFlight {
		close(g.release)
	}
	f.settle(back)
	back.mu.Lock()
	defer back.mu.Unlock()
	var final bool
	for _, fr := range back.all {
		var m proto.Top
		if json.Unmarshal(fr, &m) != nil || m.Type != proto.TypeTop {
			continue
		}
		switch {
		case m.Final:
			final = true
		case !final:
			t.Errorf("resumed: a top frame before the missed final: %s", fr)
		case len(m.Entries) != 0:
			t.Errorf("resumed: a top frame of the ended period after its final: %s", fr)
		}
	}
	if m, ok := back.top["rf"]; !ok || m.Final || len(m.Entries) != 0 {
		t.Errorf("resumed: last top frame %+v, want the next period's (empty)", m)
	}
}

// TestJoinToldFirst (§15, R19): a subscribe whose read of the board's
// stream records a transition this node has not told yet does not let a
// read in flight hand the board's subscribers a frame from after it first:
// they are told the transition (the next period's board frame, the ended
// period's final) before the next period's top frame, so a client never
// holds a seq newer than a transition it was not told.
func TestJoinToldFirst(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFinalRace(t)
		w := newEagerReader(t) // no frame coalesced away before it is written
		f.join(t.Context(), w, nil)
		f.settle()
		g := &gate{held: make(chan struct{}), release: make(chan struct{}), before: true}
		f.h.st.topGate.Store(g) // the read of the change below, before it reads
		f.h.apply("rf", member(3), 9, true)
		<-g.held
		f.endP0()
		f.join(t.Context(), newReader(t), nil) // records p0's end
		close(g.release)
		f.settle()
		w.mu.Lock()
		defer w.mu.Unlock()
		var told, final bool
		for _, fr := range w.all {
			var m struct {
				Type, State string
				Period      int64
				Final       bool
				Entries     []proto.Entry
			}
			if err := json.Unmarshal(fr, &m); err != nil {
				t.Fatal(err)
			}
			switch {
			case m.Type == proto.TypeBoard && m.Period == f.p0.Index+1:
				told = true
			case m.Type == proto.TypeTop && m.Final:
				final = true
			case m.Type == proto.TypeTop && len(m.Entries) == 0 && (!told || !final):
				t.Errorf("watcher: the next period's top frame before its board frame (%v) and the final (%v): %s", told, final, fr)
			}
		}
		if !told || !final {
			t.Errorf("watcher: board frame of the next period %v, final %v; want both", told, final)
		}
	})
}
