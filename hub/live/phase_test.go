package live

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// TestR7BoundAnyPhase: R7 says every subscriber holds a frame with a change
// within one interval plus 50 ms of it, while no connection gets more than
// one frame per interval. Subscribers join a busy board (a change every
// 7 ms) at every phase of the board's reads (14 ms apart over 560 ms) and each runs a writer
// loop as the hub does; for every change after a subscriber's first frame,
// the first of its frames that includes the change (seq ≥ the change's)
// must arrive within the bound, and its frames must be an interval apart.
func TestR7BoundAnyPhase(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		h.board(rank.DefaultBoard("g"))
		// Five members under a top-10: every change changes the top.
		for i := range 5 {
			h.apply("g", member(i), int64(i), true)
		}
		h.settle()

		type frame struct {
			at  time.Time
			seq int64
		}
		type sub struct {
			r      *reader
			mu     sync.Mutex
			frames []frame
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		writer := func(s *sub) { // the connection's writer loop
			defer wg.Done()
			last := int64(-1)
			writeLoop(ctx, s.r.o, func() time.Duration {
				retry := s.r.drain()
				if m, ok := s.r.top["g"]; ok && m.Seq != last {
					last = m.Seq
					s.mu.Lock()
					s.frames = append(s.frames, frame{time.Now(), m.Seq})
					s.mu.Unlock()
				}
				return retry
			})
		}

		type change struct {
			at  time.Time
			seq int64
		}
		var changes []change
		var subs []*sub
		const busyFor = 3 * time.Second
		start := time.Now()
		for i := 0; time.Since(start) < busyFor; i++ {
			if i%2 == 0 && len(subs) < 40 { // a subscriber every 14 ms, then none
				s := &sub{r: newReader(t)}
				h.subscribe(s.r, "g", 10, "", 0)
				subs = append(subs, s)
				wg.Add(1)
				go writer(s)
			}
			r := h.apply("g", member(i%5), 1, true)
			changes = append(changes, change{time.Now(), r.Seq})
			time.Sleep(7 * time.Millisecond)
		}
		h.settle()
		cancel()
		wg.Wait()

		bound := testInterval + 50*time.Millisecond
		worst := time.Duration(0)
		for si, s := range subs {
			if len(s.frames) < 2 {
				t.Fatalf("subscriber %d got %d frames", si, len(s.frames))
			}
			for i := 1; i < len(s.frames); i++ {
				if gap := s.frames[i].at.Sub(s.frames[i-1].at); i >= 2 && gap < testInterval { // frame 0 does not count (R7 v1.1)
					t.Errorf("subscriber %d: frames %d and %d only %v apart", si, i-1, i, gap)
				}
			}
			first := s.frames[0].at
			for _, c := range changes {
				if !c.at.After(first) {
					continue
				}
				seen := false
				for _, f := range s.frames {
					if f.seq >= c.seq {
						d := f.at.Sub(c.at)
						worst = max(worst, d)
						if d > bound {
							t.Errorf("subscriber %d (joined %v into the run): change seq %d shown %v after it, bound %v",
								si, first.Sub(start), c.seq, d, bound)
						}
						seen = true
						break
					}
				}
				if !seen {
					t.Errorf("subscriber %d never showed change seq %d", si, c.seq)
				}
			}
		}
		t.Logf("%d subscribers, %d changes: worst delay from a change to a frame showing it %v (bound %v)",
			len(subs), len(changes), worst, bound)
	})
}
