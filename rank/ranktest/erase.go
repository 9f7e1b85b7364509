package ranktest

// Erasure and export of a member (docs/protocol.md §13, R29).

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/rank"
)

// EraseFixture is a store holding a member on every kind of board, as
// SetupErasure leaves it.
type EraseFixture struct {
	Member string
	Boards []string // every board, sorted
	// Entries is the member's sorted-set entries: one per board and
	// period it has a score in (shown or hidden).
	Entries int64
	// Old are request ids the member sent, by board: after an erasure
	// each is applied anew.
	Old map[string]string
	// Other is a member on every board that an erasure of Member leaves
	// as it was, with its score per board.
	Other       string
	OtherScores map[string]int64
}

// Erasure board ids (prefix "rt-er").
const (
	erDaily   = "rt-er-day"   // daily, history 3, meta, tiebreak first: two periods
	erBanned  = "rt-er-ban"   // the member banned here: its entry hidden
	erSharded = "rt-er-shard" // 3 shards, tiebreak first
	erHot     = "rt-er-hot"   // hot
	erSrcA    = "rt-er-a"     // sources of the union rt-er-u
	erSrcB    = "rt-er-b"
	erUnion   = "rt-er-u"
	erWinSrc  = "rt-er-wd"    // daily, the source of the window rt-er-w
	erWin     = "rt-er-w"     // a window of two periods
	erOther   = "rt-er-other" // only Other scores here
	erCohort  = "rt-er-co"    // cohorts of 2: the member and Other in cohort 1
	erLeague  = "rt-er-lg"    // daily league of cohorts of 2: the member promoted
	erRegion  = "rt-er-rg"    // daily regions: the member in DE, then FR (§17)
	erHold    = "rt-er-hold"  // a hook and a gain flag (§16): the member held, a reject, a claim
)

// EraseAnchor is a store time for SetupErasure's clock, hours away from
// the real clock.
func EraseAnchor() time.Time { return hotAnchor() }

// SetupErasure fills s (clock clk, which it moves) with member on a plain daily board with history and meta in two
// periods, a board that bans it, a sharded board, a hot board, two
// sources of a union, a daily source of a two-period window (two periods),
// a cohort board (member and other in cohort 1), a daily league board
// (member promoted out of the previous period's cohort, in silver now),
// a daily region board (member in DE in the previous period, FR in the
// current one), and a board where only other scores, plus a profile and a
// global ban.
// Every board holds other too.
func SetupErasure(t *testing.T, s rank.Store, clk *Clock, member, other string) EraseFixture {
	t.Helper()
	ctx := t.Context()
	fx := EraseFixture{Member: member, Other: other, Old: map[string]string{}, OtherScores: map[string]int64{}}
	grp := func(b *rank.Board) { b.Group = "rt-er" }
	// Caps (§18) count a member's points per period and per day.
	put(t, s, board(erDaily, func(b *rank.Board) {
		b.Reset, b.History, b.Cap = rank.Daily, 3, rank.Cap{Points: 1000, Per: rank.CapPeriod}
	}))
	put(t, s, board(erBanned, nil))
	put(t, s, board(erSharded, func(b *rank.Board) { b.Shards, b.Cap = 3, rank.Cap{Points: 1000, Per: rank.CapDay} }))
	hot := hotBoard(erHot, time.Hour, 3, 0.5)
	hot.Cap = rank.Cap{Points: 1000, Per: rank.CapDay}
	put(t, s, hot)
	put(t, s, board(erSrcA, grp))
	put(t, s, board(erSrcB, grp))
	if _, err := s.PutBoard(ctx, board(erUnion, func(b *rank.Board) {
		grp(b)
		b.Source = rank.UnionOf([]string{erSrcA, erSrcB}, nil)
	})); err != nil {
		t.Fatalf("PutBoard(%s): %v", erUnion, err)
	}
	put(t, s, board(erWinSrc, func(b *rank.Board) { grp(b); b.Reset = rank.Daily }))
	if _, err := s.PutBoard(ctx, board(erWin, func(b *rank.Board) {
		grp(b)
		b.Source = rank.WindowOf(erWinSrc, 2)
	})); err != nil {
		t.Fatalf("PutBoard(%s): %v", erWin, err)
	}
	put(t, s, board(erOther, nil))
	put(t, s, cohortBoard(erCohort, 2))
	lg := leagueBoard(erLeague, 2, 1, 1, "bronze", "silver")
	lg.Reset = rank.Daily
	put(t, s, lg)
	put(t, s, regionBoard(erRegion, func(b *rank.Board) { b.Reset = rank.Daily }))
	put(t, s, hooked(erHold, 0, func(b *rank.Board) { b.Flags.Gain = rank.Gain{Points: 1000, Per: rank.Duration(time.Hour)} }))
	fx.Boards = []string{erSrcA, erSrcB, erBanned, erCohort, erDaily, erHot, erHold, erLeague, erOther, erRegion, erSharded, erUnion, erWin, erWinSrc}
	slices.Sort(fx.Boards)

	anchor := clk.Now()
	cur := rank.PeriodAt(board(erDaily, func(b *rank.Board) { b.Reset = rank.Daily }), anchor)
	clk.Set(cur.Start.Add(-time.Minute)) // the previous period
	apply(t, s, withMeta(named(delta(erDaily, "old-prev", member, 4), "Eve"), meta.Meta(`{"car":"red"}`)))
	apply(t, s, delta(erWinSrc, "old-wprev", member, 4))
	// The league's previous period: member first of bronze-1, so promoted.
	apply(t, s, delta(erLeague, "old-lgprev", member, 5))
	apply(t, s, delta(erLeague, "o-lgprev", other, 1))
	apply(t, s, in(delta(erRegion, "old-rgprev", member, 4), "DE"))
	// Ten minutes into the day, so the hot board's hour buckets start on
	// the hour, and the previous period's event is still within its
	// idempotency window as it would be on a real clock.
	clk.Set(cur.Start.Add(10 * time.Minute))
	apply(t, s, withMeta(named(delta(erDaily, "old-day", member, 6), "Eve"), meta.Meta(`{"car":"blue"}`)))
	fx.Old[erDaily] = "old-day"
	for i, id := range []string{erBanned, erSharded, erHot, erSrcA, erSrcB, erWinSrc, erCohort, erLeague} {
		apply(t, s, named(delta(id, "old-"+id, member, int64(10+i)), "Eve"))
		fx.Old[id] = "old-" + id
	}
	apply(t, s, in(named(delta(erRegion, "old-"+erRegion, member, 9), "Eve"), "FR"))
	fx.Old[erRegion] = "old-" + erRegion
	if r := ranks(t, s, erLeague, "", 0, member).Members[0]; r.Tier != "silver" {
		t.Fatalf("%s on %s: tier %q, want silver (promoted)", member, erLeague, r.Tier)
	}
	// The hook board: held by a flag, a gain recorded, a reject, a claim
	// never answered.
	old := delta(erHold, "old-hold", member, 7)
	if r := apply(t, s, verdict(old, rank.VerdictFlag, claimOf(t, s, old).Token, "fixture")); !r.Held {
		t.Fatalf("the member's flagged event on %s: %+v", erHold, r)
	}
	fx.Old[erHold] = old.ID
	applyHooked(t, s, delta(erHold, "hold-2", member, 1))
	rej := delta(erHold, "hold-rej", member, 1)
	if ok, err := s.Reject(ctx, rej, claimOf(t, s, rej).Token, "no"); !ok || err != nil {
		t.Fatalf("Reject on %s: %v, %v", erHold, ok, err)
	}
	claimOf(t, s, delta(erHold, "hold-pend", member, 1))
	// The daily board's two periods, five boards, the union, the window's
	// source's two periods and three of the window's views: the previous
	// period's, the current one's and the next one's, which already holds
	// the current period's event; the cohort board, the league's two
	// periods, the region board's two; the hook board's held entry.
	fx.Entries = 2 + 5 + 1 + 2 + 3 + 1 + 2 + 2 + 1
	for i, id := range fx.Boards {
		if id == erUnion || id == erWin {
			continue
		}
		applyHooked(t, s, named(delta(id, "o-"+id, other, int64(100+i)), "Bob"))
		fx.OtherScores[id] = int64(100 + i)
	}
	fx.OtherScores[erUnion] = fx.OtherScores[erSrcA] + fx.OtherScores[erSrcB]
	fx.OtherScores[erWin] = fx.OtherScores[erWinSrc]
	ban, err := s.BanMember(ctx, erBanned, rank.Ban{Member: member, Reason: "cheat"})
	if err != nil {
		t.Fatalf("BanMember: %v", err)
	}
	// The API tells member.banned of a ban under a marker naming the board,
	// the member and the time; the delivery's body names the member too.
	if _, err := s.PutWebhook(ctx, rank.Webhook{ID: "rt-er-bans", URL: "https://hooks.example/bans", Secret: "0123456789abcdef",
		Events: []string{rank.EventMemberBanned}}); err != nil {
		t.Fatalf("PutWebhook: %v", err)
	}
	marker := fmt.Sprintf("banned|%s|%s|%d", erBanned, member, ban.At.UnixMilli())
	data, _ := json.Marshal(map[string]string{"member": member})
	if _, err := s.AppendOutbox(ctx, marker, rank.RetryFor, rank.OutboxEvent{Event: rank.EventMemberBanned, Board: erBanned, TS: ban.At, Data: data}); err != nil {
		t.Fatalf("AppendOutbox: %v", err)
	}
	if err := s.PutProfile(ctx, member, rank.Profile{Name: "Eve", Country: "FR"}); err != nil {
		t.Fatalf("PutProfile: %v", err)
	}
	return fx
}

// GlobalBan bans the fixture's member from every board (hiding its
// entries everywhere), the last step before an erasure.
func (fx EraseFixture) GlobalBan(t *testing.T, s rank.Store) {
	t.Helper()
	if _, err := s.PutGlobalBan(t.Context(), rank.Ban{Member: fx.Member, Reason: "gdpr"}); err != nil {
		t.Fatalf("PutGlobalBan: %v", err)
	}
}

// CheckErased checks that reads find the member nowhere, that other is as
// it was, and that each old request id is applied anew, from zero.
func (fx EraseFixture) CheckErased(t *testing.T, s rank.Store) {
	t.Helper()
	ctx := t.Context()
	m := fx.Member
	for _, id := range fx.Boards {
		for _, p := range []rank.PeriodSel{"", "previous"} {
			if id != erDaily && id != erLeague && id != erRegion && p != "" {
				continue
			}
			r := ranks(t, s, id, p, 0, m, fx.Other)
			if r.Members[0].Found {
				t.Fatalf("%s (%q) after the erasure: %s found %+v", id, p, m, r.Members[0])
			}
			for _, e := range all(t, s, id, p).Entries {
				if e.Member == m {
					t.Fatalf("top of %s (%q) after the erasure holds %s", id, p, m)
				}
			}
			if h := history(t, s, id, p, m); len(h) != 0 {
				t.Fatalf("history of %s on %s (%q) after the erasure: %s", m, id, p, fmtHistory(h))
			}
		}
		r := ranks(t, s, id, "", 0, fx.Other)
		want := fx.OtherScores[id]
		if id == erHot {
			want *= 1000 // thousandths
		}
		if !r.Members[0].Found || r.Members[0].Score != want {
			t.Fatalf("%s: %s is %+v after another's erasure, want score %d", id, fx.Other, r.Members[0], want)
		}
		bans, err := s.Bans(ctx, id)
		if err != nil {
			t.Fatalf("Bans(%s): %v", id, err)
		}
		for _, b := range bans {
			if b.Member == m {
				t.Fatalf("Bans(%s) after the erasure holds %+v", id, b)
			}
		}
	}
	gb, err := s.GlobalBans(ctx)
	if err != nil || len(gb) != 0 {
		t.Fatalf("GlobalBans after the erasure: %+v, %v; want none", gb, err)
	}
	if p, err := s.GetProfile(ctx, m); !errors.Is(err, rank.ErrNoProfile) {
		t.Fatalf("GetProfile after the erasure: %+v, %v; want ErrNoProfile", p, err)
	}
	x, err := s.Export(ctx, m)
	if err != nil {
		t.Fatalf("Export after the erasure: %v", err)
	}
	if x.Profile != nil || len(x.Entries)+len(x.History)+len(x.Bans) != 0 {
		t.Fatalf("Export after the erasure: %+v, want it empty", x)
	}
	// Its regions are gone with it (§17): other is alone, in ZZ.
	wantRegions(t, "after the erasure", regionList(t, s, erRegion, ""), "ZZ:1")
	wantRegions(t, "the previous period after the erasure", regionList(t, s, erRegion, "previous"), "")
	// Its earlier ids are forgotten: each is applied anew, from zero.
	for id, old := range fx.Old {
		r := applyHooked(t, s, delta(id, old, m, 3))
		want := int64(3)
		if id == erHot {
			want = 3000
		}
		if r.Duplicate || r.Score != want || r.PrevRank != 0 {
			t.Fatalf("%s: the old id %s after the erasure: %+v, want applied anew with score %d", id, old, r, want)
		}
	}
	fx.checkCohorts(t, s)
	wantHistory(t, s, erDaily, "", m, rank.HistoryEvent{ID: fx.Old[erDaily], Op: rank.OpDelta, Amount: 3, Score: 3, At: ms(t, s)})
	if r := ranks(t, s, erUnion, "", 0, m); !r.Members[0].Found || r.Members[0].Score != 6 {
		t.Fatalf("union after the old ids came again: %+v, want 6 (3 + 3, from zero)", r.Members[0])
	}
	if r := ranks(t, s, erWin, "", 0, m); !r.Members[0].Found || r.Members[0].Score != 3 {
		t.Fatalf("window after the old id came again: %+v, want 3 (the previous period's 4 erased)", r.Members[0])
	}
}

// checkCohorts, after the old ids came again: the member's cohort seats
// were erased, so it was placed anew, in a fresh seat (the one it had is
// not reused: a cohort never takes more than its size, R27) and, on the
// league, in the lowest tier (its promotion erased with it).
func (fx EraseFixture) checkCohorts(t *testing.T, s rank.Store) {
	t.Helper()
	m := fx.Member
	if r := ranks(t, s, erCohort, "", 0, m).Members[0]; r.Cohort != "2" {
		t.Fatalf("%s on %s after the erasure: cohort %q, want 2 (a fresh seat)", m, erCohort, r.Cohort)
	}
	if r := apply(t, s, delta(erCohort, "er-co-cid", "cid", 1)); r.Cohort != "2" {
		t.Fatalf("a new member after the erasure: cohort %q, want 2 (with %s)", r.Cohort, m)
	}
	for c, want := range map[string][]string{"1": {fx.Other}, "2": {m, "cid"}} {
		var got []string
		for _, e := range cohortTop(t, s, erCohort, "", c, 0, 10).Entries {
			got = append(got, e.Member)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("cohort %s of %s after the erasure holds %v, want %v", c, erCohort, got, want)
		}
	}
	if r := ranks(t, s, erLeague, "", 0, m).Members[0]; r.Tier != "bronze" || r.Cohort != "bronze-1" {
		t.Fatalf("%s on %s after the erasure: tier %q cohort %q, want bronze-1 (placed anew)", m, erLeague, r.Tier, r.Cohort)
	}
	if got := cohortTop(t, s, erLeague, "", "silver-1", 0, 10); got.Total != 0 {
		t.Fatalf("silver-1 of %s after the erasure: %+v, want it empty", erLeague, got.Entries)
	}
}

func ms(t *testing.T, s rank.Store) int64 {
	t.Helper()
	now, err := s.Now(t.Context())
	if err != nil {
		t.Fatalf("Now: %v", err)
	}
	return now.UnixMilli()
}

// testErase: R29 on every kind of board, by reads.
func testErase(t *testing.T, f Factory) {
	clk := NewClock(hotAnchor())
	s := f(t, clk.Now)
	ctx := t.Context()
	fx := SetupErasure(t, s, clk, "eve", "bob")
	apply(t, s, delta(erDaily, "z1", "zed", 1))
	fx.GlobalBan(t, s)

	got, err := s.Erase(ctx, "zed")
	if err != nil || !slices.Equal(got.Boards, []string{erDaily}) || got.Entries != 1 {
		t.Fatalf("Erase(zed) = %+v, %v; want the board %s and 1 entry", got, err, erDaily)
	}
	got, err = s.Erase(ctx, "eve")
	if err != nil || !got.Profile || !got.GlobalBan {
		t.Fatalf("Erase(eve) = %+v, %v; want its profile and global ban found", got, err)
	}
	// The global ban's copy is on every board, so every board changed.
	if !slices.Equal(got.Boards, fx.Boards) || got.Entries != fx.Entries {
		t.Fatalf("Erase(eve) = %+v; want boards %v and %d entries", got, fx.Boards, fx.Entries)
	}
	again, err := s.Erase(ctx, "eve")
	if err != nil || again.Found() {
		t.Fatalf("Erase twice = %+v, %v; want nothing found", again, err)
	}
	if none, err := s.Erase(ctx, "nobody"); err != nil || none.Found() || !none.Done {
		t.Fatalf("Erase(nobody) = %+v, %v; want nothing found, done", none, err)
	}
	// A member with a profile or a global ban only is found: the API
	// answers its erasure, and tells the webhooks.
	if err := s.PutProfile(ctx, "faceonly", rank.Profile{Name: "Face"}); err != nil {
		t.Fatalf("PutProfile: %v", err)
	}
	if got, err := s.Erase(ctx, "faceonly"); err != nil || !got.Profile || got.GlobalBan || !got.Found() {
		t.Fatalf("Erase(faceonly) = %+v, %v; want its profile found", got, err)
	}
	if _, err := s.PutGlobalBan(ctx, rank.Ban{Member: "banonly", Reason: "spam"}); err != nil {
		t.Fatalf("PutGlobalBan: %v", err)
	}
	if got, err := s.Erase(ctx, "banonly"); err != nil || !got.GlobalBan || got.Profile || !got.Found() {
		t.Fatalf("Erase(banonly) = %+v, %v; want its global ban found", got, err)
	}
	if _, err := s.Erase(ctx, "bad member"); !errors.Is(err, rank.ErrInvalidMember) {
		t.Fatalf("Erase(bad member): %v, want ErrInvalidMember", err)
	}
	fx.CheckErased(t, s)
}

// testEraseLeagueOpen: a league keeps the last period placed in until a
// later one is, however far past its retention, since its moves are still
// to be made: an erasure removes the member from it too, so the member's
// pending promotion goes with it (its next placement is in the lowest
// tier) and no other member's moves change.
func testEraseLeagueOpen(t *testing.T, f Factory) {
	clk := NewClock(hotAnchor())
	s := f(t, clk.Now)
	ctx := t.Context()
	lg := leagueBoard("rt-er-lgopen", 3, 1, 1, "bronze", "silver", "gold")
	lg.Reset = rank.Daily
	put(t, s, lg)
	for i, m := range []string{"eve", "bob", "cid"} {
		apply(t, s, delta(lg.ID, "e-"+m, m, int64(30-10*i)))
	}
	// Six days on, nobody having played since: the period is past the
	// kept ones, its moves (eve up, cid down to stay bronze) still pending.
	clk.Set(clk.Now().Add(6 * 24 * time.Hour))
	if kept := rank.KeptPeriods(lg, clk.Now()); slices.Contains(kept, rank.PeriodAt(lg, clk.Now().Add(-6*24*time.Hour)).Index) {
		t.Fatalf("the played period is still among the kept ones %v", kept)
	}
	tier := func(m string) string {
		t.Helper()
		tr, err := s.MemberTier(ctx, lg.ID, "", m)
		if err != nil {
			t.Fatalf("MemberTier(%s): %v", m, err)
		}
		return tr
	}
	if got := tier("eve"); got != "silver" {
		t.Fatalf("eve's next tier before the erasure: %q, want silver", got)
	}
	if e, err := s.Erase(ctx, "eve"); err != nil || !slices.Equal(e.Boards, []string{lg.ID}) || e.Entries != 1 {
		t.Fatalf("Erase = %+v, %v; want the board and its entry in the period kept for its moves", e, err)
	}
	if got := tier("eve"); got != "bronze" {
		t.Fatalf("eve's next tier after the erasure: %q, want bronze (its promotion erased)", got)
	}
	// The others' moves are those of the standings without eve: bob first
	// now, so up; cid last, staying in the lowest tier.
	if got := tier("bob"); got != "silver" {
		t.Fatalf("bob's next tier after eve's erasure: %q, want silver", got)
	}
	if r := apply(t, s, delta(lg.ID, "e2-eve", "eve", 1)); r.Tier != "bronze" {
		t.Fatalf("eve placed after the erasure: %+v, want bronze", r)
	}
	if r := apply(t, s, delta(lg.ID, "e2-bob", "bob", 1)); r.Tier != "silver" {
		t.Fatalf("bob placed after eve's erasure: %+v, want silver", r)
	}
}

// testExport: a member's export holds its entries with rank and meta, its
// history, bans and profile.
func testExport(t *testing.T, f Factory) {
	clk := NewClock(hotAnchor())
	s := f(t, clk.Now)
	ctx := t.Context()
	fx := SetupErasure(t, s, clk, "eve", "bob")
	x, err := s.Export(ctx, "eve")
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	if x.Member != "eve" || x.Profile == nil || x.Profile.Country != "FR" {
		t.Fatalf("Export: member %q profile %+v", x.Member, x.Profile)
	}
	b := board(erDaily, func(b *rank.Board) { b.Reset = rank.Daily })
	cur := rank.PeriodAt(b, clk.Now()).Index
	// entries lists x's entries as board/period/meta[/hidden], the period
	// relative to the current one, and checks the daily board's current
	// entry.
	entries := func(x rank.Export) []string {
		var got []string
		for _, e := range x.Entries {
			p := "0"
			if e.Period != 0 {
				p = fmt.Sprintf("%+d", e.Period-cur)
			}
			k := e.Board + "/" + p + "/" + string(e.Meta)
			if e.Hidden {
				k += "/hidden"
				if e.Rank != 0 {
					t.Fatalf("hidden entry %+v has a rank", e)
				}
			}
			got = append(got, k)
			if e.Board == erDaily && e.Period == cur && (e.Score != 6 || (!e.Hidden && e.Rank != 2)) {
				t.Fatalf("Export entry %+v: want score 6, rank 2 (bob has more)", e)
			}
			if e.Board == erHot && e.Score != 12_000 {
				t.Fatalf("Export entry %+v: want score 12.000 (thousandths)", e)
			}
		}
		slices.Sort(got)
		return got
	}
	visible := []string{erSrcA + "/0/", erSrcB + "/0/", erDaily + "/-1/" + `{"car":"red"}`,
		erDaily + "/+0/" + `{"car":"blue"}`, erHot + "/0/", erSharded + "/0/", erUnion + "/0/",
		erWinSrc + "/-1/", erWinSrc + "/+0/", erWin + "/-1/", erWin + "/+0/", erWin + "/+1/",
		erCohort + "/0/", erLeague + "/-1/", erLeague + "/+0/", erRegion + "/-1/", erRegion + "/+0/"}
	// The banned board's and the held entry (§16), without a rank.
	want := append(slices.Clone(visible), erBanned+"/0//hidden", erHold+"/0//hidden")
	slices.Sort(want)
	if got := entries(x); !slices.Equal(got, want) {
		t.Fatalf("Export entries %q, want %q", got, want)
	}
	// A cohort board's rank is within the cohort, which the entry names.
	var cohorts []string
	for _, e := range x.Entries {
		if e.Cohort != "" || e.Tier != "" {
			p := "0"
			if e.Period != 0 {
				p = fmt.Sprintf("%+d", e.Period-cur)
			}
			cohorts = append(cohorts, fmt.Sprintf("%s/%s/%s/%s/%d", e.Board, p, e.Cohort, e.Tier, e.Rank))
		}
	}
	slices.Sort(cohorts)
	if want := []string{erCohort + "/0/1//2", erLeague + "/+0/silver-1/silver/1", erLeague + "/-1/bronze-1/bronze/1"}; !slices.Equal(cohorts, want) {
		t.Fatalf("Export cohorts %q, want %q", cohorts, want)
	}
	// A region board's entries name the region and the rank there.
	var regions []string
	for _, e := range x.Entries {
		if e.Region != "" {
			regions = append(regions, fmt.Sprintf("%s/%+d/%s/%d", e.Board, e.Period-cur, e.Region, e.RegionRank))
		}
	}
	slices.Sort(regions)
	if want := []string{erRegion + "/+0/FR/1", erRegion + "/-1/DE/1"}; !slices.Equal(regions, want) {
		t.Fatalf("Export regions %q, want %q", regions, want)
	}
	if len(x.History) != 2 || x.History[0].ID == x.History[1].ID {
		t.Fatalf("Export history %+v, want the daily board's two events", x.History)
	}
	if len(x.Bans) != 1 || x.Bans[0].Board != erBanned || x.Bans[0].Reason != "cheat" {
		t.Fatalf("Export bans %+v, want the ban on %s", x.Bans, erBanned)
	}
	fx.GlobalBan(t, s)
	if x, err = s.Export(ctx, "eve"); err != nil || len(x.Bans) != 2 {
		t.Fatalf("Export after a global ban: bans %+v, %v; want the board's and the global one", x.Bans, err)
	}
	// Every entry hidden now, each with its score and meta.
	want = []string{erBanned + "/0//hidden", erHold + "/0//hidden"}
	for _, v := range visible {
		want = append(want, v+"/hidden")
	}
	slices.Sort(want)
	if got := entries(x); !slices.Equal(got, want) {
		t.Fatalf("Export entries after a global ban %q, want %q", got, want)
	}
	if x, err = s.Export(ctx, "nobody"); err != nil || x.Profile != nil || len(x.Entries)+len(x.History)+len(x.Bans) != 0 {
		t.Fatalf("Export(nobody) = %+v, %v; want empty", x, err)
	}
}
