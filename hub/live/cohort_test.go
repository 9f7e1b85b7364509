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

// cohortStore is the memory store with three fixed cohorts on board "g"
// (m000, m003, … in "1"; m001, m004, … in "2"; the rest in "3"), so that
// the engine's cohort routing is tested apart from the engines' placement
// (the conformance suite's job): CohortTop and Ranks answer within the
// member's cohort, as the engines do on a cohort board.
type cohortStore struct {
	*countingStore
	cohortTops atomic.Int64
}

func cohortOf(member string) string {
	i, err := strconv.Atoi(member[1:])
	if err != nil {
		return "1"
	}
	return strconv.Itoa(i%3 + 1)
}

// cohortEntries is cohort c of the whole board, ranked within it.
func (s *cohortStore) cohortEntries(ctx context.Context, board string, p rank.PeriodSel, c string) (rank.Page, []rank.Entry, error) {
	all, err := s.countingStore.Store.Top(ctx, board, p, 0, 10000)
	if err != nil {
		return rank.Page{}, nil, err
	}
	var in []rank.Entry
	for _, e := range all.Entries {
		if cohortOf(e.Member) == c {
			e.Rank = int64(len(in) + 1) // boards here tie "first": ranks are positions
			in = append(in, e)
		}
	}
	return all, in, nil
}

func (s *cohortStore) CohortTop(ctx context.Context, board string, p rank.PeriodSel, c string, offset, limit int) (rank.Page, error) {
	s.cohortTops.Add(1)
	if c != "1" && c != "2" && c != "3" {
		return rank.Page{}, fmt.Errorf("fake: %w: no cohort %q", rank.ErrBadRequest, c)
	}
	all, in, err := s.cohortEntries(ctx, board, p, c)
	if err != nil {
		return rank.Page{}, err
	}
	pg := rank.Page{Board: board, Period: all.Period, Offset: offset, Seq: all.Seq, Total: int64(len(in))}
	pg.Entries = in[min(offset, len(in)):min(offset+limit, len(in))]
	return pg, nil
}

func (s *cohortStore) Ranks(ctx context.Context, board string, p rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	if around == rank.BoardRanks { // lists: the whole board's ranks
		return s.countingStore.Ranks(ctx, board, p, members, around)
	}
	s.ranks.Add(1)
	rs := rank.Ranks{Board: board}
	for _, m := range members {
		all, in, err := s.cohortEntries(ctx, board, p, cohortOf(m))
		if err != nil {
			return rank.Ranks{}, err
		}
		rs.Period, rs.Seq, rs.Total = all.Period, all.Seq, all.Total
		mr := rank.MemberRank{Member: m}
		if i := slices.IndexFunc(in, func(e rank.Entry) bool { return e.Member == m }); i >= 0 {
			mr.Found, mr.Rank, mr.Score, mr.Cohort = true, in[i].Rank, in[i].Score, cohortOf(m)
			mr.Around = in[max(0, i-around):min(len(in), i+around+1)]
		}
		rs.Members = append(rs.Members, mr)
	}
	return rs, nil
}

// newCohortHarness is newHarness over a cohortStore with board "g" of
// m000..m029 scoring 3000, 2900, … 100.
func newCohortHarness(t *testing.T) (*harness, *cohortStore) {
	t.Helper()
	ms, err := memstore.New(rank.Hooks{}, memstore.Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	cs := &cohortStore{countingStore: &countingStore{Store: ms}}
	h := &harness{t: t, st: cs.countingStore, clock: time.Now}
	h.e, err = New(Config{Store: cs, Interval: testInterval, Refresh: -1, Logger: slog.New(slog.NewTextHandler(testLogWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); h.e.Run(t.Context()) }()
	t.Cleanup(func() { <-done })
	b := rank.DefaultBoard("g")
	b.Cohort = rank.Cohort{Size: rank.MaxCohortSize} // valid cohort ids; the fake places members itself
	h.board(b)
	h.board(rank.DefaultBoard("plain"))
	for i := range 30 {
		h.apply("g", member(i), int64(3000-100*i), false)
	}
	return h, cs
}

// applyCohort applies a delta and reports its change as a cohort board's
// engine makes it: with the cohort, and ranks within it.
func (h *harness) applyCohort(cs *cohortStore, m string, delta int64) {
	h.t.Helper()
	rankIn := func() int64 { // uncounted: the tests count the engine's reads
		_, in, err := cs.cohortEntries(context.Background(), "g", "", cohortOf(m))
		if err != nil {
			h.t.Fatal(err)
		}
		return int64(slices.IndexFunc(in, func(e rank.Entry) bool { return e.Member == m }) + 1)
	}
	prev := rankIn()
	r := h.apply("g", m, delta, false)
	c := changeOf(r)
	c.Cohort, c.Rank, c.PrevRank = cohortOf(m), rankIn(), prev
	h.e.Changed([]rank.Change{c})
}

func (h *harness) subscribeCohort(r *reader, cohort string, top int, m string, around int) {
	h.t.Helper()
	if err := h.e.SubscribeCohort(context.Background(), r.o, "g", cohort, top, m, around); err != nil {
		h.t.Fatal(err)
	}
	firstFrames(r.o)
}

// cohortTopMatches compares the reader's latest top frame with cohort c's
// first n entries in the store.
func cohortTopMatches(st rank.Store, r *reader, c string, n int) error {
	p, err := st.CohortTop(context.Background(), "g", "", c, 0, n)
	if err != nil {
		return err
	}
	got, ok := r.top["g"]
	switch {
	case !ok:
		return errors.New("no top frame")
	case got.Cohort != c || got.Total != p.Total || !slices.Equal(got.Entries, proto.EntriesOf(p.Entries)):
		return fmt.Errorf("top frame (cohort %q, seq %d) = %v total %d; cohort %s (seq %d) has %v total %d",
			got.Cohort, got.Seq, got.Entries, got.Total, c, p.Seq, proto.EntriesOf(p.Entries), p.Total)
	}
	return nil
}

// TestCohortFramesFollowStore: subscribers of a cohort's top hold that
// cohort's standings after every round of random changes, the board's top
// subscribers the board's, and a view its member's window within its
// cohort; two subscribers of one (cohort, N) share one encoded frame.
func TestCohortFramesFollowStore(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h, cs := newCohortHarness(t)
		c2a, c2b, c3, global, viewer := newReader(t), newReader(t), newReader(t), newReader(t), newReader(t)
		h.subscribeCohort(c2a, "2", 4, "", 0)
		h.subscribeCohort(c2b, "2", 4, "", 0)
		h.subscribeCohort(c3, "3", 10, member(5), 1) // a cohort's top and a view on one subscription
		h.subscribe(global, "g", 5, "", 0)
		h.subscribe(viewer, "g", 0, member(9), 2) // m009 is in cohort 1
		check := func(round int) {
			t.Helper()
			for _, r := range []*reader{c2a, c2b, c3, global, viewer} {
				r.drain()
			}
			for _, e := range []error{
				cohortTopMatches(cs, c2a, "2", 4), cohortTopMatches(cs, c2b, "2", 4),
				cohortTopMatches(cs, c3, "3", 10), topMatches(cs, global, "g", 5),
				viewMatches(cs, viewer, "g", member(9), 2), viewMatches(cs, c3, "g", member(5), 1),
			} {
				if e != nil {
					t.Fatalf("round %d: %v", round, e)
				}
			}
			if a, b := c2a.raw["top/g"], c2b.raw["top/g"]; &a[0] != &b[0] {
				t.Fatalf("round %d: the subscribers of cohort 2's top got two encodings of one frame", round)
			}
		}
		h.settle()
		check(-1)
		rng := rand.New(rand.NewPCG(3, 30))
		for round := range 30 {
			for range 1 + rng.IntN(4) {
				h.applyCohort(cs, member(rng.IntN(36)), rng.Int64N(900)-300) // m030..m035 are new
			}
			h.settle()
			check(round)
		}
	})
}

// TestCohortDirtyFilter: a change reads only its own cohort's top frames,
// and does not read a view in another cohort whose window its score span
// crosses (a change there cannot move the view, §12).
func TestCohortDirtyFilter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h, cs := newCohortHarness(t)
		r2, rv := newReader(t), newReader(t)
		h.subscribeCohort(r2, "2", 3, "", 0)
		h.subscribe(rv, "g", 0, member(12), 1) // cohort 1: window m009..m015, scores 2100..1500
		h.applyCohort(cs, member(29), 1)       // the first change seen re-reads everything
		h.settle()
		tops, ranks := cs.cohortTops.Load(), cs.ranks.Load()

		// m013 (cohort 2) jumps from 1700 into cohort 2's top 3, through
		// m012's window score range.
		h.applyCohort(cs, member(13), 1000)
		h.settle()
		if d := cs.cohortTops.Load() - tops; d != 1 {
			t.Errorf("cohort 2's top read %d times after a change in it, want 1", d)
		}
		if d := cs.ranks.Load() - ranks; d != 0 {
			t.Errorf("a view in cohort 1 read %d times after a change in cohort 2, want 0", d)
		}
		tops, ranks = cs.cohortTops.Load(), cs.ranks.Load()

		// m015 (cohort 1) jumps over m012: its view, not cohort 2's top.
		h.applyCohort(cs, member(15), 1000)
		h.settle()
		if d := cs.cohortTops.Load() - tops; d != 0 {
			t.Errorf("cohort 2's top read %d times after a change in cohort 1, want 0", d)
		}
		if d := cs.ranks.Load() - ranks; d != 1 {
			t.Errorf("m012's view read %d times after a change in its cohort, want 1", d)
		}
		r2.drain()
		rv.drain()
		if err := cohortTopMatches(cs, r2, "2", 3); err != nil {
			t.Error(err)
		}
		if err := viewMatches(cs, rv, "g", member(12), 1); err != nil {
			t.Error(err)
		}
	})
}

// TestSubscribeCohortRefused: a malformed cohort id, one the board's
// config cannot have or a board without cohorts is a bad request and
// leaves no subscription behind.
func TestSubscribeCohortRefused(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h, _ := newCohortHarness(t)
		r := newReader(t)
		// Not a cohort of the board: refused before anything is sent.
		for _, c := range []struct{ board, cohort string }{{"g", ""}, {"g", "a b"}, {"g", "0"}, {"plain", "1"}} {
			err := h.e.SubscribeCohort(context.Background(), r.o, c.board, c.cohort, 5, "", 0)
			if !errors.Is(err, rank.ErrBadRequest) {
				t.Errorf("cohort %q of %s: %v, want a bad request", c.cohort, c.board, err)
			}
		}
		if s := h.e.Stats(); s.Boards != 0 || s.TopSubs != 0 {
			t.Errorf("after refused subscribes: %+v, want nothing", s)
		}
		if n := r.o.pending(); n != 0 || len(r.o.events) != 0 {
			t.Errorf("refused subscribes left frames behind: %d pending, %d events", n, len(r.o.events))
		}
		h.subscribeCohort(r, "1", 2, "", 0)
		h.e.Unsubscribe(r.o, "g")
		if s := h.e.Stats(); s.Boards != 0 || s.TopSubs != 0 {
			t.Errorf("after unsubscribe: %+v, want nothing", s)
		}
	})
}

// TestCohortFramesRealStore is TestCohortFramesFollowStore on the memory
// engine's own cohort placement: cohorts of 4 filling as members arrive,
// changes reported as the engine makes them (cohort ranks, the cohort).
func TestCohortFramesRealStore(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		b := rank.DefaultBoard("g")
		b.Cohort = rank.Cohort{Size: 4}
		h.board(b)
		rng := rand.New(rand.NewPCG(5, 50))
		report := func(m string, d int64) {
			r := h.apply("g", m, d, false)
			c := changeOf(r)
			c.Cohort = r.Cohort
			h.e.Changed([]rank.Change{c})
		}
		for i := range 10 {
			report(member(i), rng.Int64N(100))
		}
		type watch struct {
			r      *reader
			cohort string
			top    int
			member string
		}
		ws := []watch{{newReader(t), "1", 3, ""}, {newReader(t), "2", 4, member(5)}, {newReader(t), "3", 2, ""}, {newReader(t), "", 0, member(9)}}
		for _, w := range ws {
			around := 0
			if w.member != "" {
				around = 1
			}
			var err error
			if w.cohort != "" {
				err = h.e.SubscribeCohort(context.Background(), w.r.o, "g", w.cohort, w.top, w.member, around)
			} else {
				err = h.e.Subscribe(context.Background(), w.r.o, "g", 0, w.member, around)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		for round := range 30 {
			for range 1 + rng.IntN(5) {
				report(member(rng.IntN(14)), rng.Int64N(120)-40) // m010..m013 arrive later: cohorts 3 and 4
			}
			h.settle()
			for _, w := range ws {
				w.r.drain()
				if w.cohort != "" {
					if err := cohortTopMatches(h.st, w.r, w.cohort, w.top); err != nil {
						t.Fatalf("round %d: %v", round, err)
					}
				}
				if w.member != "" {
					if err := viewMatches(h.st, w.r, "g", w.member, 1); err != nil {
						t.Fatalf("round %d: %v", round, err)
					}
				}
			}
		}
	})
}

// TestCohortPeriodFinal: when a period of a cohort board becomes final, a
// cohort's subscriber gets that cohort's final standings once, with the
// period and the cohort, as the board's subscriber gets the board's (R19).
func TestCohortPeriodFinal(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{}, nil)
		time.Sleep(10 * time.Second) // past the grace of the period before the bubble's start
		b := rank.DefaultBoard("rounds")
		b.Reset = "1m"
		b.Grace = rank.Duration(5 * time.Second)
		b.Cohort = rank.Cohort{Size: 2}
		h.board(b)
		p0 := rank.PeriodAt(b, time.Now())
		for i, m := range []string{"ann", "bob", "cid"} {
			h.apply("rounds", m, int64(10+i), false) // ann and bob in cohort 1, cid in 2
		}
		c1, all := newReader(t), newReader(t)
		if err := h.e.SubscribeCohort(context.Background(), c1.o, "rounds", "1", 5, "", 0); err != nil {
			t.Fatal(err)
		}
		h.subscribe(all, "rounds", 5, "", 0)
		time.Sleep(time.Until(p0.End.Add(5 * time.Second)))
		h.settle()
		h.settle()
		c1.drain()
		all.drain()
		fs := c1.finals["rounds"]
		if len(fs) != 1 || fs[0].Cohort != "1" || fs[0].Period != p0.Index || fs[0].Total != 2 ||
			len(fs[0].Entries) != 2 || fs[0].Entries[0].Member != "bob" || fs[0].Entries[1].Member != "ann" {
			t.Fatalf("cohort 1's final frames %+v", fs)
		}
		if fs := all.finals["rounds"]; len(fs) != 1 || fs[0].Cohort != "" || fs[0].Total != 3 {
			t.Fatalf("the board's final frames %+v", fs)
		}
	})
}

// SubscribeCohort is SubscribeSpec with a cohort's top frames: the tests'
// shorthand.
func (e *Engine) SubscribeCohort(ctx context.Context, o *Outbox, board, cohort string, top int, member string, around int) error {
	if cohort == "" {
		return fmt.Errorf("live: subscribe %s: %w: empty cohort id", board, rank.ErrBadRequest)
	}
	return e.SubscribeSpec(ctx, o, Spec{Board: board, Group: Group{Cohort, cohort}, Top: top, Member: member, Around: around})
}
