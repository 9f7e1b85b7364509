package live

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// phaseRecorder runs a subscriber's writer loop and records when each of
// its top frames of board g arrived.
type phaseRecorder struct {
	r  *reader
	mu sync.Mutex
	at []time.Time
}

func (p *phaseRecorder) run(ctx context.Context, wg *sync.WaitGroup) {
	defer wg.Done()
	last := int64(-1)
	writeLoop(ctx, p.r.o, func() time.Duration {
		retry := p.r.drain()
		if m, ok := p.r.top["g"]; ok && m.Seq != last {
			last = m.Seq
			p.mu.Lock()
			p.at = append(p.at, time.Now())
			p.mu.Unlock()
		}
		return retry
	})
}

// TestReadSchedule: a busy board (a change every 7 ms) is read once per
// interval, on points one interval apart, however many subscribers and
// changes it has; every subscriber's frames after its first arrive on those
// points.
func TestReadSchedule(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		h.board(rank.DefaultBoard("g"))
		for i := range 5 {
			h.apply("g", member(i), int64(i), true)
		}
		h.settle()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var subs []*phaseRecorder
		for range 6 {
			p := &phaseRecorder{r: newReader(t)}
			h.subscribe(p.r, "g", 10, "", 0)
			subs = append(subs, p)
			wg.Add(1)
			go p.run(ctx, &wg)
		}
		w := newReader(t) // a view too: its reads follow the same points
		h.subscribe(w, "g", 0, member(2), 1)
		wg.Add(1)
		go func() { defer wg.Done(); writeLoop(ctx, w.o, w.drain) }()
		synctest.Wait()

		tops0, ranks0 := h.reads()
		const busy = 2 * time.Second
		start := time.Now()
		for i := 0; time.Since(start) < busy; i++ {
			h.apply("g", member(i%5), 1, true)
			time.Sleep(7 * time.Millisecond)
		}
		tops, ranks := h.reads()
		tops, ranks = tops-tops0, ranks-ranks0
		want := int64(busy / testInterval)
		if tops < want-1 || tops > want+1 || ranks < want-1 || ranks > want+1 {
			t.Errorf("%v busy: %d top and %d ranks reads, want %d ± 1 of each (one per interval)", busy, tops, ranks, want)
		}
		h.settle()
		cancel()
		wg.Wait()

		var phase time.Duration = -1
		for si, p := range subs {
			if len(p.at) < int(want)-2 {
				t.Fatalf("subscriber %d got %d frames in %v", si, len(p.at), busy)
			}
			for i := 1; i < len(p.at); i++ { // frame 0 is the subscriber's own first
				ph := time.Duration(p.at[i].UnixNano()) % testInterval
				if phase < 0 {
					phase = ph
				}
				if ph != phase {
					t.Errorf("subscriber %d: frame %d at phase %v of the interval, the board's reads at %v", si, i, ph, phase)
				}
				if i >= 2 && p.at[i].Sub(p.at[i-1]) < testInterval {
					t.Errorf("subscriber %d: frames %d and %d only %v apart", si, i-1, i, p.at[i].Sub(p.at[i-1]))
				}
			}
		}
		t.Logf("%v busy: %d top reads, %d ranks reads; frames at phase %v", busy, tops, ranks, phase)
	})
}

// TestSubscribeKeepsPhase: a Subscribe to a board whose frames are stale
// reads nothing off the board's schedule: the new subscriber gets the held
// frame, and the board's next point brings what changed to every
// subscriber. A subscriber that was due (its top-2 had not changed for a
// while) gets it on that point, so its phase stays the board's (which is
// what keeps R7's bound, schedule.go).
func TestSubscribeKeepsPhase(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		h.board(rank.DefaultBoard("g"))
		for i := range 10 {
			h.apply("g", member(i), int64(100-10*i), true) // m0 leads
		}
		h.settle()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wide := &phaseRecorder{r: newReader(t)} // top 10: changes every interval
		h.subscribe(wide.r, "g", 10, "", 0)
		narrow := &phaseRecorder{r: newReader(t)} // top 2: due whenever ranks 3+ move
		h.subscribe(narrow.r, "g", 2, "", 0)
		wg.Add(2)
		go wide.run(ctx, &wg)
		go narrow.run(ctx, &wg)

		// Ranks 5..10 move for a while: only the wide subscriber's frames change.
		for i := range 40 {
			h.apply("g", member(5+i%5), 1, true)
			time.Sleep(7 * time.Millisecond)
		}
		// Half-way between two points: the leader changes and a new top-2
		// subscriber arrives.
		wide.mu.Lock()
		lastWide := wide.at[len(wide.at)-1]
		wide.mu.Unlock()
		time.Sleep(time.Until(lastWide.Add(testInterval / 2)))
		h.apply("g", member(1), 50, true)
		late := newReader(t)
		h.subscribe(late, "g", 2, "", 0)
		wg.Add(1)
		go func() { defer wg.Done(); writeLoop(ctx, late.o, late.drain) }()
		// Then the top 2 keeps changing.
		for i := range 60 {
			h.apply("g", member(i%2), 1, true)
			time.Sleep(7 * time.Millisecond)
		}
		h.settle()
		cancel()
		wg.Wait()

		phaseOf := func(t time.Time) time.Duration { return time.Duration(t.UnixNano()) % testInterval }
		board := phaseOf(lastWide)
		for i := 1; i < len(narrow.at); i++ {
			if ph := phaseOf(narrow.at[i]); ph != board {
				t.Errorf("top-2 subscriber: frame %d at phase %v, the board's reads at %v (moved by a Subscribe)", i, ph, board)
			}
		}
		if len(narrow.at) < 5 {
			t.Fatalf("top-2 subscriber got %d frames", len(narrow.at))
		}
	})
}

// TestReadPoint: the first read and a late one (more than a twentieth of an
// interval after its point) start a schedule at their own moment; a read
// before the next point waits for it; one at most a twentieth late keeps
// the point.
func TestReadPoint(t *testing.T) {
	t.Parallel()
	const iv = 100 * time.Millisecond
	t0 := time.Unix(1000, 0)
	var b board
	at, wait := b.readPoint(t0, iv)
	if !at.Equal(t0) || wait != 0 {
		t.Fatalf("first read: %v, %v; want now, 0", at, wait)
	}
	b.lastPoint = t0
	for _, tc := range []struct {
		now  time.Duration // after t0
		at   time.Duration // want; -1: wait
		wait time.Duration
	}{
		{0, -1, iv},
		{30 * time.Millisecond, -1, 70 * time.Millisecond},
		{iv, iv, 0},
		{iv + 5*time.Millisecond, iv, 0},
		{iv + 6*time.Millisecond, iv + 6*time.Millisecond, 0},
		{10 * iv, 10 * iv, 0},
	} {
		at, wait := b.readPoint(t0.Add(tc.now), iv)
		if tc.at < 0 {
			if !at.IsZero() || wait != tc.wait {
				t.Errorf("at +%v: %v, %v; want to wait %v", tc.now, at, wait, tc.wait)
			}
			continue
		}
		if !at.Equal(t0.Add(tc.at)) || wait != 0 {
			t.Errorf("at +%v: point %v, wait %v; want point +%v", tc.now, at.Sub(t0), wait, tc.at)
		}
	}
}
