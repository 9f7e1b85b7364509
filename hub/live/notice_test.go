package live

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// TestR20R21BoundAfterNotice: a ban, a lift (R21) or a rename (R20) reaches
// every subscriber's top frame within one interval + 50 ms. On the node
// where it was made and on every node that hears it over the bus, the
// engine learns of it by Resync (a board change) or ProfilesChanged (a
// profile change); from that call on, time is the engine's and is
// controlled here: changes land at every phase of the subscriber's frame
// schedule, and the first frame showing each must be out within the bound. The cross-node tests in node prove the
// notice gets there; this proves the bound from the notice on.
func TestR20R21BoundAfterNotice(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"ban", "rename"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { noticeBound(t, kind) })
		})
	}
}

func noticeBound(t *testing.T, kind string) {
	d := &mapDecorator{names: map[string]string{}}
	h := newHarness(t, Config{Refresh: -1, Decorator: d}, nil)
	h.board(rank.DefaultBoard("g"))
	for i := range 5 {
		h.apply("g", member(i), int64(100-10*i), true)
	}
	mod, ok := h.st.Store.(rank.Moderation)
	if !ok {
		t.Fatalf("the memory engine %T has no moderation", h.st.Store)
	}

	type frame struct {
		at  time.Time
		top proto.Top
	}
	var mu sync.Mutex
	var frames []frame
	r := newReader(t)
	h.subscribe(r, "g", 10, "", 0)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { // the connection's writer loop, as the hub runs it
		writeLoop(ctx, r.o, func() time.Duration {
			n := r.n
			retry := r.drain()
			if m, ok := r.top["g"]; ok && r.n != n {
				mu.Lock()
				frames = append(frames, frame{time.Now(), m})
				mu.Unlock()
			}
			return retry
		})
	})
	h.settle()

	// shows reports whether a top frame shows change i done.
	banned := member(0)
	shows := func(i int, f proto.Top) bool {
		for _, e := range f.Entries {
			if kind == "ban" && e.Member == banned {
				return i%2 == 1 // even changes ban, odd ones lift
			}
			if kind == "rename" && e.Member == member(2) {
				return e.Name == fmt.Sprint("Name ", i)
			}
		}
		return kind == "ban" && i%2 == 0
	}
	// Changes come in pairs: the first after a quiet spell, so its frame
	// goes out at once; the second 15, 30, … 150 ms after it, so its frame
	// waits for the subscriber's next slot (one frame per interval, R7) at
	// every phase of the interval.
	const changes = 20
	done := make([]time.Time, changes)
	for i := range changes {
		if i%2 == 0 {
			time.Sleep(2 * testInterval)
		} else {
			time.Sleep(time.Duration(15*(i/2+1)) * time.Millisecond)
		}
		switch {
		case kind == "rename":
			d.set(member(2), fmt.Sprint("Name ", i))
			done[i] = time.Now()
			h.e.ProfilesChanged([]string{member(2)})
		case i%2 == 0:
			if _, err := mod.BanMember(context.Background(), "g", rank.Ban{Member: banned}); err != nil {
				t.Fatal(err)
			}
			done[i] = time.Now()
			h.e.Resync("g")
		default:
			if err := mod.LiftBan(context.Background(), "g", banned); err != nil {
				t.Fatal(err)
			}
			done[i] = time.Now()
			h.e.Resync("g")
		}
	}
	h.settle()
	cancel()
	wg.Wait()

	bound := testInterval + 50*time.Millisecond
	mu.Lock()
	defer mu.Unlock()
	worst := time.Duration(0)
	for i, at := range done {
		var shown time.Time
		for _, f := range frames {
			if !f.at.Before(at) && shows(i, f.top) {
				shown = f.at
				break
			}
		}
		switch {
		case shown.IsZero():
			t.Errorf("%s %d: no top frame shows it", kind, i)
		case shown.Sub(at) > bound:
			t.Errorf("%s %d: shown %v after the notice, bound %v", kind, i, shown.Sub(at), bound)
		}
		worst = max(worst, shown.Sub(at))
	}
	t.Logf("%d changes: the worst delay from the notice to a frame showing it %v (bound %v)", changes, worst, bound)
}

// TestHotBoundaryFrames: at a hot board's bucket boundary, with no event
// at all, the subscribers' frames show the decayed scores within one
// lifecycle tick (the tick that notices the new bucket) + one interval +
// 50 ms, at every phase of the frame schedule (the store's clock is offset
// so the boundary falls 37 ms further into an interval each time).
func TestHotBoundaryFrames(t *testing.T) {
	t.Parallel()
	for phase := range 6 {
		t.Run(fmt.Sprint("phase ", phase), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { hotBoundary(t, time.Duration(37*phase)*time.Millisecond) })
		})
	}
}

func hotBoundary(t *testing.T, phase time.Duration) {
	// The store's clock is 10 s (plus phase) before an hour: its bucket
	// boundary comes 10 s into the bubble's time.
	toBoundary := 10*time.Second + phase
	offset := time.Hour - time.Duration(time.Now().UnixNano()%int64(time.Hour)) - toBoundary
	clock := func() time.Time { return time.Now().Add(offset) }
	boundary := time.Now().Add(toBoundary)
	h := newHarness(t, Config{Refresh: -1}, clock)
	b := rank.DefaultBoard("hot")
	b.Tiebreak = rank.Shared
	b.Decay = rank.Decay{Bucket: rank.Duration(time.Hour), Buckets: 3, Factor: 0.5}
	h.board(b)
	h.apply("hot", "ann", 10, true)
	h.apply("hot", "bob", 3, true)

	// A hot board's frames carry scores with 3 decimals, which proto.Top
	// does not decode: the frames are kept raw.
	type frame struct {
		at  time.Time
		raw string
	}
	var mu sync.Mutex
	var frames []frame
	o := NewOutbox(testInterval, nil)
	if err := h.e.Subscribe(context.Background(), o, "hot", 10, "", 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		writeLoop(ctx, o, func() time.Duration {
			fs, retry := o.Take(time.Now())
			mu.Lock()
			for _, f := range fs {
				if strings.HasPrefix(string(f), `{"type":"top"`) {
					frames = append(frames, frame{time.Now(), string(f)})
				}
			}
			mu.Unlock()
			return retry
		})
	})
	time.Sleep(toBoundary + 2*time.Second)
	synctest.Wait()
	cancel()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	before := `"entries":[{"rank":1,"member":"ann","score":10.000},{"rank":2,"member":"bob","score":3.000}]`
	after := `"entries":[{"rank":1,"member":"ann","score":5.000},{"rank":2,"member":"bob","score":1.500}]`
	var shown time.Time
	for _, f := range frames {
		if f.at.Before(boundary) && !strings.Contains(f.raw, before) {
			t.Fatalf("frame before the boundary %s, want %s", f.raw, before)
		}
		if !f.at.Before(boundary) && strings.Contains(f.raw, after) {
			shown = f.at
			break
		}
	}
	bound := lifecycleTick + testInterval + 50*time.Millisecond
	switch {
	case shown.IsZero():
		t.Fatalf("no frame after the boundary shows the halved scores; %d frames", len(frames))
	case shown.Sub(boundary) > bound:
		t.Fatalf("the halved scores shown %v after the boundary, bound %v", shown.Sub(boundary), bound)
	}
	t.Logf("the halved scores shown %v after the boundary (bound %v)", shown.Sub(boundary), bound)
}
