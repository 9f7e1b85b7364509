package ranktest

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// integrityTests are the conformance of score integrity (§16, R35): claims
// for a board's hook, verdicts kept with the idempotency records, held
// members and flags.
var integrityTests = []struct {
	name string
	fn   func(t *testing.T, f Factory)
}{
	{"HookConfig", testHookConfig},
	{"HookClaim", testHookClaim},
	{"HookReject", testHookReject},
	{"HookClaimLapse", testHookClaimLapse},
	{"HookVerdictKept", testHookVerdictKept},
	{"HookTopK", testHookTopK},
	{"HoldFlag", testHoldFlag},
	{"HoldFlagsJump", testHoldFlagsJump},
	{"HoldFlagsGain", testHoldFlagsGain},
	{"HoldActions", testHoldActions},
	{"HoldPeriods", testHoldPeriods},
	{"HoldErase", testHoldErase},
	{"HoldRegions", testHoldRegions},
	{"HoldSelfMany", testHoldSelfMany},
	{"HoldBanned", testHoldBanned},
}

const hookSecret = "0123456789abcdef-secret"

// hooked is a board with a hook (every event when top is 0).
func hooked(id string, top int, mut func(b *rank.Board)) rank.Board {
	return board(id, func(b *rank.Board) {
		b.Hook = rank.Hook{URL: "https://hook.example/validate", Secret: hookSecret,
			Timeout: rank.Duration(rank.DefaultValidateTimeout), OnError: rank.OnErrorReject, Top: top}
		if mut != nil {
			mut(b)
		}
	})
}

// claimOf applies e and wants the store to claim it for the hook.
func claimOf(t *testing.T, s rank.Store, e rank.Event) *rank.ValidateError {
	t.Helper()
	r, err := rank.ApplyWait(t.Context(), s, e)
	var ve *rank.ValidateError
	if !errors.As(err, &ve) {
		t.Fatalf("Apply(%+v) = %+v, %v; want a claim for the hook", e, r, err)
	}
	if ve.Token == "" {
		t.Fatalf("claim of %+v has no token", e)
	}
	return ve
}

// applyHooked applies e, through its board's hook when the store claims it
// (accepted under the claim).
func applyHooked(t *testing.T, s rank.Store, e rank.Event) rank.Result {
	t.Helper()
	r, err := rank.ApplyWait(t.Context(), s, e)
	var ve *rank.ValidateError
	if errors.As(err, &ve) {
		return apply(t, s, verdict(e, rank.VerdictAccept, ve.Token, ""))
	}
	if err != nil {
		t.Fatalf("Apply(%+v): %v", e, err)
	}
	return r
}

// pending applies e and wants PendingError with a retry within the claim.
func pending(t *testing.T, s rank.Store, b rank.Board, e rank.Event) {
	t.Helper()
	r, err := rank.ApplyWait(t.Context(), s, e)
	var pe *rank.PendingError
	if !errors.As(err, &pe) || Kind(err) != "unavailable" {
		t.Fatalf("Apply(%+v) = %+v, %v; want pending", e, r, err)
	}
	if pe.RetryAfter() <= 0 || pe.RetryAfter() > b.ClaimFor() {
		t.Fatalf("pending retry %s, want within (0, %s]", pe.RetryAfter(), b.ClaimFor())
	}
}

func verdict(e rank.Event, v rank.Verdict, token, reason string) rank.Event {
	e.Verdict, e.Claim, e.Reason = v, token, reason
	return e
}

// testHookConfig: validate and flags parse strictly with their defaults,
// the store keeps the secret (the API leaves it out), and bad values or
// kinds of board are refused naming the field.
func testHookConfig(t *testing.T, f Factory) {
	s := f(t, nil)
	b, err := rank.ParseBoard("rt-hcfg", []byte(`{"validate":{"url":"https://h.example/v","secret":"`+hookSecret+`"},"flags":{"gain":{"points":500,"per":"1m"},"jump":100}}`))
	if err != nil {
		t.Fatalf("ParseBoard: %v", err)
	}
	if b.Hook.Timeout != rank.Duration(500*time.Millisecond) || b.Hook.OnError != rank.OnErrorReject || b.Hook.Top != 0 {
		t.Fatalf("defaults: %+v", b.Hook)
	}
	if b.Flags.Gain.Points != 500 || b.Flags.Gain.Per != rank.Duration(time.Minute) || b.Flags.Jump != 100 {
		t.Fatalf("flags: %+v", b.Flags)
	}
	put(t, s, b)
	got, err := s.GetBoard(t.Context(), b.ID)
	if err != nil || got.Hook.Secret != hookSecret || got != b {
		t.Fatalf("GetBoard: %+v, %v; want the config with its secret", got.Hook, err)
	}
	if w := got.WithoutSecrets(); w.Hook.Secret != "" || w.Hook.URL != b.Hook.URL {
		t.Fatalf("WithoutSecrets: %+v", w.Hook)
	}
	for _, tc := range []struct{ body, field string }{
		{`{"validate":{"url":"ftp://h.example","secret":"` + hookSecret + `"}}`, "validate"},
		{`{"validate":{"url":"https://h.example","secret":"short"}}`, "secret"},
		{`{"validate":{"url":"https://h.example","secret":"` + hookSecret + `","timeout":"5ms"}}`, "timeout"},
		{`{"validate":{"url":"https://h.example","secret":"` + hookSecret + `","timeout":"6s"}}`, "timeout"},
		{`{"validate":{"url":"https://h.example","secret":"` + hookSecret + `","on_error":"ignore"}}`, "on_error"},
		{`{"validate":{"url":"https://h.example","secret":"` + hookSecret + `","top":10001}}`, "top"},
		{`{"validate":{"url":"https://h.example","secret":"` + hookSecret + `","extra":1}}`, "extra"},
		{`{"flags":{"gain":{"points":5}}}`, "gain"},
		{`{"flags":{"gain":{"points":5,"per":"500ms"}}}`, "gain.per"},
		{`{"flags":{"gain":{"points":5,"per":"25h"}}}`, "gain.per"},
		{`{"flags":{"gain":{"points":0,"per":"1m"}}}`, "gain.points"},
		{`{"flags":{"jump":-1}}`, "jump"},
		{`{"flags":{"jump":1},"shards":2}`, "flags"},
		{`{"flags":{"jump":1},"cohort":{"size":10}}`, "flags"},
		{`{"validate":{"url":"https://h.example","secret":"` + hookSecret + `"},"decay":{"bucket":"1h","buckets":24,"factor":0.9}}`, "validate"},
	} {
		_, err := rank.ParseBoard("rt-hbad", []byte(tc.body))
		if !errors.Is(err, rank.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("ParseBoard(%s) = %v; want invalid_config naming %s", tc.body, err, tc.field)
		}
	}
	if _, err := s.PutBoard(t.Context(), hooked("rt-hsh", 0, func(b *rank.Board) { b.Shards = 2 })); Kind(err) != "invalid_config" {
		t.Fatalf("PutBoard of a sharded board with a hook: %v", err)
	}
	// A region board takes both: its engines hide a held entry in its
	// region's standings too (testHoldRegions).
	for _, body := range []string{
		`{"validate":{"url":"https://h.example","secret":"` + hookSecret + `"},"regions":true}`,
		`{"flags":{"jump":1,"gain":{"points":5,"per":"1m"}},"regions":true}`,
	} {
		rb, err := rank.ParseBoard("rt-hreg", []byte(body))
		if err != nil {
			t.Fatalf("ParseBoard(%s): %v", body, err)
		}
		put(t, s, rb)
	}
}

// testHookClaim: on a board whose hook sees every event, an event is
// claimed, not applied (nothing changes), with the member's entry as it is;
// a re-send meanwhile is pending and another payload conflicts; the
// claimer's verdict applies it once, and a re-send is its duplicate.
func testHookClaim(t *testing.T, f Factory) {
	s := f(t, nil)
	b := put(t, s, hooked("rt-hclaim", 0, nil))
	plain := put(t, s, board("rt-hplain", nil))
	apply(t, s, delta(plain.ID, "p1", "ann", 5)) // a board without a hook applies at once

	e := delta(b.ID, "e1", "ann", 10)
	ve := claimOf(t, s, e)
	if ve.Found || ve.Score != 0 || ve.Rank != 0 {
		t.Fatalf("claim of a new member: %+v", ve)
	}
	before := snapshot(t, s, b.ID)
	pending(t, s, b, e)
	applyErr(t, s, delta(b.ID, "e1", "ann", 11), rank.ErrIdempotencyConflict)
	pending(t, s, b, verdict(e, rank.VerdictAccept, ve.Token+"x", "")) // not the claimer's
	if got := snapshot(t, s, b.ID); got != before {
		t.Fatalf("a claim changed the board:\n%s\nwant\n%s", got, before)
	}
	r := apply(t, s, verdict(e, rank.VerdictAccept, ve.Token, ""))
	if r.Score != 10 || r.Rank != 1 || r.Duplicate || r.Held {
		t.Fatalf("accepted: %+v", r)
	}
	if d := apply(t, s, e); !d.Duplicate || d.Score != 10 || d.Seq != r.Seq {
		t.Fatalf("re-send after the verdict: %+v, want the duplicate of %+v", d, r)
	}
	if d := apply(t, s, verdict(e, rank.VerdictAccept, ve.Token, "")); !d.Duplicate {
		t.Fatalf("the verdict twice: %+v", d)
	}

	// A member with an entry: the hook hears it as it is now.
	apply(t, s, verdict(delta(b.ID, "e2", "bob", 30), rank.VerdictAccept, claimOf(t, s, delta(b.ID, "e2", "bob", 30)).Token, ""))
	ve = claimOf(t, s, delta(b.ID, "e3", "ann", 1))
	if !ve.Found || ve.Score != 10 || ve.Rank != 2 {
		t.Fatalf("claim of ann at 10, second: %+v", ve)
	}
	wantTop(t, s, b.ID, ent(1, "bob", 30), ent(2, "ann", 10))
}

// testHookReject: a rejected event changes nothing and counts toward
// nothing; every re-send gets the same rejection with its reason, another
// payload conflicts; a reject under a token that is not the claim's is
// not recorded.
func testHookReject(t *testing.T, f Factory) {
	s := f(t, nil)
	b := put(t, s, hooked("rt-hrej", 0, func(b *rank.Board) { b.MaxSubmissions = 1 }))
	e := delta(b.ID, "x1", "ann", 1000)
	ve := claimOf(t, s, e)
	if ok, err := s.Reject(t.Context(), e, ve.Token+"x", "nope"); ok || err != nil {
		t.Fatalf("Reject under another token: %v, %v", ok, err)
	}
	ok, err := s.Reject(t.Context(), e, ve.Token, "impossible run")
	if !ok || err != nil {
		t.Fatalf("Reject: %v, %v", ok, err)
	}
	for range 2 {
		_, err := rank.ApplyWait(t.Context(), s, e)
		var re *rank.RejectedError
		if !errors.As(err, &re) || re.Reason != "impossible run" || !errors.Is(err, rank.ErrRejected) {
			t.Fatalf("re-send of a rejected event: %v", err)
		}
	}
	applyErr(t, s, delta(b.ID, "x1", "ann", 5), rank.ErrIdempotencyConflict)
	wantTop(t, s, b.ID)
	// max_submissions 1: the rejected event did not count.
	e2 := delta(b.ID, "x2", "ann", 5)
	if r := apply(t, s, verdict(e2, rank.VerdictAccept, claimOf(t, s, e2).Token, "")); r.Score != 5 {
		t.Fatalf("the member's one event after a reject: %+v", r)
	}
}

// testHookClaimLapse: a claim nobody answers lapses after the hook's
// timeout and ClaimMargin; then the event is claimed anew, and the old
// claimer's verdict no longer applies it.
func testHookClaimLapse(t *testing.T, f Factory) {
	clk := NewClock(skewedAnchor())
	s := f(t, clk.Now)
	b := put(t, s, hooked("rt-hlapse", 0, nil))
	e := delta(b.ID, "l1", "ann", 3)
	first := claimOf(t, s, e)
	clk.Advance(b.ClaimFor() - time.Millisecond)
	pending(t, s, b, e)
	clk.Advance(2 * time.Millisecond)
	second := claimOf(t, s, e)
	if second.Token == first.Token {
		t.Fatalf("a new claim with the lapsed one's token %q", first.Token)
	}
	pending(t, s, b, verdict(e, rank.VerdictAccept, first.Token, ""))
	if ok, err := s.Reject(t.Context(), e, first.Token, "late"); ok || err != nil {
		t.Fatalf("Reject under the lapsed claim: %v, %v", ok, err)
	}
	if r := apply(t, s, verdict(e, rank.VerdictAccept, second.Token, "")); r.Score != 3 {
		t.Fatalf("the second claim's verdict: %+v", r)
	}
}

// testHookVerdictKept: a verdict whose event was then refused by a rule
// (here a ban put while the hook was called) is kept with the record, so
// a re-send is judged by it without a new claim.
func testHookVerdictKept(t *testing.T, f Factory) {
	s := f(t, nil)
	b := put(t, s, hooked("rt-hkept", 0, nil))
	e := delta(b.ID, "k1", "ann", 2)
	ve := claimOf(t, s, e)
	if _, err := s.BanMember(t.Context(), b.ID, rank.Ban{Member: "ann"}); err != nil {
		t.Fatalf("BanMember: %v", err)
	}
	applyErr(t, s, verdict(e, rank.VerdictFlag, ve.Token, "odd"), rank.ErrBanned)
	if err := s.LiftBan(t.Context(), b.ID, "ann"); err != nil {
		t.Fatalf("LiftBan: %v", err)
	}
	applyErr(t, s, delta(b.ID, "k1", "ann", 3), rank.ErrIdempotencyConflict)
	if r := apply(t, s, e); !r.Held || r.Hold != "odd" || r.Score != 2 { // the kept flag, no claim
		t.Fatalf("re-send after a kept verdict: %+v", r)
	}
}

// testHookTopK: with top K only events that take the member's score to
// the K-th shown score or better (or while fewer than K are shown) are
// claimed; the rest apply at once, as does an event that changes nothing.
func testHookTopK(t *testing.T, f Factory) {
	s := f(t, nil)
	b := put(t, s, hooked("rt-htop", 3, nil))
	accept := func(e rank.Event) rank.Result {
		t.Helper()
		return apply(t, s, verdict(e, rank.VerdictAccept, claimOf(t, s, e).Token, ""))
	}
	var g ids
	accept(delta(b.ID, g.next(), "a", 100)) // fewer than 3 shown: claimed
	accept(delta(b.ID, g.next(), "b", 90))
	accept(delta(b.ID, g.next(), "c", 80))
	if r := apply(t, s, delta(b.ID, g.next(), "d", 79)); r.Rank != 4 {
		t.Fatalf("below the 3rd: %+v", r)
	}
	accept(delta(b.ID, g.next(), "e", 80))        // equal to the 3rd: claimed
	accept(delta(b.ID, g.next(), "d", 50))        // 79 → 129
	apply(t, s, delta(b.ID, g.next(), "c", -1))   // 80 → 79: out of the top 3 (d 129, a 100, b 90)
	apply(t, s, delta(b.ID, g.next(), "zed", 89)) // new, below the 3rd
	claimOf(t, s, delta(b.ID, g.next(), "a", -5)) // 95 is still in the top 3
	wantTop(t, s, b.ID, ent(1, "d", 129), ent(2, "a", 100), ent(3, "b", 90), ent(4, "zed", 89), ent(5, "e", 80), ent(6, "c", 79))

	best := put(t, s, hooked("rt-htopbest", 1, func(b *rank.Board) { b.Mode = rank.Best }))
	accept(value(best.ID, g.next(), "a", 10))
	if r := apply(t, s, value(best.ID, g.next(), "a", 5)); r.Score != 10 {
		t.Fatalf("a best value that changes nothing: %+v", r)
	}
	asc := put(t, s, hooked("rt-htopasc", 1, func(b *rank.Board) { b.Mode = rank.Set; b.Order = rank.Asc }))
	accept(value(asc.ID, g.next(), "a", 60))
	if r := apply(t, s, value(asc.ID, g.next(), "b", 61)); r.Rank != 2 {
		t.Fatalf("asc, slower than the best: %+v", r)
	}
	claimOf(t, s, value(asc.ID, g.next(), "b", 59))
}

// wantSelf reads member as itself (SelfRanks) and wants it found at rk
// with score and around.
func wantSelf(t *testing.T, s rank.Store, boardID string, p rank.PeriodSel, member string, rk, score int64, around int, want ...rank.Entry) {
	t.Helper()
	rs, err := s.SelfRanks(t.Context(), boardID, p, []string{member}, around)
	if err != nil || len(rs.Members) != 1 {
		t.Fatalf("SelfRanks(%s): %+v, %v", member, rs, err)
	}
	m := rs.Members[0]
	if !m.Found || m.Rank != rk || m.Score != score {
		t.Fatalf("SelfRanks(%s) = %+v; want rank %d score %d", member, m, rk, score)
	}
	wantEntries(t, "self around of "+member, m.Around, want...)
}

// testHoldFlag: a flag verdict applies the event and holds the member: its
// entry leaves everyone's reads (the others close up) but its own
// (SelfRanks), its later events apply and say held, the queue lists it
// with the events since; a duplicate says held again.
func testHoldFlag(t *testing.T, f Factory) {
	start := skewedAnchor() // the flag's time: read once, the test may cross a second
	clk := NewClock(start)
	s := f(t, clk.Now)
	b := put(t, s, hooked("rt-hflag", 0, nil))
	accept := func(e rank.Event, v rank.Verdict, reason string) rank.Result {
		t.Helper()
		return apply(t, s, verdict(e, v, claimOf(t, s, e).Token, reason))
	}
	accept(delta(b.ID, "a1", "ann", 50), rank.VerdictAccept, "")
	accept(delta(b.ID, "b1", "bob", 30), rank.VerdictAccept, "")
	accept(delta(b.ID, "c1", "cy", 10), rank.VerdictAccept, "")
	flagged := delta(b.ID, "x1", "cheat", 40)
	r := accept(flagged, rank.VerdictFlag, "too fast")
	if r.Score != 40 || r.Rank != 2 || !r.Held || r.Hold != "too fast" {
		t.Fatalf("the flagged event: %+v", r)
	}
	if d := apply(t, s, flagged); !d.Duplicate || !d.Held || d.Hold != "" {
		t.Fatalf("its duplicate: %+v", d)
	}
	hidden(t, s, b.ID, "", "cheat", []string{"ann", "bob", "cy"}, []rank.Entry{ent(1, "ann", 50), ent(2, "bob", 30), ent(3, "cy", 10)})
	if n, err := s.Count(t.Context(), b.ID); err != nil || n != 3 {
		t.Fatalf("Count with a held member: %d, %v", n, err)
	}
	wantSelf(t, s, b.ID, "", "cheat", 2, 40, 1, ent(1, "ann", 50), ent(2, "cheat", 40), ent(3, "bob", 30))
	if rs, err := s.SelfRanks(t.Context(), b.ID, "", []string{"bob"}, 1); err != nil || rs.Members[0].Rank != 2 {
		t.Fatalf("SelfRanks of a shown member: %+v, %v (as Ranks)", rs, err)
	}

	clk.Advance(time.Second)
	r2 := accept(delta(b.ID, "x2", "cheat", 20), rank.VerdictAccept, "")
	if !r2.Held || r2.Hold != "" || r2.Score != 60 || r2.Rank != 1 || r2.PrevRank != 2 {
		t.Fatalf("the held member's next event: %+v", r2)
	}
	hidden(t, s, b.ID, "", "cheat", []string{"ann"}, []rank.Entry{ent(1, "ann", 50), ent(2, "bob", 30), ent(3, "cy", 10)})
	held, err := s.Held(t.Context(), b.ID, "")
	if err != nil || len(held) != 1 {
		t.Fatalf("Held: %+v, %v", held, err)
	}
	h := held[0]
	if h.Member != "cheat" || h.Reason != "too fast" || !h.At.Equal(start) || h.Score != 60 || !slices.Equal(h.Events, []string{"x1", "x2"}) {
		t.Fatalf("Held entry: %+v", h)
	}
	if err := s.ClearHold(t.Context(), b.ID, "ann", ""); !errors.Is(err, rank.ErrNotHeld) {
		t.Fatalf("ClearHold of a shown member: %v", err)
	}
	if err := s.ClearHold(t.Context(), b.ID, "cheat", ""); err != nil {
		t.Fatalf("ClearHold: %v", err)
	}
	wantTop(t, s, b.ID, ent(1, "cheat", 60), ent(2, "ann", 50), ent(3, "bob", 30), ent(4, "cy", 10))
	if held, _ := s.Held(t.Context(), b.ID, ""); len(held) != 0 {
		t.Fatalf("Held after the clear: %+v", held)
	}
	if r := accept(delta(b.ID, "x3", "cheat", 1), rank.VerdictAccept, ""); r.Held {
		t.Fatalf("an event after the clear: %+v", r)
	}
}

// testHoldFlagsJump: an applied event that improves a member's score by
// more than jump holds it (its own event included), whatever the order.
func testHoldFlagsJump(t *testing.T, f Factory) {
	s := f(t, nil)
	b := put(t, s, board("rt-hjump", func(b *rank.Board) { b.Flags.Jump = 100 }))
	apply(t, s, delta(b.ID, "a", "ann", 100)) // not more than 100
	if r := apply(t, s, delta(b.ID, "b", "ann", 101)); !r.Held || r.Hold != rank.HoldJump || r.Score != 201 {
		t.Fatalf("a jump of 101: %+v", r)
	}
	if r := apply(t, s, delta(b.ID, "c", "bob", -500)); r.Held {
		t.Fatalf("a fall: %+v", r)
	}
	wantTop(t, s, b.ID, ent(1, "bob", -500))
	asc := put(t, s, board("rt-hjumpasc", func(b *rank.Board) { b.Flags.Jump = 100; b.Mode = rank.Best; b.Order = rank.Asc }))
	apply(t, s, value(asc.ID, "a", "ann", 500))
	apply(t, s, value(asc.ID, "b", "ann", 400)) // 100 better: not more
	if r := apply(t, s, value(asc.ID, "c", "ann", 299)); !r.Held || r.Hold != rank.HoldJump {
		t.Fatalf("101 faster on an asc board: %+v", r)
	}
}

// testHoldFlagsGain: rises within per add up; past per they no longer
// count; a clear forgets them, so only a new gain holds again.
func testHoldFlagsGain(t *testing.T, f Factory) {
	clk := NewClock(skewedAnchor())
	s := f(t, clk.Now)
	b := put(t, s, board("rt-hgain", func(b *rank.Board) {
		b.Flags.Gain = rank.Gain{Points: 100, Per: rank.Duration(time.Minute)}
	}))
	for i, id := range []string{"a", "b", "c", "d"} {
		if r := apply(t, s, delta(b.ID, id, "ann", 25)); r.Held {
			t.Fatalf("rise %d of 25 within a minute: %+v", i+1, r)
		}
		clk.Advance(10 * time.Second)
	}
	apply(t, s, delta(b.ID, "e", "ann", -50)) // a fall takes nothing back
	if r := apply(t, s, delta(b.ID, "f", "ann", 1)); !r.Held || r.Hold != rank.HoldGain {
		t.Fatalf("101 within a minute: %+v", r)
	}
	if err := s.ClearHold(t.Context(), b.ID, "ann", ""); err != nil {
		t.Fatalf("ClearHold: %v", err)
	}
	if r := apply(t, s, delta(b.ID, "g", "ann", 1)); r.Held {
		t.Fatalf("after the clear, the old gains count again: %+v", r)
	}
	// Rises spread wider than per never add up past it.
	apply(t, s, delta(b.ID, "h1", "bob", 90))
	clk.Advance(2 * time.Minute)
	if r := apply(t, s, delta(b.ID, "h2", "bob", 90)); r.Held {
		t.Fatalf("90 and 90 two minutes apart: %+v", r)
	}
}

// testHoldActions: remove drops the held entry and its queue entry; a held
// member banned and then cleared stays hidden until the ban is lifted.
func testHoldActions(t *testing.T, f Factory) {
	s := f(t, nil)
	b := put(t, s, board("rt-hact", func(b *rank.Board) { b.Flags.Jump = 10 }))
	apply(t, s, delta(b.ID, "a", "ann", 5))
	apply(t, s, delta(b.ID, "b", "rm", 50))
	apply(t, s, delta(b.ID, "c", "bn", 60))
	if err := s.RemoveMember(t.Context(), b.ID, "rm", ""); err != nil {
		t.Fatalf("RemoveMember of a held member: %v", err)
	}
	if held, _ := s.Held(t.Context(), b.ID, ""); len(held) != 1 || held[0].Member != "bn" {
		t.Fatalf("Held after a removal: %+v", held)
	}
	if r := apply(t, s, delta(b.ID, "d", "rm", 1)); r.Score != 1 || r.PrevRank != 0 || r.Held {
		t.Fatalf("the removed member's next event: %+v", r)
	}
	if _, err := s.BanMember(t.Context(), b.ID, rank.Ban{Member: "bn", Reason: "cheat"}); err != nil {
		t.Fatalf("BanMember: %v", err)
	}
	if err := s.ClearHold(t.Context(), b.ID, "bn", ""); err != nil {
		t.Fatalf("ClearHold of a banned member: %v", err)
	}
	wantTop(t, s, b.ID, ent(1, "ann", 5), ent(2, "rm", 1))
	if err := s.LiftBan(t.Context(), b.ID, "bn"); err != nil {
		t.Fatalf("LiftBan: %v", err)
	}
	wantTop(t, s, b.ID, ent(1, "bn", 60), ent(2, "ann", 5), ent(3, "rm", 1))
}

// testHoldPeriods: a hold is the period's: the next period shows the
// member, the previous one keeps it held.
func testHoldPeriods(t *testing.T, f Factory) {
	anchor := skewedAnchor()
	clk := NewClock(anchor)
	s := f(t, clk.Now)
	b := put(t, s, board("rt-hper", func(b *rank.Board) { b.Reset = "1h"; b.Flags.Jump = 10 }))
	cur := rank.PeriodAt(b, anchor)
	clk.Set(cur.Start.Add(-time.Minute))
	apply(t, s, delta(b.ID, "a", "ann", 50))
	apply(t, s, delta(b.ID, "b", "bob", 5))
	clk.Set(anchor)
	if r := apply(t, s, delta(b.ID, "c", "ann", 5)); r.Held {
		t.Fatalf("a small rise in the next period: %+v", r)
	}
	wantTop(t, s, b.ID, ent(1, "ann", 5))
	wantEntries(t, "previous", all(t, s, b.ID, "previous").Entries, ent(1, "bob", 5))
	if held, _ := s.Held(t.Context(), b.ID, "previous"); len(held) != 1 || held[0].Member != "ann" {
		t.Fatalf("Held previous: %+v", held)
	}
	if held, _ := s.Held(t.Context(), b.ID, ""); len(held) != 0 {
		t.Fatalf("Held current: %+v", held)
	}
	wantSelf(t, s, b.ID, "previous", "ann", 1, 50, 0, ent(1, "ann", 50))
}

// testHoldErase: erasure removes a held member's entry and queue entry.
func testHoldErase(t *testing.T, f Factory) {
	s := f(t, nil)
	b := put(t, s, board("rt-herase", func(b *rank.Board) { b.Flags.Jump = 10 }))
	apply(t, s, delta(b.ID, "a", "gone", 50))
	x, err := s.Erase(t.Context(), "gone")
	if err != nil || x.Entries != 1 {
		t.Fatalf("Erase: %+v, %v", x, err)
	}
	if held, _ := s.Held(t.Context(), b.ID, ""); len(held) != 0 {
		t.Fatalf("Held after the erasure: %+v", held)
	}
	if r := apply(t, s, delta(b.ID, "a", "gone", 5)); r.Duplicate || r.Held {
		t.Fatalf("the erased member's old id: %+v", r)
	}
}

// wantSelfRegion reads member as itself (SelfRanks) and wants it found at
// board rank rk with score, in region at regionRank, and around.
func wantSelfRegion(t *testing.T, s rank.Store, boardID, member string, rk, score int64, region string, regionRank int64, around int, want ...rank.Entry) {
	t.Helper()
	wantSelf(t, s, boardID, "", member, rk, score, around, want...)
	rs, _ := s.SelfRanks(t.Context(), boardID, "", []string{member}, around)
	if m := rs.Members[0]; m.Region != region || m.RegionRank != regionRank {
		t.Fatalf("SelfRanks(%s) = %+v; want region %s rank %d", member, m, region, regionRank)
	}
}

// testHoldRegions: on a region board a held member leaves its region's
// standings in its holding event's step as it leaves the board's (the
// others close up in both); its own reads and acks show it where it would
// be, in the board and in its region, and its events while held move its
// placement (a country change) without showing it; clear puts it back in
// the region its last event placed it in, remove drops it there with its
// placement, and a ban then a clear keeps it hidden until the ban is
// lifted; a hook's flag holds it alike; a late event of a member held in
// the previous period moves it in that period's regions.
func testHoldRegions(t *testing.T, f Factory) {
	clk := NewClock(skewedAnchor())
	s := f(t, clk.Now)
	ctx := t.Context()
	b := put(t, s, regionBoard("rt-hrg", func(b *rank.Board) { b.Flags.Jump = 100 }))
	var g ids
	for _, x := range []struct {
		m, region string
		score     int64
	}{{"a", "DE", 50}, {"x", "FR", 40}, {"b", "DE", 30}, {"c", "DE", 10}} {
		apply(t, s, in(delta(b.ID, g.next(), x.m, x.score), x.region))
	}
	r := apply(t, s, in(delta(b.ID, g.next(), "cheat", 200), "DE"))
	if !r.Held || r.Hold != rank.HoldJump || r.Rank != 1 {
		t.Fatalf("a jump of 200: %+v", r)
	}
	wantRegionAck(t, "the holding event", r, "DE", 1, "")
	hidden(t, s, b.ID, "", "cheat", []string{"a", "b", "c", "x"}, []rank.Entry{ent(1, "a", 50), ent(2, "x", 40), ent(3, "b", 30), ent(4, "c", 10)})
	wantRegionTop(t, s, b.ID, "", "DE", ent(1, "a", 50), ent(2, "b", 30), ent(3, "c", 10))
	wantRegions(t, "cheat held", regionList(t, s, b.ID, ""), "DE:3 FR:1")
	if v := regionRanks(t, s, b.ID, "", 1, "cheat", "c"); v[0].Found || v[1].Rank != 3 || len(v[1].Around) != 2 {
		t.Fatalf("RegionRanks with cheat held: %+v", v)
	}
	if mr := one(t, s, b.ID, "c", 0); mr.Rank != 4 || mr.Region != "DE" || mr.RegionRank != 3 {
		t.Fatalf("Ranks(c) with cheat held: %+v, want rank 4, DE rank 3", mr)
	}
	wantSelfRegion(t, s, b.ID, "cheat", 1, 200, "DE", 1, 1, ent(1, "cheat", 200), ent(2, "a", 50))
	wantSelfRegion(t, s, b.ID, "b", 3, 30, "DE", 2, 0, ent(3, "b", 30)) // a shown member: as Ranks

	// Its events while held: ranked where it would be, still hidden.
	r = apply(t, s, in(delta(b.ID, g.next(), "cheat", -195), "DE"))
	if !r.Held || r.Hold != "" || r.Score != 5 || r.Rank != 5 || r.PrevRank != 1 {
		t.Fatalf("the held member's fall to 5: %+v", r)
	}
	wantRegionAck(t, "the held member's fall", r, "DE", 4, "")
	wantRegionTop(t, s, b.ID, "", "DE", ent(1, "a", 50), ent(2, "b", 30), ent(3, "c", 10))
	if err := s.ClearHold(ctx, b.ID, "cheat", ""); err != nil {
		t.Fatalf("ClearHold(cheat): %v", err)
	}
	wantRegionTop(t, s, b.ID, "", "DE", ent(1, "a", 50), ent(2, "b", 30), ent(3, "c", 10), ent(4, "cheat", 5))
	wantRegions(t, "cheat cleared", regionList(t, s, b.ID, ""), "DE:4 FR:1")
	if mr := one(t, s, b.ID, "cheat", 0); mr.Rank != 5 || mr.Region != "DE" || mr.RegionRank != 4 {
		t.Fatalf("Ranks(cheat) after the clear: %+v", mr)
	}

	// Held, then its country changes: its next event moves its placement
	// (not its standing); the clear puts it in its new region.
	apply(t, s, in(delta(b.ID, g.next(), "mover", 20), "DE"))
	if r := apply(t, s, in(delta(b.ID, g.next(), "mover", 150), "DE")); !r.Held || r.RegionRank != 1 {
		t.Fatalf("mover's jump: %+v", r)
	}
	r = apply(t, s, in(delta(b.ID, g.next(), "mover", 1), "FR"))
	if !r.Held || r.Score != 171 || r.Rank != 1 {
		t.Fatalf("mover's event in FR while held: %+v", r)
	}
	wantRegionAck(t, "mover's move while held", r, "FR", 1, "DE")
	wantRegionTop(t, s, b.ID, "", "DE", ent(1, "a", 50), ent(2, "b", 30), ent(3, "c", 10), ent(4, "cheat", 5))
	wantRegionTop(t, s, b.ID, "", "FR", ent(1, "x", 40))
	wantSelfRegion(t, s, b.ID, "mover", 1, 171, "FR", 1, 0, ent(1, "mover", 171))
	if err := s.ClearHold(ctx, b.ID, "mover", ""); err != nil {
		t.Fatalf("ClearHold(mover): %v", err)
	}
	wantRegionTop(t, s, b.ID, "", "FR", ent(1, "mover", 171), ent(2, "x", 40))
	wantRegionTop(t, s, b.ID, "", "DE", ent(1, "a", 50), ent(2, "b", 30), ent(3, "c", 10), ent(4, "cheat", 5))
	wantRegions(t, "mover cleared in FR", regionList(t, s, b.ID, ""), "DE:4 FR:2")

	// One event both moves a member and holds it: it leaves the region it
	// was in and does not show in the new one; the ack says both.
	apply(t, s, in(delta(b.ID, g.next(), "hop", 5), "DE"))
	r = apply(t, s, in(delta(b.ID, g.next(), "hop", 300), "FR"))
	if !r.Held || r.Hold != rank.HoldJump || r.Rank != 1 {
		t.Fatalf("hop's jump while moving: %+v", r)
	}
	wantRegionAck(t, "hop's move and hold", r, "FR", 1, "DE")
	wantRegionTop(t, s, b.ID, "", "FR", ent(1, "mover", 171), ent(2, "x", 40))
	wantRegions(t, "hop held", regionList(t, s, b.ID, ""), "DE:4 FR:2")
	// remove: its entry and placement go; its next event places it anew.
	if err := s.RemoveMember(ctx, b.ID, "hop", ""); err != nil {
		t.Fatalf("RemoveMember(hop): %v", err)
	}
	r = apply(t, s, in(delta(b.ID, g.next(), "hop", 1), "JP"))
	if r.Held || r.PrevRank != 0 || r.Score != 1 {
		t.Fatalf("hop after its removal: %+v", r)
	}
	wantRegionAck(t, "hop after its removal", r, "JP", 1, "")
	wantRegions(t, "hop anew", regionList(t, s, b.ID, ""), "DE:4 FR:2 JP:1")

	// ban (R21): banned then cleared, it stays out of its region until
	// the ban is lifted, then comes back to it.
	if r := apply(t, s, in(delta(b.ID, g.next(), "bn", 500), "JP")); !r.Held || r.RegionRank != 1 {
		t.Fatalf("bn's jump: %+v", r)
	}
	if _, err := s.BanMember(ctx, b.ID, rank.Ban{Member: "bn", Reason: "cheat"}); err != nil {
		t.Fatalf("BanMember(bn): %v", err)
	}
	if err := s.ClearHold(ctx, b.ID, "bn", ""); err != nil {
		t.Fatalf("ClearHold(bn): %v", err)
	}
	wantRegionTop(t, s, b.ID, "", "JP", ent(1, "hop", 1))
	if err := s.LiftBan(ctx, b.ID, "bn"); err != nil {
		t.Fatalf("LiftBan(bn): %v", err)
	}
	wantRegionTop(t, s, b.ID, "", "JP", ent(1, "bn", 500), ent(2, "hop", 1))
	wantRegions(t, "bn back", regionList(t, s, b.ID, ""), "DE:4 FR:2 JP:2")
	if held, err := s.Held(ctx, b.ID, ""); err != nil || len(held) != 0 {
		t.Fatalf("Held at the end: %+v, %v", held, err)
	}

	// A hook's flag holds a region board's member alike.
	hb := put(t, s, hooked("rt-hrgk", 0, func(b *rank.Board) { b.Regions = true }))
	applyHooked(t, s, in(delta(hb.ID, "1", "ann", 10), "DE"))
	e := in(delta(hb.ID, "2", "sneak", 20), "DE")
	r = apply(t, s, verdict(e, rank.VerdictFlag, claimOf(t, s, e).Token, "odd"))
	if !r.Held || r.Hold != "odd" {
		t.Fatalf("the flagged event: %+v", r)
	}
	wantRegionAck(t, "the flagged event", r, "DE", 1, "")
	wantRegionTop(t, s, hb.ID, "", "DE", ent(1, "ann", 10))
	if err := s.ClearHold(ctx, hb.ID, "sneak", ""); err != nil {
		t.Fatalf("ClearHold(sneak): %v", err)
	}
	wantRegionTop(t, s, hb.ID, "", "DE", ent(1, "sneak", 20), ent(2, "ann", 10))

	pb := put(t, s, regionBoard("rt-hrgp", func(b *rank.Board) {
		b.Reset, b.Retain, b.Grace, b.Flags.Jump = "1m", 1, rank.Duration(30*time.Second), 100
	}))
	p := rank.PeriodAt(pb, clk.Now())
	clk.Set(p.Start.Add(time.Second))
	apply(t, s, in(delta(pb.ID, "1", "a", 50), "DE"))
	if r := apply(t, s, in(delta(pb.ID, "2", "late", 200), "DE")); !r.Held {
		t.Fatalf("late's jump: %+v", r)
	}
	clk.Set(p.End.Add(10 * time.Second))
	apply(t, s, in(delta(pb.ID, "3", "now", 1), "DE"))
	e = in(delta(pb.ID, "4", "late", 1), "FR")
	e.At = p.End.Add(-time.Second)
	r = apply(t, s, e)
	if !r.Held || r.Period != p.Index || r.Score != 201 || r.Rank != 1 {
		t.Fatalf("late's late event: %+v, want held in period %d at 201", r, p.Index)
	}
	wantRegionAck(t, "late's late move", r, "FR", 1, "DE")
	wantRegionTop(t, s, pb.ID, "previous", "DE", ent(1, "a", 50))
	wantRegions(t, "late held, previous", regionList(t, s, pb.ID, "previous"), "DE:1")
	if err := s.ClearHold(ctx, pb.ID, "late", "previous"); err != nil {
		t.Fatalf("ClearHold(late, previous): %v", err)
	}
	wantRegionTop(t, s, pb.ID, "previous", "FR", ent(1, "late", 201))
	wantRegions(t, "late cleared, previous", regionList(t, s, pb.ID, "previous"), "DE:1 FR:1")
	wantRegions(t, "late cleared, current", regionList(t, s, pb.ID, ""), "DE:1")
}

// testHoldSelfMany: a self read of several held members at once shows each
// only itself among the shown entries (§16: a held member is in no one
// else's read), on a plain board and on a region board, where each one's
// region rank is also the one it would have alone.
func testHoldSelfMany(t *testing.T, f Factory) {
	s := f(t, nil)
	for _, regions := range []bool{false, true} {
		b := put(t, s, board("rt-hmany-"+strconv.FormatBool(regions), func(b *rank.Board) { b.Flags.Jump = 100; b.Regions = regions }))
		var g ids
		for _, x := range []struct {
			m     string
			score int64
		}{{"a", 50}, {"b", 30}, {"c", 10}, {"h1", 200}, {"h2", 150}} {
			r := apply(t, s, in(delta(b.ID, g.next(), x.m, x.score), "DE"))
			if r.Held != (x.score > 100) {
				t.Fatalf("%s: %+v", x.m, r)
			}
		}
		rs, err := s.SelfRanks(t.Context(), b.ID, "", []string{"h1", "h2", "b"}, 1)
		if err != nil || len(rs.Members) != 3 {
			t.Fatalf("SelfRanks(h1, h2, b) on %s: %+v, %v", b.ID, rs, err)
		}
		for i, w := range []struct {
			rk, score int64
			around    []rank.Entry
		}{
			{1, 200, []rank.Entry{ent(1, "h1", 200), ent(2, "a", 50)}},
			{1, 150, []rank.Entry{ent(1, "h2", 150), ent(2, "a", 50)}},
			{2, 30, []rank.Entry{ent(1, "a", 50), ent(2, "b", 30), ent(3, "c", 10)}},
		} {
			m := rs.Members[i]
			if !m.Found || m.Rank != w.rk || m.Score != w.score {
				t.Fatalf("SelfRanks on %s: %s = %+v; want rank %d score %d", b.ID, m.Member, m, w.rk, w.score)
			}
			wantEntries(t, "self around of "+m.Member+" on "+b.ID, m.Around, w.around...)
			if regions && (m.Region != "DE" || m.RegionRank != w.rk) {
				t.Fatalf("SelfRanks on %s: %s in %s at %d; want DE %d", b.ID, m.Member, m.Region, m.RegionRank, w.rk)
			}
		}
		hidden(t, s, b.ID, "", "h1", []string{"h2", "a", "b"}, []rank.Entry{ent(1, "a", 50), ent(2, "b", 30), ent(3, "c", 10)})
	}
}

// testHoldBanned: a member the hook's flag held and an admin then banned
// is in no read, its own included (R21), and still in the queue; when the
// ban is lifted it is still held: hidden from the others, seeing itself
// where it would be (in its region too), until the clear shows it. On a
// plain board and on a region board.
func testHoldBanned(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	for _, regions := range []bool{false, true} {
		b := put(t, s, hooked("rt-hban-"+strconv.FormatBool(regions), 0, func(b *rank.Board) { b.Regions = regions }))
		applyHooked(t, s, in(delta(b.ID, "1", "ann", 50), "DE"))
		applyHooked(t, s, in(delta(b.ID, "2", "bob", 30), "DE"))
		e := in(delta(b.ID, "3", "cheat", 40), "DE")
		if r := apply(t, s, verdict(e, rank.VerdictFlag, claimOf(t, s, e).Token, "odd")); !r.Held {
			t.Fatalf("the flagged event on %s: %+v", b.ID, r)
		}
		shown := []rank.Entry{ent(1, "ann", 50), ent(2, "bob", 30)}
		if _, err := s.BanMember(ctx, b.ID, rank.Ban{Member: "cheat", Reason: "cheat"}); err != nil {
			t.Fatalf("BanMember: %v", err)
		}
		hidden(t, s, b.ID, "", "cheat", []string{"ann", "bob"}, shown)
		if rs, err := s.SelfRanks(ctx, b.ID, "", []string{"cheat", "bob"}, 1); err != nil || rs.Members[0].Found || rs.Members[1].Rank != 2 {
			t.Fatalf("SelfRanks of a held member banned on %s: %+v, %v; want it absent", b.ID, rs, err)
		}
		if held, err := s.Held(ctx, b.ID, ""); err != nil || len(held) != 1 || held[0].Member != "cheat" {
			t.Fatalf("Held with the member banned on %s: %+v, %v", b.ID, held, err)
		}
		if err := s.LiftBan(ctx, b.ID, "cheat"); err != nil {
			t.Fatalf("LiftBan: %v", err)
		}
		hidden(t, s, b.ID, "", "cheat", []string{"ann", "bob"}, shown)
		if held, err := s.Held(ctx, b.ID, ""); err != nil || len(held) != 1 || held[0].Member != "cheat" || held[0].Score != 40 {
			t.Fatalf("Held after the lift on %s: %+v, %v", b.ID, held, err)
		}
		wantSelf(t, s, b.ID, "", "cheat", 2, 40, 1, ent(1, "ann", 50), ent(2, "cheat", 40), ent(3, "bob", 30))
		if regions {
			wantSelfRegion(t, s, b.ID, "cheat", 2, 40, "DE", 2, 0, ent(2, "cheat", 40))
			wantRegionTop(t, s, b.ID, "", "DE", shown...)
			wantRegions(t, "cheat held after the lift", regionList(t, s, b.ID, ""), "DE:2")
		}
		if err := s.ClearHold(ctx, b.ID, "cheat", ""); err != nil {
			t.Fatalf("ClearHold: %v", err)
		}
		wantTop(t, s, b.ID, ent(1, "ann", 50), ent(2, "cheat", 40), ent(3, "bob", 30))
		if regions {
			wantRegionTop(t, s, b.ID, "", "DE", ent(1, "ann", 50), ent(2, "cheat", 40), ent(3, "bob", 30))
		}
	}
}
