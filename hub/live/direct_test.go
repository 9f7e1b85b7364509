package live

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// fakeDirect is a DirectWriter whose writer is idle when idle is set; it
// records the frames written and checks that each TryAcquire that
// succeeded is followed by exactly one WriteDirect.
type fakeDirect struct {
	t        *testing.T
	idle     bool
	held     bool
	acquires int
	frames   [][]byte
}

func (d *fakeDirect) TryAcquire() bool {
	d.acquires++
	if d.held {
		d.t.Error("TryAcquire while the writer is already held")
	}
	if !d.idle {
		return false
	}
	d.held = true
	return true
}

func (d *fakeDirect) WriteDirect(f []byte) {
	if !d.held {
		d.t.Error("WriteDirect without TryAcquire")
	}
	d.held = false
	d.frames = append(d.frames, f)
}

func frameOf(i int64) []byte { return []byte(strconv.FormatInt(i, 10)) }

func ready(o *Outbox) bool {
	select {
	case <-o.Ready():
		return true
	default:
		return false
	}
}

// TestOutboxDirectPath: which frames go direct. The initial frame never
// does (it must follow its `subscribed`); a due frame with nothing else
// waiting does; one inside its interval, one behind an event, one beside
// another key's pending frame and one offered while the writer is busy go
// through the slot and Ready, exactly as before; a frame older than one
// written directly is refused.
func TestOutboxDirectPath(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		d := &fakeDirect{t: t, idle: true}
		o := NewOutbox(directIV, nil)
		o.SetDirect(d)
		gen := o.open(slotKey{"b", topSlot})
		directAlone(t, o, d, gen)
		directBehind(t, o, d, gen)
		if d.held {
			t.Fatal("the writer is left held")
		}
	})
}

const directIV = 100 * time.Millisecond

// directAlone is TestOutboxDirectPath's frames with nothing else pending:
// the initial one, a due one, one inside its interval, a stale one.
func directAlone(t *testing.T, o *Outbox, d *fakeDirect, gen uint64) {
	const iv = directIV
	top := slotKey{"b", topSlot}
	// The initial frame: the slot and Ready, never direct.
	o.offer(top, gen, 1, frameOf(1))
	if len(d.frames) != 0 || o.pending() != 1 || !ready(o) {
		t.Fatalf("initial frame: direct %d, pending %d; want it in its slot", len(d.frames), o.pending())
	}
	if fs, _ := o.Take(time.Now()); len(fs) != 1 {
		t.Fatalf("Take after the initial frame: %d frames", len(fs))
	}
	// Due at once (the initial frame does not count toward the
	// interval): direct, nothing left in the slot, no wake-up.
	o.offer(top, gen, 2, frameOf(2))
	if len(d.frames) != 1 || string(d.frames[0]) != "2" || o.pending() != 0 || ready(o) {
		t.Fatalf("due frame: direct %q, pending %d; want it written directly", d.frames, o.pending())
	}
	if o.floor(top) != 2 {
		t.Fatalf("floor %d after the direct frame, want 2", o.floor(top))
	}
	if del, _ := o.Stats(); del != 2 {
		t.Fatalf("delivered %d, want 2 (the direct frame counts)", del)
	}
	// Inside the interval: held in the slot (R7) and released by Take
	// once due.
	time.Sleep(iv / 2)
	o.offer(top, gen, 3, frameOf(3))
	if len(d.frames) != 1 || o.pending() != 1 {
		t.Fatalf("frame inside the interval went direct")
	}
	if fs, retry := o.Take(time.Now()); len(fs) != 0 || retry != iv/2 {
		t.Fatalf("Take inside the interval: %q, retry %v; want nothing, retry %v", fs, retry, iv/2)
	}
	time.Sleep(iv / 2)
	if fs, _ := o.Take(time.Now()); len(fs) != 1 || string(fs[0]) != "3" {
		t.Fatalf("Take once due: %q", fs)
	}
	// A stale frame (seq below what was written) is refused.
	time.Sleep(iv)
	if o.offer(top, gen, 2, frameOf(2)) || len(d.frames) != 1 {
		t.Fatalf("a frame older than the last one written was accepted")
	}
}

// directBehind is TestOutboxDirectPath's frames that must not go direct:
// behind an event, beside another key's frame, with the writer busy, and a
// re-subscription's first.
func directBehind(t *testing.T, o *Outbox, d *fakeDirect, gen uint64) {
	const iv = directIV
	top, view := slotKey{"b", topSlot}, slotKey{"b", viewSlot}
	// An event waiting: the frame must follow it, through Take.
	o.event([]byte("event"))
	ready(o)
	o.offer(top, gen, 4, frameOf(4))
	if len(d.frames) != 1 {
		t.Fatalf("a frame went direct ahead of a waiting event")
	}
	if fs, _ := o.Take(time.Now()); len(fs) != 2 || string(fs[0]) != "event" || string(fs[1]) != "4" {
		t.Fatalf("Take with an event: %q", fs)
	}
	// Another key's frame pending: Take returns both, in order.
	vgen := o.open(view)
	o.offer(view, vgen, 1, []byte("v1")) // initial: stays
	time.Sleep(iv)
	o.offer(top, gen, 5, frameOf(5))
	if len(d.frames) != 1 || o.pending() != 2 {
		t.Fatalf("a frame went direct beside another key's pending frame")
	}
	if fs, _ := o.Take(time.Now()); len(fs) != 2 {
		t.Fatalf("Take: %q", fs)
	}
	// The writer busy (TryAcquire fails): the usual way, Ready included.
	time.Sleep(iv)
	d.idle = false
	ready(o)
	o.offer(top, gen, 6, frameOf(6))
	if len(d.frames) != 1 || o.pending() != 1 || !ready(o) {
		t.Fatalf("busy writer: direct %d, pending %d; want the slot and a wake-up", len(d.frames), o.pending())
	}
	if fs, _ := o.Take(time.Now()); len(fs) != 1 || string(fs[0]) != "6" {
		t.Fatalf("Take after a failed TryAcquire: %q", fs)
	}
	// A re-subscription's first frame is initial again: not direct.
	d.idle = true
	time.Sleep(iv)
	gen = o.open(top)
	o.offer(top, gen, 7, frameOf(7))
	if len(d.frames) != 1 || o.pending() != 1 {
		t.Fatalf("a re-subscription's initial frame went direct")
	}
}

// TestOutboxDirectBookkeeping: an outbox that writes frames directly ends
// every step in exactly the state of one whose writer took the same frame
// with TakeAppend at the same moment (sent seq, the throttle's last-sent
// time, delivered), over random offers with random schedule points, so the
// interval (R7) and the seq floor hold the same whichever path a frame took.
func TestOutboxDirectBookkeeping(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const iv = 100 * time.Millisecond
		rng := rand.New(rand.NewPCG(1, 2))
		d := &fakeDirect{t: t, idle: true}
		direct, plain := NewOutbox(iv, nil), NewOutbox(iv, nil)
		direct.SetDirect(d)
		k := slotKey{"b", topSlot}
		dgen, pgen := direct.open(k), plain.open(k)
		var lastSent time.Time
		written := 0
		for seq := int64(1); seq <= 400; seq++ {
			time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
			now := time.Now()
			at := now.Add(-time.Duration(rng.IntN(30)) * time.Millisecond) // the read's schedule point
			if rng.IntN(4) == 0 {
				at = time.Time{} // a Subscribe's own frame
			}
			before := len(d.frames)
			direct.offerAt(k, dgen, seq, frameOf(seq), at)
			plain.offerAt(k, pgen, seq, frameOf(seq), at)
			if len(d.frames) > before {
				written++
				// The plain outbox's writer takes the same frame now.
				fs, _ := plain.Take(now)
				if len(fs) != 1 || string(fs[0]) != string(d.frames[len(d.frames)-1]) {
					t.Fatalf("seq %d went direct, but Take at the same moment returns %q", seq, fs)
				}
			} else if rng.IntN(2) == 0 {
				// Both writers wake (a timer, a Ready) and take what is due.
				fd, _ := direct.Take(now)
				fp, _ := plain.Take(now)
				if len(fd) != len(fp) || (len(fd) == 1 && string(fd[0]) != string(fp[0])) {
					t.Fatalf("seq %d: Take differs: direct outbox %q, plain %q", seq, fd, fp)
				}
			}
			ds, ps := direct.slot(k), plain.slot(k)
			if ds.sentSeq != ps.sentSeq || !ds.lastSent.Equal(ps.lastSent) || ds.sent != ps.sent || ds.initial != ps.initial ||
				(ds.frame == nil) != (ps.frame == nil) || ds.seq != ps.seq {
				t.Fatalf("seq %d: slots differ:\ndirect %+v\nplain  %+v", seq, *ds, *ps)
			}
			// The throttle counts from when a frame became eligible (its
			// schedule point), as Take's does: two frames that count toward
			// the interval, direct or taken, are at least an interval apart
			// on that clock (R7).
			if el := ds.lastSent; ds.sent && !el.Equal(lastSent) {
				if !lastSent.IsZero() && el.Sub(lastSent) < iv {
					t.Fatalf("seq %d: frames eligible %v apart, interval %v", seq, el.Sub(lastSent), iv)
				}
				lastSent = el
			}
			dd, _ := direct.Stats()
			pd, _ := plain.Stats()
			if dd != pd {
				t.Fatalf("seq %d: delivered %d direct, %d plain", seq, dd, pd)
			}
		}
		if written < 50 {
			t.Fatalf("only %d of 400 frames went direct: the path is not exercised", written)
		}
	})
}

// TestDeliverSplit: a delivery to more targets than one goroutine takes is
// split across goroutines, and still every target gets every delivery's
// frame, the deliveries in order (a top frame, then a view frame, to each).
func TestDeliverSplit(t *testing.T) {
	t.Parallel()
	const n = 4*deliverChunk + 7
	top, view := slotKey{"b", topSlot}, slotKey{"b", viewSlot}
	var tops, views []target
	var boxes []*Outbox
	for range n {
		o := NewOutbox(0, nil)
		tops = append(tops, target{o, o.open(top)})
		views = append(views, target{o, o.open(view)})
		boxes = append(boxes, o)
	}
	deliver([]delivery{
		{key: top, seq: 1, frame: []byte("top"), to: tops},
		{key: view, seq: 1, frame: []byte("view"), to: views},
	})
	for i, o := range boxes {
		fs, _ := o.Take(time.Now())
		if len(fs) != 2 || string(fs[0]) != "top" || string(fs[1]) != "view" {
			t.Fatalf("outbox %d: %q, want top then view", i, fs)
		}
	}
}

// TestOutboxLastSlot: the slot offerAt remembers is forgotten with its
// key: after a close, an offer for that key is refused, and a reopened
// key's slot (a new generation) is the one offers fill.
func TestOutboxLastSlot(t *testing.T) {
	t.Parallel()
	o := NewOutbox(0, nil)
	k := slotKey{"b", topSlot}
	gen := o.open(k)
	if !o.offer(k, gen, 1, frameOf(1)) {
		t.Fatal("offer to an open slot refused")
	}
	o.Take(time.Now())
	o.close(k)
	if o.offer(k, gen, 2, frameOf(2)) || o.pending() != 0 {
		t.Fatal("an offer for a closed key was accepted")
	}
	gen2 := o.open(k)
	if o.offer(k, gen, 3, frameOf(3)) {
		t.Fatal("an offer of the closed subscription's generation was accepted")
	}
	if !o.offer(k, gen2, 3, frameOf(3)) || o.pending() != 1 {
		t.Fatal("an offer to the reopened key was refused")
	}
	if fs, _ := o.Take(time.Now()); len(fs) != 1 || string(fs[0]) != "3" {
		t.Fatalf("Take: %q", fs)
	}
}
