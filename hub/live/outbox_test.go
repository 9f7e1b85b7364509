package live

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// TestOutboxThrottle floods one key with frames much faster than the
// interval while a writer loop drains the Outbox the way the hub's writer
// does: at most one frame per interval per key, seq never decreases, and the
// last frame always arrives.
func TestOutboxThrottle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		interval time.Duration
		every    time.Duration // gap between offers
		n        int
	}{
		{"burst", 100 * time.Millisecond, time.Millisecond, 1000},
		{"steady", 100 * time.Millisecond, 30 * time.Millisecond, 50},
		{"slower than interval", 50 * time.Millisecond, 70 * time.Millisecond, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				o := NewOutbox(tc.interval, nil)
				k := slotKey{"b", topSlot}
				gen := o.open(k)
				type got struct {
					at  time.Time
					seq int64
				}
				var frames []got
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { // the connection's writer
					defer close(done)
					writeLoop(ctx, o, func() time.Duration {
						fs, retry := o.Take(time.Now())
						for _, f := range fs {
							seq, _ := strconv.ParseInt(string(f), 10, 64)
							frames = append(frames, got{time.Now(), seq})
						}
						return retry
					})
				}()
				for i := 1; i <= tc.n; i++ {
					o.offer(k, gen, int64(i), []byte(strconv.Itoa(i)))
					time.Sleep(tc.every)
				}
				time.Sleep(2 * tc.interval)
				synctest.Wait()
				cancel()
				<-done

				if len(frames) == 0 {
					t.Fatal("no frame delivered")
				}
				// Frame 0 is the one sent at once after subscribing: it
				// does not count toward the interval (R7, v1.1), so frame 1
				// may follow it at once; from frame 1 on the interval holds.
				if tc.name == "burst" && (len(frames) < 2 || frames[1].at.Sub(frames[0].at) >= tc.interval) {
					t.Errorf("burst: the frame after the first waited an interval; the first must not count (R7 v1.1): %v", frames[:min(2, len(frames))])
				}
				for i := 1; i < len(frames); i++ {
					if gap := frames[i].at.Sub(frames[i-1].at); i >= 2 && gap < tc.interval {
						t.Errorf("frames %d and %d only %v apart, interval %v", i-1, i, gap, tc.interval)
					}
					if frames[i].seq < frames[i-1].seq {
						t.Errorf("seq went down: %d after %d", frames[i].seq, frames[i-1].seq)
					}
				}
				if last := frames[len(frames)-1].seq; last != int64(tc.n) {
					t.Errorf("last frame seq %d, want %d", last, tc.n)
				}
				span := time.Duration(tc.n) * tc.every
				if max := int(span/tc.interval) + 3; len(frames) > max {
					t.Errorf("%d frames in %v at interval %v: more than %d", len(frames), span, tc.interval, max)
				}
				d, c := o.Stats()
				if d != uint64(len(frames)) || d+c != uint64(tc.n) {
					t.Errorf("stats delivered %d coalesced %d; want %d delivered and %d in all", d, c, len(frames), tc.n)
				}
			})
		})
	}
}

func TestOutboxOffer(t *testing.T) {
	t.Parallel()
	start := time.Unix(1000, 0)
	top, vw := slotKey{"b", topSlot}, slotKey{"b", viewSlot}
	o := NewOutbox(100*time.Millisecond, nil)
	g1 := o.open(top)
	gv := o.open(vw)

	if !o.offer(top, g1, 5, []byte("t5")) || !o.offer(vw, gv, 5, []byte("v5")) {
		t.Fatal("fresh offers refused")
	}
	if o.offer(top, g1, 4, []byte("t4")) {
		t.Error("an older seq replaced a pending frame")
	}
	if o.offer(top, g1+100, 6, []byte("x")) {
		t.Error("a frame of another subscription generation was accepted")
	}
	if o.offer(slotKey{"other", topSlot}, g1, 6, []byte("x")) {
		t.Error("a frame for a key never opened was accepted")
	}
	select {
	case <-o.Ready():
	default:
		t.Fatal("Ready not signalled")
	}
	fs, retry := o.Take(start)
	if len(fs) != 2 || string(fs[0]) != "t5" || string(fs[1]) != "v5" || retry != 0 {
		t.Fatalf("Take = %q, %v; want [t5 v5] in subscription order, 0 (the first frames do not count toward the interval, R7 v1.1)", fs, retry)
	}
	if fs, _ := o.Take(start); len(fs) != 0 {
		t.Fatalf("second Take returned %q", fs)
	}

	// The next frame goes at once (the first did not count) and starts the
	// interval; a newer offer replaced an older one before the take.
	o.offer(top, g1, 6, []byte("t6"))
	o.offer(top, g1, 7, []byte("t7"))
	fs, retry = o.Take(start.Add(30 * time.Millisecond))
	if len(fs) != 1 || string(fs[0]) != "t7" || retry != 0 {
		t.Fatalf("Take after the first frame = %q, %v; want [t7], 0 (nothing held: no timer)", fs, retry)
	}

	// Within the interval: held back, and a newer frame replaces it.
	o.offer(top, g1, 8, []byte("t8"))
	o.offer(top, g1, 9, []byte("t9"))
	fs, retry = o.Take(start.Add(60 * time.Millisecond))
	if len(fs) != 0 || retry != 70*time.Millisecond {
		t.Fatalf("Take inside the interval = %q, %v; want nothing, 70ms", fs, retry)
	}
	fs, _ = o.Take(start.Add(130 * time.Millisecond))
	if len(fs) != 1 || string(fs[0]) != "t9" {
		t.Fatalf("Take after the interval = %q, want [t9]", fs)
	}
	if o.offer(top, g1, 6, []byte("t6")) {
		t.Error("a seq below the last one sent was accepted")
	}

	offerReopened(t, o, g1, start)
}

// offerReopened is TestOutboxOffer's re-subscription of top (generation
// g1, its last frame t9 taken at start+130ms) and the closes.
func offerReopened(t *testing.T, o *Outbox, g1 uint64, start time.Time) {
	top, vw := slotKey{"b", topSlot}, slotKey{"b", viewSlot}
	// Re-subscribing keeps the seq floor and the throttle, drops pending;
	// its own first frame goes at once and does not count.
	o.offer(top, g1, 10, []byte("t10"))
	g2 := o.open(top)
	if o.pending() != 0 {
		t.Error("open kept the previous subscription's pending frame")
	}
	if o.offer(top, g1, 11, []byte("old gen")) {
		t.Error("previous generation accepted after re-open")
	}
	if o.offer(top, g2, 6, []byte("t6")) {
		t.Error("re-open lost the seq floor")
	}
	o.offer(top, g2, 11, []byte("t11"))
	if fs, retry := o.Take(start.Add(150 * time.Millisecond)); len(fs) != 1 || string(fs[0]) != "t11" || retry != 0 {
		t.Errorf("re-open's first frame: %q %v; want [t11] at once, 0 (nothing held)", fs, retry)
	}
	o.offer(top, g2, 12, []byte("t12"))
	if fs, retry := o.Take(start.Add(160 * time.Millisecond)); len(fs) != 0 || retry != 70*time.Millisecond {
		t.Errorf("re-open lost the throttle: %q %v", fs, retry)
	}

	o.close(top)
	o.close(vw)
	if o.keys() != 0 || o.pending() != 0 {
		t.Errorf("after close: %d keys, %d pending", o.keys(), o.pending())
	}
	d, c := o.Stats()
	if d != 5 || c != 2 {
		t.Errorf("Stats = %d delivered, %d coalesced; want 5, 2", d, c)
	}
}

// TestOutboxQuietOffer: the writer wakes once per frame. A frame that fills
// an empty slot signals Ready (due: the writer takes it; not due: its Take
// arms the timer, retryIn); a frame that replaces a held one does not
// signal (the timer is armed already); and Take arms no timer for a key
// that holds nothing, since its next frame signals by itself.
func TestOutboxQuietOffer(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	o := NewOutbox(100*time.Millisecond, func() time.Time { return now })
	top, vw := slotKey{"b", topSlot}, slotKey{"b", viewSlot}
	gt, gv := o.open(top), o.open(vw)
	ready := func() bool {
		select {
		case <-o.Ready():
			return true
		default:
			return false
		}
	}

	o.offer(top, gt, 1, []byte("t1"))
	if !ready() {
		t.Fatal("a first frame did not signal Ready")
	}
	if fs, retry := o.Take(now); len(fs) != 1 || retry != 0 {
		t.Fatalf("Take = %q, %v; want [t1], 0 (the first frame does not count, R7 v1.1)", fs, retry)
	}
	o.offer(top, gt, 2, []byte("t1b"))
	if !ready() {
		t.Fatal("the frame after the first did not signal Ready: the first must not count")
	}
	if fs, retry := o.Take(now); len(fs) != 1 || retry != 0 {
		t.Fatalf("Take = %q, %v; want [t1b], 0 (nothing held: no timer)", fs, retry)
	}

	now = now.Add(40 * time.Millisecond)
	o.offer(top, gt, 3, []byte("t2"))
	if !ready() {
		t.Fatal("a frame filling an empty slot did not signal Ready")
	}
	if fs, retry := o.Take(now); len(fs) != 0 || retry != 60*time.Millisecond {
		t.Fatalf("Take = %q, %v; want nothing, 60ms (the held top frame)", fs, retry)
	}
	o.offer(top, gt, 4, []byte("t2b"))
	if ready() {
		t.Error("a frame replacing a held one signalled Ready")
	}
	o.offer(vw, gv, 3, []byte("v2")) // another key, never sent: due at once
	if !ready() {
		t.Fatal("a due frame of another key did not signal Ready")
	}
	// That Take still arms the timer for the held top frame.
	if fs, retry := o.Take(now); len(fs) != 1 || string(fs[0]) != "v2" || retry != 60*time.Millisecond {
		t.Fatalf("Take = %q, %v; want [v2], 60ms (the held top frame)", fs, retry)
	}

	now = now.Add(60 * time.Millisecond) // the timer fires
	if fs, retry := o.Take(now); len(fs) != 1 || string(fs[0]) != "t2b" || retry != 0 {
		t.Fatalf("Take when due = %q, %v; want [t2b], 0", fs, retry)
	}
	now = now.Add(200 * time.Millisecond) // past every interval
	o.offer(top, gt, 5, []byte("t3"))
	if !ready() {
		t.Error("a frame offered after the interval did not signal Ready")
	}
}
