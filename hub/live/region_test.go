package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
)

// regionStore is the memory engine with its RegionTop reads counted.
type regionStore struct {
	*countingStore
	regionTops atomic.Int64
}

func (s *regionStore) RegionTop(ctx context.Context, board string, p rank.PeriodSel, region string, offset, limit int) (rank.Page, error) {
	s.regionTops.Add(1)
	return s.countingStore.Store.RegionTop(ctx, board, p, region, offset, limit)
}

// regionHarness is a harness over a regionStore with the region board "g".
type regionHarness struct {
	*harness
	rs *regionStore
}

func newRegionHarness(t *testing.T, mut func(b *rank.Board)) *regionHarness {
	t.Helper()
	ms, err := memstore.New(rank.Hooks{}, memstore.Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	rs := &regionStore{countingStore: &countingStore{Store: ms}}
	h := &harness{t: t, st: rs.countingStore, clock: time.Now}
	h.e, err = New(Config{Store: rs, Interval: testInterval, Refresh: -1, Logger: slog.New(slog.NewTextHandler(testLogWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); h.e.Run(t.Context()) }()
	t.Cleanup(func() { <-done })
	b := rank.DefaultBoard("g")
	b.Regions = true
	if mut != nil {
		mut(&b)
	}
	h.board(b)
	h.board(rank.DefaultBoard("plain"))
	return &regionHarness{h, rs}
}

// applyIn applies a delta to m placed in region and reports the change as
// the gateway does (rank.ChangeOf: the region, the rank there, the region
// left).
func (h *regionHarness) applyIn(m, region string, delta int64) rank.Result {
	h.t.Helper()
	h.ids++
	e := rank.Event{Board: "g", ID: "e" + strconv.Itoa(h.ids), Member: m, Op: rank.OpDelta, Amount: delta, Region: region}
	r, err := rank.ApplyWait(context.Background(), h.st, e)
	if err != nil {
		h.t.Fatal(err)
	}
	if c, ok := rank.ChangeOf(e, r); ok {
		h.e.Changed([]rank.Change{c})
	}
	return r
}

func (h *regionHarness) subscribeRegion(r *reader, region string, top int) {
	h.t.Helper()
	if err := h.e.SubscribeSpec(context.Background(), r.o, Spec{Board: "g", Group: Group{Region, region}, Top: top}); err != nil {
		h.t.Fatal(err)
	}
	firstFrames(r.o)
}

// regionTopMatches compares the reader's latest top frame with region's
// first n entries in the store.
func regionTopMatches(st rank.Store, r *reader, region string, n int) error {
	p, err := st.RegionTop(context.Background(), "g", "", region, 0, n)
	if err != nil {
		return err
	}
	got, ok := r.top["g"]
	switch {
	case !ok:
		return errors.New("no top frame")
	case got.Region != region || got.Cohort != "" || got.Total != p.Total || !slices.Equal(got.Entries, proto.EntriesOf(p.Entries)):
		return fmt.Errorf("top frame (region %q, seq %d) = %v total %d; region %s (seq %d) has %v total %d",
			got.Region, got.Seq, got.Entries, got.Total, region, p.Seq, proto.EntriesOf(p.Entries), p.Total)
	}
	return nil
}

// regionViewMatches compares the reader's latest view frame with the
// member's window within its region in the store.
func regionViewMatches(st rank.Store, r *reader, m string, around int) error {
	rs, err := st.RegionRanks(context.Background(), "g", "", []string{m}, around)
	if err != nil {
		return err
	}
	mr := rs.Members[0]
	got, ok := r.view["g"]
	switch {
	case !ok:
		return errors.New("no view frame")
	case got.Region != mr.Region || (got.Rank == nil) != !mr.Found || (got.Rank != nil && (*got.Rank != mr.Rank || *got.Score != mr.Score)) ||
		!slices.Equal(got.Around, proto.EntriesOf(mr.Around)):
		rk := int64(0)
		if got.Rank != nil {
			rk = *got.Rank
		}
		return fmt.Errorf("%s's region view (seq %d) = region %q rank %d around %v; store (seq %d): %+v", m, got.Seq, got.Region, rk, got.Around, rs.Seq, mr)
	}
	return nil
}

// TestRegionFramesFollowStore (§17, R37 with R7, R8): after every round of
// random events (rises, falls, members moving between regions, new
// members), each region's subscribers hold that region's standings within
// one interval plus 50 ms of the round's last change, region views
// (scope "region") their member's window within its region, the board's
// top and view subscribers the board's; two subscribers of one (region,
// N) share one encoding.
func TestRegionFramesFollowStore(t *testing.T) {
	t.Parallel()
	for _, tie := range []rank.Tiebreak{rank.First, rank.Shared} {
		t.Run(string(tie), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newRegionHarness(t, func(b *rank.Board) { b.Tiebreak = tie })
				regions := []string{"DE", "FR", rank.RegionNone}
				home := map[string]string{}
				rng := rand.New(rand.NewPCG(7, 70))
				for i := range 12 {
					home[member(i)] = regions[i%3]
					h.applyIn(member(i), home[member(i)], rng.Int64N(50))
				}
				de1, de2, fr, zz, global, viewer := newReader(t), newReader(t), newReader(t), newReader(t), newReader(t), newReader(t)
				local := []*reader{newReader(t), newReader(t)} // m004's and m005's views within their regions
				for i, r := range local {
					if err := h.e.SubscribeSpec(context.Background(), r.o, Spec{Board: "g", Member: member(4 + i), Around: 1, RegionView: true}); err != nil {
						t.Fatal(err)
					}
					firstFrames(r.o)
				}
				h.subscribeRegion(de1, "DE", 3)
				h.subscribeRegion(de2, "DE", 3)
				h.subscribeRegion(fr, "FR", 4)
				h.subscribeRegion(zz, rank.RegionNone, 2)
				h.subscribe(global, "g", 5, "", 0)
				h.subscribe(viewer, "g", 0, member(4), 1)
				for round := range 40 {
					for range 1 + rng.IntN(4) {
						m := member(rng.IntN(16)) // m012..m015 arrive later
						if home[m] == "" || rng.IntN(5) == 0 {
							home[m] = regions[rng.IntN(3)] // a new member, or a country change
						}
						h.applyIn(m, home[m], rng.Int64N(60)-25) // falls out of a top as well as rises
					}
					time.Sleep(testInterval + 50*time.Millisecond) // R7's bound after the last change
					synctest.Wait()
					for _, r := range append([]*reader{de1, de2, fr, zz, global, viewer}, local...) {
						r.drain()
					}
					for _, e := range []error{
						regionTopMatches(h.st, de1, "DE", 3), regionTopMatches(h.st, de2, "DE", 3),
						regionTopMatches(h.st, fr, "FR", 4), regionTopMatches(h.st, zz, rank.RegionNone, 2),
						topMatches(h.st, global, "g", 5), viewMatches(h.st, viewer, "g", member(4), 1),
						regionViewMatches(h.st, local[0], member(4), 1), regionViewMatches(h.st, local[1], member(5), 1),
					} {
						if e != nil {
							t.Fatalf("round %d: %v", round, e)
						}
					}
					if a, b := de1.raw["top/g"], de2.raw["top/g"]; &a[0] != &b[0] {
						t.Fatalf("round %d: the subscribers of DE's top got two encodings of one frame", round)
					}
				}
			})
		})
	}
}

// TestRegionDirtyFilter: a change reads only its own region's frames, and
// a change below a region's top that did not fall reads nothing; a move
// reads every watched region (it left one of them).
func TestRegionDirtyFilter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newRegionHarness(t, nil)
		for i := range 10 {
			h.applyIn(member(i), []string{"DE", "FR"}[i%2], int64(1000-100*i)) // DE: m000 m002 …; FR: m001 m003 …
		}
		de, fr := newReader(t), newReader(t)
		h.subscribeRegion(de, "DE", 2)
		h.subscribeRegion(fr, "FR", 2)
		reads := func(what string, want int64, act func()) {
			t.Helper()
			before := h.rs.regionTops.Load()
			act()
			h.settle()
			if d := h.rs.regionTops.Load() - before; d != want {
				t.Errorf("%s: %d region reads, want %d", what, d, want)
			}
		}
		reads("the first change seen", 2, func() { h.applyIn(member(9), "FR", 1) }) // no order known yet: every group
		reads("a change in DE's top", 1, func() { h.applyIn(member(2), "DE", 500) })
		reads("a rise below FR's top", 0, func() { h.applyIn(member(7), "FR", 1) })
		reads("a fall from FR's top", 1, func() { h.applyIn(member(1), "FR", -850) })
		reads("a move", 2, func() { h.applyIn(member(8), "FR", 0) })
		reads("a region nobody watches", 0, func() { h.applyIn("new", "SE", 5000) })
		de.drain()
		fr.drain()
		if err := regionTopMatches(h.st, de, "DE", 2); err != nil {
			t.Error(err)
		}
		if err := regionTopMatches(h.st, fr, "FR", 2); err != nil {
			t.Error(err)
		}
	})
}

// TestSubscribeRegionRefused: a region that is no ISO code (nor ZZ), or a
// board without regions (for a region's top or a region view), is a bad
// request and leaves no subscription.
func TestSubscribeRegionRefused(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newRegionHarness(t, nil)
		r := newReader(t)
		for _, c := range []struct{ board, region string }{{"g", ""}, {"g", "de"}, {"g", "XX"}, {"g", "DEU"}, {"plain", "DE"}} {
			err := h.e.SubscribeSpec(context.Background(), r.o, Spec{Board: c.board, Group: Group{Region, c.region}, Top: 5})
			if !errors.Is(err, rank.ErrBadRequest) {
				t.Errorf("region %q of %s: %v, want a bad request", c.region, c.board, err)
			}
		}
		if err := h.e.SubscribeSpec(context.Background(), r.o, Spec{Board: "plain", Member: "m", Around: 2, RegionView: true}); !errors.Is(err, rank.ErrBadRequest) {
			t.Errorf("a region view on a board without regions: %v, want a bad request", err)
		}
		if s := h.e.Stats(); s.Boards != 0 || s.TopSubs != 0 {
			t.Errorf("after refused subscribes: %+v, want nothing", s)
		}
		if n := r.o.pending(); n != 0 || len(r.o.events) != 0 {
			t.Errorf("refused subscribes left frames behind: %d pending, %d events", n, len(r.o.events))
		}
	})
}
