package live

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
	"github.com/wsgateway/wsgateway/rank/redisstore"
)

func member(i int) string { return fmt.Sprintf("m%03d", i) }

// TestFramesFollowStore drives random events through the store, reports
// them (batched and shuffled, as the hub and the bus do) and checks after
// each round that every subscriber holds frames equal to the store's top-N
// and member views. A view missed by the dirtiness filter shows up here.
func TestFramesFollowStore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		order    rank.Order
		tiebreak rank.Tiebreak
		mode     rank.Mode
	}{
		{rank.Desc, rank.First, rank.Incr},
		{rank.Asc, rank.First, rank.Incr},
		{rank.Desc, rank.Shared, rank.Incr},
		{rank.Asc, rank.Last, rank.Set},
		{rank.Desc, rank.First, rank.Best},
	} {
		t.Run(fmt.Sprintf("%s-%s-%s", tc.order, tc.tiebreak, tc.mode), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Config{Refresh: -1}, nil)
				b := rank.DefaultBoard("g")
				b.Order, b.Tiebreak, b.Mode = tc.order, tc.tiebreak, tc.mode
				h.board(b)
				rng := rand.New(rand.NewPCG(7, uint64(len(tc.order)+len(tc.tiebreak)+len(tc.mode))))
				for i := range 30 {
					h.apply("g", member(i), rng.Int64N(200), false)
				}
				type subscription struct {
					r      *reader
					top    int
					member string
					around int
				}
				subs := []subscription{
					{newReader(t), 5, member(7), 2},
					{newReader(t), 10, "", 0},
					{newReader(t), 3, member(20), 1},
					{newReader(t), 0, member(45), 3}, // absent until it scores
					{newReader(t), 1, member(0), 25},
					{newReader(t), 0, member(29), 25}, // wide: reaches the last rank
				}
				for _, s := range subs {
					h.subscribe(s.r, "g", s.top, s.member, s.around)
				}
				for _, s := range subs {
					h.check(s.r, "g", s.top, s.member, s.around)
				}
				for round := range 40 {
					var batch []rank.Change
					for range 1 + rng.IntN(8) {
						amount := rng.Int64N(300) - 100
						if tc.mode != rank.Incr {
							amount = rng.Int64N(400)
						}
						r := h.apply("g", member(rng.IntN(50)), amount, false)
						batch = append(batch, changeOf(r))
					}
					rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
					for len(batch) > 0 { // in a few calls, as from several connections
						n := 1 + rng.IntN(len(batch))
						h.e.Changed(batch[:n])
						batch = batch[n:]
					}
					h.settle()
					for _, s := range subs {
						h.check(s.r, "g", s.top, s.member, s.around)
					}
					if t.Failed() {
						t.Fatalf("round %d", round)
					}
				}
				checkIndex(t, h.e)
			})
		})
	}
}

// seedBoard fills board "g" with m000..m099 scoring 10000, 9900, … 100.
func seedBoard(h *harness) {
	h.board(rank.DefaultBoard("g"))
	for i := range 100 {
		h.apply("g", member(i), int64(10000-100*i), false)
	}
}

// watched is seedBoard with one reader subscribed to the top 3 of "g" and to
// m050's view with around 2 (window m048..m052, scores 5200..4800), once
// the first change seen (which re-reads the whole board) has settled.
func watched(t *testing.T, cfg Config) (*harness, *reader) {
	h := newHarness(t, cfg, nil)
	seedBoard(h)
	r := newReader(t)
	h.subscribe(r, "g", 3, member(50), 2)
	h.apply("g", member(99), 1, true) // the first change seen re-reads all: get it done
	h.settle()
	return h, r
}

// TestViewDirtyFilter checks which changes cause store reads. m050 is
// watched with around 2: its window is m048..m052, scores 5200..4800.
func TestViewDirtyFilter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		member     string
		amount     int64
		viewReads  int64
		topReads   int64
		wantRank   int64 // of m050 after the change
		wantAround []string
	}{
		{"far below, small move", member(90), 10, 0, 0, 51, nil},
		{"new member far below", "newbie", 1, 0, 1, 51, nil},
		{"above the window, stays above", member(10), 10, 0, 0, 51, nil},
		{"top member", member(0), 1, 0, 1, 51, nil},
		{"overtakes the viewed member", member(90), 4050, 1, 0, 52, nil},
		{"enters the window from below", member(90), 3850, 1, 0, 51, []string{member(48), member(49), member(50), member(51), member(90)}},
		{"inside the window", member(52), 10, 1, 0, 51, nil},
		{"the viewed member itself", member(50), 1, 1, 0, 51, nil},
		{"ties the window's lowest score", member(90), 3800, 1, 0, 51, nil},
		{"drops from above to below", member(20), -9000, 1, 0, 50, nil},
		{"new member above the window", "newbie", 7000, 1, 1, 52, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				h, r := watched(t, Config{Refresh: -1})
				h.check(r, "g", 3, member(50), 2)
				top0, ranks0 := h.reads()

				h.apply("g", tc.member, tc.amount, true)
				h.settle()
				top1, ranks1 := h.reads()
				if ranks1-ranks0 != tc.viewReads || top1-top0 != tc.topReads {
					t.Errorf("reads: ranks +%d top +%d; want ranks +%d top +%d", ranks1-ranks0, top1-top0, tc.viewReads, tc.topReads)
				}
				h.check(r, "g", 3, member(50), 2)
				v := r.view["g"]
				if v.Rank == nil || *v.Rank != tc.wantRank {
					t.Errorf("view rank %v, want %d", v.Rank, tc.wantRank)
				}
				if tc.wantAround != nil {
					var got []string
					for _, e := range v.Around {
						got = append(got, e.Member)
					}
					if fmt.Sprint(got) != fmt.Sprint(tc.wantAround) {
						t.Errorf("around %v, want %v", got, tc.wantAround)
					}
				}
			})
		})
	}
}

// TestBottomWindow: a window that reaches the last rank is open below: a
// new member scoring under everyone joins it.
func TestBottomWindow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		seedBoard(h)
		r := newReader(t)
		h.subscribe(r, "g", 0, member(98), 2)
		h.apply("g", member(0), 1, true)
		h.settle()
		_, ranks0 := h.reads()
		h.apply("g", "last", 1, true)
		h.settle()
		if _, ranks := h.reads(); ranks != ranks0+1 {
			t.Errorf("ranks reads +%d, want +1", ranks-ranks0)
		}
		h.check(r, "g", 0, member(98), 2)
		if a := r.view["g"].Around; len(a) != 5 || a[4].Member != "last" {
			t.Errorf("around %v, want the newcomer last", a)
		}
	})
}

// TestChangeDuringRead: a change made after a view's read but reported
// before its result is installed was tested against the old window; it is
// re-tested against the new one.
func TestChangeDuringRead(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		seedBoard(h)
		r := newReader(t)
		h.subscribe(r, "g", 0, member(50), 2) // window 5200..4800
		h.apply("g", member(0), 1, true)
		h.settle()

		g := &gate{held: make(chan struct{}), release: make(chan struct{})}
		h.st.gate.Store(g)
		h.apply("g", member(50), 150, true) // new window m047..m051: 5300..4900
		<-g.held
		// Outside the old window, inside the new one.
		h.apply("g", member(47), -50, true)
		close(g.release)
		h.settle()
		h.check(r, "g", 0, member(50), 2)
	})
}

// TestUnchangedNotResent: a change that dirties a view without changing it
// reads the store but sends nothing.
func TestUnchangedNotResent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h, r := watched(t, Config{Refresh: -1})
		r.drain()
		n, enc := r.n, h.e.Stats().Encoded
		// m060 moves up but stays below m052: it intersects nothing of the
		// window... but a jump to exactly m052's score does intersect.
		h.apply("g", member(60), 4800-4000, true) // m060 → 4800, ties m052, ranked after it
		h.settle()
		r.drain()
		if _, ranks := h.reads(); ranks == 0 {
			t.Fatal("no view read")
		}
		if r.n != n || h.e.Stats().Encoded != enc {
			t.Errorf("unchanged view re-sent: %d frames (was %d), encoded %d (was %d)", r.n, n, h.e.Stats().Encoded, enc)
		}
	})
}

// TestEncodeOnce: every subscriber of a key gets the very same bytes.
func TestEncodeOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		seedBoard(h)
		a, b := newReader(t), newReader(t)
		h.subscribe(a, "g", 5, member(3), 2)
		h.subscribe(b, "g", 5, member(3), 2)
		h.apply("g", member(99), 1, true)
		h.settle()
		a.drain()
		b.drain()
		enc := h.e.Stats().Encoded
		h.apply("g", member(4), 200, true) // overtakes m003: top and view change
		h.settle()
		a.drain()
		b.drain()
		for _, k := range []string{"top/g", "view/g"} {
			fa, fb := a.raw[k], b.raw[k]
			if len(fa) == 0 || &fa[0] != &fb[0] {
				t.Errorf("%s: the two subscribers got different byte slices", k)
			}
		}
		if got := h.e.Stats().Encoded - enc; got != 2 {
			t.Errorf("encoded %d frames for one change, want 2 (one top, one view)", got)
		}
		h.check(a, "g", 5, member(3), 2)
	})
}

// TestSeqGap: a change event that never arrives is noticed by the next
// one's seq, and the board is re-read whole.
func TestSeqGap(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h, r := watched(t, Config{Refresh: -1})
		top0, ranks0 := h.reads()

		// Out of order but complete: not a gap, and nothing to read.
		c1 := changeOf(h.apply("g", member(98), 1, false))
		c2 := changeOf(h.apply("g", member(97), 1, false))
		h.e.Changed([]rank.Change{c2})
		h.e.Changed([]rank.Change{c1})
		h.settle()
		if top, ranks := h.reads(); top != top0 || ranks != ranks0 {
			t.Errorf("reordered changes caused reads: top +%d ranks +%d", top-top0, ranks-ranks0)
		}

		// Lost: m090 jumps to first and m049 enters the window; nobody says so.
		h.apply("g", member(90), 20000, false)
		h.apply("g", member(49), -150, false)
		h.apply("g", member(96), 1, true) // seq gap
		h.settle()
		if top, ranks := h.reads(); top == top0 || ranks == ranks0 {
			t.Error("a seq gap did not re-read the board")
		}
		h.check(r, "g", 3, member(50), 2)
	})
}

// TestResyncAndBackstop: changes never reported at all are picked up by
// Resync, or by the Refresh backstop.
func TestResyncAndBackstop(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		refresh time.Duration
		resync  string
	}{
		{"resync board", -1, "g"},
		{"resync all", -1, ""},
		{"backstop", 500 * time.Millisecond, "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				h, r := watched(t, Config{Refresh: tc.refresh})
				h.apply("g", member(90), 20000, false)
				h.apply("g", member(51), 150, false)
				if tc.resync != "-" {
					h.e.Resync(tc.resync)
				} else {
					time.Sleep(3 * tc.refresh)
				}
				h.settle()
				h.check(r, "g", 3, member(50), 2)
			})
		})
	}
}

// TestAbsentMember: a view of a member not on the board has null rank and
// score and empty around, until the member scores.
func TestAbsentMember(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		seedBoard(h)
		r := newReader(t)
		h.subscribe(r, "g", 0, "ghost", 1)
		r.drain()
		if f := string(r.raw["view/g"]); f == "" || r.view["g"].Rank != nil || r.view["g"].Score != nil ||
			r.view["g"].Around == nil || len(r.view["g"].Around) != 0 {
			t.Fatalf("absent member frame %s", f)
		}
		h.apply("g", "ghost", 5050, true)
		h.settle()
		h.check(r, "g", 0, "ghost", 1)
		if v := r.view["g"]; v.Rank == nil || *v.Rank != 51 {
			t.Errorf("rank %v, want 51", v.Rank)
		}
	})
}

// TestPeriodRollover: an hourly board's frames empty out at the boundary,
// with no change event at all.
func TestPeriodRollover(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// synctest's clock starts at midnight; one second before 01:00.
		off := time.Hour - time.Second
		clock := func() time.Time { return time.Now().Add(off) }
		h := newHarness(t, Config{Refresh: -1}, clock)
		b := rank.DefaultBoard("h")
		b.Reset = rank.Hourly
		h.board(b)
		h.apply("h", "alice", 10, false)
		r := newReader(t)
		h.subscribe(r, "h", 3, "alice", 1)
		r.drain()
		if r.top["h"].Total != 1 {
			t.Fatalf("before the boundary: %+v", r.top["h"])
		}
		time.Sleep(2 * time.Second)
		h.settle()
		h.check(r, "h", 3, "alice", 1)
		if r.top["h"].Total != 0 || r.view["h"].Rank != nil {
			t.Errorf("after the boundary: top %+v view %+v", r.top["h"], r.view["h"])
		}
	})
}

// TestStoreErrors: failed reads keep the board dirty and are retried. A
// subscription made while the store fails is kept (its board's config is
// held, so nothing is read to subscribe): its first frames come from the
// first read that succeeds.
func TestStoreErrors(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h, r := watched(t, Config{Refresh: -1})

		h.st.fail.Store(true)
		h.apply("g", member(90), 20000, true)
		late := newReader(t)
		if err := h.e.Subscribe(context.Background(), late.o, "g", 2, member(1), 1); err != nil {
			t.Fatalf("Subscribe while the store fails: %v", err)
		}
		h.settle()
		h.settle()
		if h.e.Stats().Errors < 3 {
			t.Errorf("%d errors counted, want retries", h.e.Stats().Errors)
		}
		late.drain()
		if _, ok := late.top["g"]; ok || late.n != 1 || len(late.boards["g"]) != 1 {
			t.Fatalf("while the store fails: %d frames, top %v; want the board frame alone", late.n, late.top["g"])
		}
		h.st.fail.Store(false)
		h.settle()
		h.check(r, "g", 3, member(50), 2)
		h.check(late, "g", 2, member(1), 1)
	})
}

// TestSubscribeReplaceAndUnsubscribe: a second subscribe to a board replaces
// the first; unsubscribe stops frames.
func TestSubscribeReplaceAndUnsubscribe(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		seedBoard(h)
		r := newReader(t)
		h.subscribe(r, "g", 5, member(50), 2)
		h.settle()
		r.drain()
		h.subscribe(r, "g", 2, member(10), 1)
		// The throttle carries over a re-subscription: wait one interval.
		time.Sleep(testInterval)
		h.check(r, "g", 2, member(10), 1)
		h.apply("g", member(1), 500, true)
		h.settle()
		h.check(r, "g", 2, member(10), 1)
		if s := h.e.Stats(); s.Views != 1 || s.TopSubs != 1 || s.Watchers != 1 {
			t.Errorf("after replacing: %+v", s)
		}

		h.e.Unsubscribe(r.o, "g")
		n := r.n
		h.apply("g", member(2), 5000, true)
		h.settle()
		r.drain()
		if r.n != n {
			t.Errorf("%d frames after unsubscribe", r.n-n)
		}
	})
}

// TestDropLeavesNothing: after every connection is dropped, the engine holds
// no board, view, subscription or connection, and outboxes no slot.
func TestDropLeavesNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		seedBoard(h)
		h.board(rank.DefaultBoard("g2"))
		var rs []*reader
		for i := range 20 {
			r := newReader(t)
			h.subscribe(r, "g", 1+i%4, member(i*3), 1+i%3)
			h.subscribe(r, "g2", 3, member(i), 1)
			rs = append(rs, r)
		}
		h.apply("g", member(5), 100, true)
		h.settle()
		if s := h.e.Stats(); s.Boards != 2 || s.TopSubs != 40 || s.Watchers != 40 {
			t.Fatalf("before: %+v", s)
		}
		for i, r := range rs {
			if i%2 == 0 {
				h.e.Drop(r.o)
			} else {
				h.e.Unsubscribe(r.o, "g")
				h.e.Unsubscribe(r.o, "g2")
			}
		}
		h.apply("g", member(6), 100, true)
		h.settle()
		s := h.e.Stats()
		h.e.mu.Lock()
		boards, conns := len(h.e.boards), len(h.e.conns)
		h.e.mu.Unlock()
		if s.Boards != 0 || s.Views != 0 || s.TopSubs != 0 || s.Watchers != 0 || boards != 0 || conns != 0 {
			t.Errorf("left behind: %+v, %d boards, %d connections", s, boards, conns)
		}
		for _, r := range rs {
			if r.o.keys() != 0 || r.o.pending() != 0 {
				t.Errorf("outbox keeps %d keys, %d pending", r.o.keys(), r.o.pending())
			}
		}
	})
}

func TestSubscribeValidation(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		seedBoard(h)
		for _, tc := range []struct {
			board, member string
			top, around   int
			want          error
		}{
			{"bad board!", "", 1, 0, rank.ErrInvalidBoard},
			{"nope", "", 1, 0, rank.ErrUnknownBoard},
			{"g", "", 101, 0, rank.ErrBadRequest},
			{"g", "", -1, 0, rank.ErrBadRequest},
			{"g", "a", 1, 26, rank.ErrBadRequest},
			{"g", "bad member!", 0, 1, rank.ErrInvalidMember},
			{"g", "", 0, 0, nil},
			{"g", "a", 100, 25, nil},
		} {
			o := NewOutbox(testInterval, nil)
			err := h.e.Subscribe(context.Background(), o, tc.board, tc.top, tc.member, tc.around)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("Subscribe(%q, top %d, %q, around %d) = %v, want %v", tc.board, tc.top, tc.member, tc.around, err, tc.want)
			}
			h.e.Drop(o)
		}
		if s := h.e.Stats(); s.Boards != 0 {
			t.Errorf("failed subscriptions left %+v", s)
		}
	})
}

func TestNewConfig(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err == nil {
		t.Error("New without a store succeeded")
	}
	if _, err := New(Config{Store: &countingStore{}, Interval: -1}); err == nil {
		t.Error("negative interval accepted")
	}
	e, err := New(Config{Store: &countingStore{}})
	if err != nil {
		t.Fatal(err)
	}
	if e.cfg.Interval != 100*time.Millisecond || e.cfg.ReadTimeout != 2*time.Second || e.cfg.Refresh != 2*time.Second || e.cfg.Parallel != 8 {
		t.Errorf("defaults: %v %v %v %d", e.cfg.Interval, e.cfg.ReadTimeout, e.cfg.Refresh, e.cfg.Parallel)
	}
}

// checkIndex verifies that every found, clean view is indexed with the
// range its result implies.
func checkIndex(t *testing.T, e *Engine) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, b := range e.boards {
		vs := kindOf[*views](b)
		checkTreap(t, vs.index.root)
		n := 0
		for _, v := range vs.byKey {
			if v.indexed {
				n++
			}
			if v.res != nil && v.res.mr.Found != v.indexed {
				t.Errorf("view %v: found %v, indexed %v", v.key, v.res.mr.Found, v.indexed)
			}
		}
		if n != vs.index.n {
			t.Errorf("index holds %d, %d views indexed", vs.index.n, n)
		}
	}
}

// Both engines serve every read the live engine makes.
var (
	_ Store        = (*memstore.Store)(nil)
	_ cohortReader = (*memstore.Store)(nil)
	_ Store        = (*redisstore.Store)(nil)
	_ cohortReader = (*redisstore.Store)(nil)
)
