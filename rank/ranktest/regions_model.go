package ranktest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// regionModel is a region board written from §17 (and §16's holds by
// flags.jump) alone: each period's entries with their score, the seq at
// which they reached it, their region and whether they are held, ranked
// by sorting on every read.
type regionModel struct {
	cfg     rank.Board
	seq     int64
	periods map[int64]map[string]*rmEntry
	banned  map[string]bool
}

type rmEntry struct {
	member  string
	score   int64
	reached int64
	region  string
	held    bool // hidden from every read but its own (§16)
}

func newRegionModel(b rank.Board) *regionModel {
	return &regionModel{cfg: b, periods: map[int64]map[string]*rmEntry{}, banned: map[string]bool{}}
}

// apply is an event of e.Member to period idx; it returns the ack's region
// fields, the board rank and whether it is held, or ErrBanned. A held
// member's ranks are those it would have shown (its own reads').
func (m *regionModel) apply(e rank.Event, idx int64) (rank.Result, error) {
	if m.banned[e.Member] {
		return rank.Result{}, rank.ErrBanned
	}
	p := m.periods[idx]
	if p == nil {
		p = map[string]*rmEntry{}
		m.periods[idx] = p
	}
	m.seq++
	x := p[e.Member]
	r := rank.Result{Board: e.Board, Member: e.Member, Seq: m.seq, Period: idx, Region: rank.RegionOf(e.Region)}
	var old int64 // 0 without an entry, as the flags count a rise
	if x == nil {
		x = &rmEntry{member: e.Member, score: e.Amount, reached: m.seq, region: r.Region}
		p[e.Member] = x
	} else {
		old = x.score
		r.PrevRank, r.PrevScore, r.Had = m.rank(idx, x, ""), x.score, true
		next, _ := rank.Combine(m.cfg, true, x.score, e)
		if next != x.score {
			x.score, x.reached = next, m.seq
		}
		if x.region != r.Region {
			r.RegionFrom = x.region
		}
		x.region = r.Region
	}
	r.Score = x.score
	r.Rank = m.rank(idx, x, "")
	r.RegionRank = m.rank(idx, x, x.region)
	rise := x.score - old
	if m.cfg.Order == rank.Asc {
		rise = -rise
	}
	if j := m.cfg.Flags.Jump; j > 0 && !x.held && rise > j {
		x.held, r.Hold = true, rank.HoldJump
	}
	r.Held = x.held
	return r, nil
}

// sorted is period idx's shown entries of region ("" = all) in rank order,
// with held member self among them when it is not banned.
func (m *regionModel) sorted(idx int64, region, self string) []*rmEntry {
	var out []*rmEntry
	for _, x := range m.periods[idx] {
		if !m.banned[x.member] && (!x.held || x.member == self) && (region == "" || x.region == region) {
			out = append(out, x)
		}
	}
	slices.SortFunc(out, func(a, b *rmEntry) int {
		switch {
		case m.cfg.Better(a.score, b.score):
			return -1
		case m.cfg.Better(b.score, a.score):
			return 1
		}
		switch m.cfg.Tiebreak {
		case rank.First:
			return int(a.reached - b.reached)
		case rank.Last:
			return int(b.reached - a.reached)
		}
		// Shared ties list in the engines' order: member ids descending
		// (Redis's order of equal scores under its REV commands).
		return strings.Compare(b.member, a.member)
	})
	return out
}

// ranked is sorted's entries with their ranks.
func (m *regionModel) ranked(idx int64, region, self string) []rank.Entry {
	xs := m.sorted(idx, region, self)
	out := make([]rank.Entry, len(xs))
	for i, x := range xs {
		out[i] = rank.Entry{Rank: int64(i + 1), Member: x.member, Score: x.score}
		if m.cfg.Tiebreak == rank.Shared && i > 0 && x.score == xs[i-1].score {
			out[i].Rank = out[i-1].Rank
		}
	}
	return out
}

// rank is x's rank in period idx among region's entries ("" = all), as
// x itself sees it.
func (m *regionModel) rank(idx int64, x *rmEntry, region string) int64 {
	for _, e := range m.ranked(idx, region, x.member) {
		if e.Member == x.member {
			return e.Rank
		}
	}
	return 0
}

func (m *regionModel) regions(idx int64) []rank.RegionCount {
	counts := map[string]int64{}
	for _, x := range m.sorted(idx, "", "") {
		counts[x.region]++
	}
	return sortedRegions(counts)
}

// RegionDifferential plays seed's random steps on region boards of s
// (one per tiebreak, and two that hold members by flags.jump, with
// 1-minute periods on clk) and holds every ack and read equal to a
// model's: events whose members change country (also within a burst of
// events submitted together), holds and their clears, bans and lifts,
// removals and period boundaries.
func RegionDifferential(t *testing.T, s rank.Store, clk *Clock, seed uint64, steps int) {
	t.Helper()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(seed, 0x5e910))
	configs := []func(b *rank.Board){
		func(b *rank.Board) {},
		func(b *rank.Board) { b.Mode, b.Order, b.Tiebreak = rank.Set, rank.Asc, rank.Last },
		func(b *rank.Board) { b.Mode, b.Tiebreak = rank.Best, rank.Shared },
		func(b *rank.Board) { b.Flags.Jump = 3 },
		func(b *rank.Board) { b.Mode, b.Order, b.Tiebreak, b.Flags.Jump = rank.Set, rank.Asc, rank.Shared, 4 },
		// Another block writing for each event (history), without holds.
		func(b *rank.Board) { b.Tiebreak, b.History = rank.Last, 2 },
	}
	countries := []string{"DE", "FR", "", "JP", "BR"}
	for ci, mut := range configs {
		b := put(t, s, regionBoard(fmt.Sprintf("rt-rgd-%d-%d", seed, ci), func(b *rank.Board) {
			mut(b)
			b.Reset, b.Retain = "1m", 2
		}))
		m := newRegionModel(b)
		country := map[string]string{}
		var g ids
		members := make([]string, 30)
		for i := range members {
			members[i] = fmt.Sprintf("p%02d", i)
			country[members[i]] = countries[rng.IntN(len(countries))]
		}
		for step := range steps {
			member := members[rng.IntN(len(members))]
			switch k := rng.IntN(100); {
			case k < 8: // a profile's country changes
				country[member] = countries[rng.IntN(len(countries))]
			case k < 10:
				clk.Advance(time.Duration(20+rng.IntN(40)) * time.Second)
			case k < 12:
				banned := m.banned[member]
				var err error
				if banned {
					err = s.LiftBan(ctx, b.ID, member)
				} else {
					_, err = s.BanMember(ctx, b.ID, rank.Ban{Member: member})
				}
				if err != nil {
					t.Fatalf("step %d: ban %s (%t): %v", step, member, banned, err)
				}
				m.banned[member] = !banned
			case k < 13:
				idx := rank.PeriodAt(b, clk.Now()).Index
				err := s.RemoveMember(ctx, b.ID, member, "")
				_, had := m.periods[idx][member]
				if had != (err == nil) || (!had && !errors.Is(err, rank.ErrNoEntry)) {
					t.Fatalf("step %d: RemoveMember(%s) = %v; the model had an entry: %t", step, member, err, had)
				}
				delete(m.periods[idx], member)
			case k < 19 && b.Holds(): // a held member's clear (another's: not held)
				idx := rank.PeriodAt(b, clk.Now()).Index
				var held []string
				for _, x := range m.periods[idx] {
					if x.held {
						held = append(held, x.member)
					}
				}
				slices.Sort(held)
				if len(held) > 0 && rng.IntN(4) > 0 {
					member = held[rng.IntN(len(held))]
				}
				err := s.ClearHold(ctx, b.ID, member, "")
				x := m.periods[idx][member]
				if isHeld := x != nil && x.held; isHeld != (err == nil) || (!isHeld && !errors.Is(err, rank.ErrNotHeld)) {
					t.Fatalf("step %d: ClearHold(%s) = %v; the model's held: %t", step, member, err, isHeld)
				}
				if x != nil {
					x.held = false
				}
			default:
				// A burst: several events submitted at once by one
				// submitter, so a store may apply them in one call (the
				// same member twice, moving in between, included).
				burst := 1
				if rng.IntN(10) == 0 {
					burst = 2 + rng.IntN(6)
				}
				events := make([]rank.Event, burst)
				for k := range events {
					if k > 0 {
						member = members[rng.IntN(len(members))]
						if rng.IntN(3) == 0 {
							country[member] = countries[rng.IntN(len(countries))]
						}
					}
					amt := int64(rng.IntN(7))
					e := rank.Event{Board: b.ID, ID: g.next(), Member: member, Op: rank.OpValue, Amount: amt, Region: country[member], Submitter: 1}
					if b.Mode == rank.Incr {
						e.Op, e.Amount = rank.OpDelta, amt-2
					}
					events[k] = e
				}
				type outcome struct {
					r   rank.Result
					err error
				}
				outs := make([]chan outcome, burst)
				for k, e := range events {
					outs[k] = make(chan outcome, 1)
					s.Apply(ctx, e, func(r rank.Result, err error) { outs[k] <- outcome{r, err} })
				}
				idx := rank.PeriodAt(b, clk.Now()).Index
				for k, e := range events {
					o := <-outs[k]
					got, gerr := o.r, o.err
					want, werr := m.apply(e, idx)
					if !errors.Is(gerr, werr) && Kind(gerr) != Kind(werr) {
						t.Fatalf("step %d: %+v: error %v, model %v", step, e, gerr, werr)
					}
					if werr != nil {
						continue
					}
					got.Decimals, got.Duplicate, got.Cohort, got.Tier = 0, false, "", ""
					if got.Seq != 0 {
						got.Seq = want.Seq // the model counts its own events only
					}
					if got.PrevRank == 0 {
						got.PrevScore = 0
					}
					if got != want {
						t.Fatalf("step %d (%s), event %d of %d: %+v\n  ack   %+v\n  model %+v", step, b.ID, k+1, burst, e, got, want)
					}
				}
			}
			if step%25 == 0 || step == steps-1 {
				compareRegions(t, ctx, s, m, b, clk, members, fmt.Sprintf("step %d", step))
			}
		}
	}
}

// compareRegions holds every region read of the current and previous
// periods equal to the model's.
func compareRegions(t *testing.T, ctx context.Context, s rank.Store, m *regionModel, b rank.Board, clk *Clock, members []string, what string) {
	t.Helper()
	cur := rank.PeriodAt(b, clk.Now())
	for _, sel := range []rank.PeriodSel{"", "previous"} {
		idx := cur.Index
		if sel == "previous" {
			idx = rank.PeriodAt(b, cur.Start.Add(-time.Millisecond)).Index
		}
		at := fmt.Sprintf("%s, %s period %d", what, b.ID, idx)
		got := regionList(t, s, b.ID, sel)
		want := m.regions(idx)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: regions %v, model %v", at, got, want)
		}
		for _, rc := range want {
			pg := regionTop(t, s, b.ID, sel, rc.Region, 0, 100)
			wantEntries(t, at+" region "+rc.Region, pg.Entries, m.ranked(idx, rc.Region, "")...)
			if pg.Total != rc.Members {
				t.Fatalf("%s: region %s total %d, want %d", at, rc.Region, pg.Total, rc.Members)
			}
		}
		const around = 2
		views := regionRanks(t, s, b.ID, sel, around, members...)
		board := ranks(t, s, b.ID, sel, 0, members...).Members
		// As each member sees itself (§16): a held one alone (the gateway
		// reads one member at a time), the others together.
		var selfs []rank.MemberRank
		if b.Holds() {
			selfRead := func(ms []string) []rank.MemberRank {
				rs, err := s.SelfRanks(ctx, b.ID, sel, ms, around)
				if err != nil || len(rs.Members) != len(ms) {
					t.Fatalf("%s: SelfRanks(%v): %+v, %v", at, ms, rs, err)
				}
				return rs.Members
			}
			selfs = make([]rank.MemberRank, len(members))
			var shown []int
			var names []string
			for i, member := range members {
				if x := m.periods[idx][member]; x != nil && x.held {
					selfs[i] = selfRead([]string{member})[0]
				} else {
					shown, names = append(shown, i), append(names, member)
				}
			}
			for k, mr := range selfRead(names) {
				selfs[shown[k]] = mr
			}
		}
		for i, member := range members {
			x := m.periods[idx][member]
			if selfs != nil && x == nil && selfs[i].Found {
				t.Fatalf("%s: SelfRanks(%s) = %+v, the model has no entry", at, member, selfs[i])
			}
			if selfs != nil && x != nil && !m.banned[member] {
				rk, rr := m.rank(idx, x, ""), m.rank(idx, x, x.region)
				if v := selfs[i]; !v.Found || v.Rank != rk || v.Score != x.score || v.Region != x.region || v.RegionRank != rr {
					t.Fatalf("%s: SelfRanks(%s) = %+v, model rank %d, region %s rank %d (held %t)", at, member, v, rk, x.region, rr, x.held)
				}
				list := m.ranked(idx, "", member)
				pos := slices.IndexFunc(list, func(e rank.Entry) bool { return e.Member == member })
				lo, hi := max(0, pos-around), min(len(list), pos+around+1)
				wantEntries(t, at+" "+member+"'s own neighbours", selfs[i].Around, list[lo:hi]...)
			}
			if x == nil || m.banned[member] || x.held {
				if views[i].Found || board[i].Found {
					t.Fatalf("%s: %s found (%+v, %+v), the model has no shown entry", at, member, views[i], board[i])
				}
				continue
			}
			rr := m.rank(idx, x, x.region)
			if v := views[i]; !v.Found || v.Rank != rr || v.RegionRank != rr || v.Region != x.region || v.Score != x.score {
				t.Fatalf("%s: RegionRanks(%s) = %+v, model rank %d in %s", at, member, v, rr, x.region)
			}
			list := m.ranked(idx, x.region, "")
			pos := slices.IndexFunc(list, func(e rank.Entry) bool { return e.Member == member })
			lo, hi := max(0, pos-around), min(len(list), pos+around+1)
			wantEntries(t, at+" "+member+"'s region neighbours", views[i].Around, list[lo:hi]...)
			if mr := board[i]; mr.Region != x.region || mr.RegionRank != rr || mr.Rank != m.rank(idx, x, "") {
				t.Fatalf("%s: Ranks(%s) = %+v, model rank %d, region %s rank %d", at, member, mr, m.rank(idx, x, ""), x.region, rr)
			}
		}
	}
}
