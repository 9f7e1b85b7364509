package ranktest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/rank"
)

func testModes(t *testing.T, f Factory) {
	s := f(t, nil)
	type step struct {
		op     rank.Op
		amount int64
		want   int64
	}
	d := func(a, w int64) step { return step{rank.OpDelta, a, w} }
	v := func(a, w int64) step { return step{rank.OpValue, a, w} }
	cases := []struct {
		mode  rank.Mode
		order rank.Order
		steps []step
	}{
		{rank.Incr, rank.Desc, []step{d(5, 5), d(-3, 2), d(0, 2), d(-10, -8), d(8, 0)}},
		{rank.Incr, rank.Asc, []step{d(5, 5), d(-3, 2), d(0, 2), d(-10, -8)}},
		{rank.Best, rank.Desc, []step{v(5, 5), v(3, 5), v(8, 8), v(8, 8), v(-20, 8)}},
		{rank.Best, rank.Asc, []step{v(5, 5), v(8, 5), v(3, 3), v(-20, -20), v(0, -20)}},
		{rank.Best, rank.Desc, []step{v(-5, -5), v(-7, -5), v(-1, -1)}}, // a first value is taken as is
		{rank.Set, rank.Desc, []step{v(5, 5), v(3, 3), v(8, 8), v(-2, -2)}},
		{rank.Set, rank.Asc, []step{v(5, 5), v(8, 8), v(3, 3)}},
	}
	var g ids
	for i, tc := range cases {
		b := put(t, s, board(fmt.Sprintf("rt-modes-%d", i), func(b *rank.Board) { b.Mode = tc.mode; b.Order = tc.order }))
		for j, st := range tc.steps {
			r := apply(t, s, rank.Event{Board: b.ID, ID: g.next(), Member: "m", Op: st.op, Amount: st.amount})
			if r.Score != st.want || r.Rank != 1 || r.Seq != int64(j+1) {
				t.Fatalf("%s %s step %d (%d): result %+v, want score %d rank 1 seq %d", tc.mode, tc.order, j, st.amount, r, st.want, j+1)
			}
			wantTop(t, s, b.ID, ent(1, "m", st.want))
		}
	}
}

func testOrder(t *testing.T, f Factory) {
	s := f(t, nil)
	var g ids
	for _, o := range []rank.Order{rank.Desc, rank.Asc} {
		b := put(t, s, board("rt-order-"+string(o), func(b *rank.Board) { b.Order = o }))
		for _, m := range []struct {
			id string
			d  int64
		}{{"a", 1}, {"b", 3}, {"c", 2}, {"d", -4}} {
			apply(t, s, delta(b.ID, g.next(), m.id, m.d))
		}
		if o == rank.Desc {
			wantTop(t, s, b.ID, ent(1, "b", 3), ent(2, "c", 2), ent(3, "a", 1), ent(4, "d", -4))
		} else {
			wantTop(t, s, b.ID, ent(1, "d", -4), ent(2, "a", 1), ent(3, "c", 2), ent(4, "b", 3))
		}
	}
}

// script applies "member:delta" steps to an incr board and checks each
// result's rank.
func script(t *testing.T, s rank.Store, g *ids, boardID string, steps ...string) {
	t.Helper()
	for _, st := range steps {
		var m string
		var d, wantRank int64
		if _, err := fmt.Sscanf(strings.ReplaceAll(st, ":", " "), "%s %d %d", &m, &d, &wantRank); err != nil {
			t.Fatalf("bad step %q: %v", st, err)
		}
		if r := apply(t, s, delta(boardID, g.next(), m, d)); r.Rank != wantRank {
			t.Fatalf("%s: step %s: rank %d, want %d (result %+v)", boardID, st, r.Rank, wantRank, r)
		}
	}
}

// tieSteps are the steps of the tie tests for order o: c arrives at 10 from
// a worse score, a moves to a better score and back.
func tieSteps(o rank.Order) (worse, toTen, better string) {
	if o == rank.Desc {
		return "5", "5", "1"
	}
	return "15", "-5", "-1"
}

func testTieFirst(t *testing.T, f Factory) {
	s := f(t, nil)
	var g ids
	for _, o := range []rank.Order{rank.Desc, rank.Asc} {
		b := put(t, s, board("rt-first-"+string(o), func(b *rank.Board) { b.Order = o }))
		w, ten, up := tieSteps(o)
		// member:delta:rank-after
		script(t, s, &g, b.ID, "a:10:1", "b:10:2", "c:"+w+":3", "c:"+ten+":3")
		wantTop(t, s, b.ID, ent(1, "a", 10), ent(2, "b", 10), ent(3, "c", 10))
		// a leaves 10 and comes back: it reached 10 anew, after b and c.
		script(t, s, &g, b.ID, "a:"+up+":1", "a:"+neg(up)+":3", "d:10:4")
		wantTop(t, s, b.ID, ent(1, "b", 10), ent(2, "c", 10), ent(3, "a", 10), ent(4, "d", 10))
		if m := one(t, s, b.ID, "c", 1); m.Rank != 2 {
			t.Fatalf("Ranks(c) = %+v, want rank 2", m)
		}
	}
}

func neg(d string) string {
	if strings.HasPrefix(d, "-") {
		return d[1:]
	}
	return "-" + d
}

func testTieLast(t *testing.T, f Factory) {
	s := f(t, nil)
	var g ids
	for _, o := range []rank.Order{rank.Desc, rank.Asc} {
		b := put(t, s, board("rt-last-"+string(o), func(b *rank.Board) { b.Order = o; b.Tiebreak = rank.Last }))
		w, ten, up := tieSteps(o)
		script(t, s, &g, b.ID, "a:10:1", "b:10:1", "c:"+w+":3", "c:"+ten+":1")
		wantTop(t, s, b.ID, ent(1, "c", 10), ent(2, "b", 10), ent(3, "a", 10))
		script(t, s, &g, b.ID, "a:"+up+":1", "a:"+neg(up)+":1", "d:10:1")
		wantTop(t, s, b.ID, ent(1, "d", 10), ent(2, "a", 10), ent(3, "c", 10), ent(4, "b", 10))
	}
}

func testTieShared(t *testing.T, f Factory) {
	s := f(t, nil)
	var g ids
	desc := put(t, s, board("rt-shared-desc", func(b *rank.Board) { b.Tiebreak = rank.Shared }))
	script(t, s, &g, desc.ID, "a:10:1", "b:10:1", "c:5:3", "d:10:1", "Z:10:1")
	// Equal scores list by member id in descending byte order ('Z' < 'a').
	wantTop(t, s, desc.ID, ent(1, "d", 10), ent(1, "b", 10), ent(1, "a", 10), ent(1, "Z", 10), ent(5, "c", 5))
	m := one(t, s, desc.ID, "a", 1)
	if !m.Found || m.Rank != 1 || m.Score != 10 {
		t.Fatalf("Ranks(a) = %+v", m)
	}
	wantEntries(t, "around a", m.Around, ent(1, "b", 10), ent(1, "a", 10), ent(1, "Z", 10))
	// A page starting inside a group of equal scores keeps the shared rank.
	wantEntries(t, "page 2..3", top(t, s, desc.ID, "", 2, 3).Entries, ent(1, "a", 10), ent(1, "Z", 10), ent(5, "c", 5))
	script(t, s, &g, desc.ID, "c:6:1", "b:1:1", "a:-1:5")
	wantTop(t, s, desc.ID, ent(1, "c", 11), ent(1, "b", 11), ent(3, "d", 10), ent(3, "Z", 10), ent(5, "a", 9))

	asc := put(t, s, board("rt-shared-asc", func(b *rank.Board) { b.Tiebreak = rank.Shared; b.Order = rank.Asc }))
	script(t, s, &g, asc.ID, "a:10:1", "b:10:1", "c:5:1", "d:10:2")
	wantTop(t, s, asc.ID, ent(1, "c", 5), ent(2, "d", 10), ent(2, "b", 10), ent(2, "a", 10))
}

func testTieKept(t *testing.T, f Factory) {
	s := f(t, nil)
	var g ids
	type ev struct {
		m string
		a int64
	}
	run := func(b rank.Board, evs []ev, want ...rank.Entry) {
		t.Helper()
		put(t, s, b)
		op := rank.OpDelta
		if b.Mode != rank.Incr {
			op = rank.OpValue
		}
		for i, e := range evs {
			r := apply(t, s, rank.Event{Board: b.ID, ID: g.next(), Member: e.m, Op: op, Amount: e.a})
			if r.Seq != int64(i+1) {
				t.Fatalf("%s: event %d got seq %d: every applied event takes a seq", b.ID, i, r.Seq)
			}
		}
		wantTop(t, s, b.ID, want...)
	}
	run(board("rt-kept-incr", nil), []ev{{"a", 10}, {"b", 10}, {"a", 0}}, ent(1, "a", 10), ent(2, "b", 10))
	run(board("rt-kept-best", func(b *rank.Board) { b.Mode = rank.Best }),
		[]ev{{"a", 10}, {"b", 10}, {"a", 5}, {"a", 10}}, ent(1, "a", 10), ent(2, "b", 10))
	run(board("rt-kept-best-asc", func(b *rank.Board) { b.Mode = rank.Best; b.Order = rank.Asc }),
		[]ev{{"a", 10}, {"b", 10}, {"a", 12}, {"a", 10}}, ent(1, "a", 10), ent(2, "b", 10))
	run(board("rt-kept-set", func(b *rank.Board) { b.Mode = rank.Set }),
		[]ev{{"a", 10}, {"b", 10}, {"a", 10}}, ent(1, "a", 10), ent(2, "b", 10))
	run(board("rt-kept-last", func(b *rank.Board) { b.Tiebreak = rank.Last }),
		[]ev{{"a", 10}, {"b", 10}, {"a", 0}, {"b", 0}}, ent(1, "b", 10), ent(2, "a", 10))
}

func testResultFields(t *testing.T, f Factory) {
	s := f(t, nil)
	b := put(t, s, rank.DefaultBoard("rt-result"))
	steps := []struct {
		e    rank.Event
		want rank.Result
	}{
		{delta(b.ID, "e1", "a", 10), rank.Result{Score: 10, Rank: 1, Seq: 1}},
		{delta(b.ID, "e2", "b", 20), rank.Result{Score: 20, Rank: 1, Seq: 2}},
		{delta(b.ID, "e3", "a", 15), rank.Result{Score: 25, Rank: 1, PrevRank: 2, PrevScore: 10, Had: true, Seq: 3}},
		{delta(b.ID, "e4", "b", 0), rank.Result{Score: 20, Rank: 2, PrevRank: 2, PrevScore: 20, Had: true, Seq: 4}},
		{delta(b.ID, "e5", "c", -5), rank.Result{Score: -5, Rank: 3, Seq: 5}},
		{delta(b.ID, "e6", "c", 30), rank.Result{Score: 25, Rank: 2, PrevRank: 3, PrevScore: -5, Had: true, Seq: 6}},
	}
	for i, st := range steps {
		if i == 4 {
			// A failed event between two applied ones does not take a seq.
			applyErr(t, s, delta(b.ID, "bad", "c", rank.MaxScore+1), rank.ErrInvalidScore)
		}
		want := st.want
		want.Board, want.Member = b.ID, st.e.Member
		if got := apply(t, s, st.e); got != want {
			t.Fatalf("Apply(%s) = %+v\nwant %+v", st.e.ID, got, want)
		}
	}
	if pg := top(t, s, b.ID, "", 0, 10); pg.Seq != 6 || pg.Board != b.ID || pg.Period != 0 {
		t.Fatalf("page after six events: seq %d board %q period %d", pg.Seq, pg.Board, pg.Period)
	}
	if rs := ranks(t, s, b.ID, "", 0, "a"); rs.Seq != 6 || rs.Total != 3 || rs.Board != b.ID {
		t.Fatalf("ranks after six events: %+v", rs)
	}
}

func testIdempotency(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	b := put(t, s, rank.DefaultBoard("rt-idem"))
	other := put(t, s, rank.DefaultBoard("rt-idem-other"))

	first := apply(t, s, named(delta(b.ID, "x", "a", 5), "Alice"))
	apply(t, s, delta(b.ID, "y", "b", 7)) // a falls to rank 2
	before := snapshot(t, s, b.ID)

	// A retry gets the first result even though the board has moved on, and
	// its display name is not part of the payload.
	for _, name := range []string{"Alice", "Mallory", ""} {
		dup := apply(t, s, named(delta(b.ID, "x", "a", 5), name))
		want := first
		want.Duplicate = true
		if dup != want {
			t.Fatalf("retry with name %q = %+v\nwant %+v", name, dup, want)
		}
	}
	if r, err := rank.ApplyWait(ctx, s, delta(b.ID, "x", "a", 6)); !errors.Is(err, rank.ErrIdempotencyConflict) {
		t.Fatalf("same id, another amount = %+v, %v; want ErrIdempotencyConflict", r, err)
	}
	if after := snapshot(t, s, b.ID); after != before {
		t.Fatalf("duplicates or conflicts changed the board:\n%s\nwant\n%s", after, before)
	}
	if m := one(t, s, b.ID, "a", 0); m.Name != "Alice" {
		t.Fatalf("a duplicate changed the name to %q", m.Name)
	}

	// Ids are scoped to a board.
	if r := apply(t, s, delta(other.ID, "x", "a", 1)); r.Duplicate || r.Seq != 1 {
		t.Fatalf("same id on another board: %+v", r)
	}
	// A failed event does not record its id.
	applyErr(t, s, value(b.ID, "z", "a", 1), rank.ErrBadRequest)
	applyErr(t, s, delta(b.ID, "z", "a", rank.MaxScore), rank.ErrOutOfRange)
	if r := apply(t, s, delta(b.ID, "z", "a", 1)); r.Duplicate || r.Score != 6 || r.Seq != 3 {
		t.Fatalf("id of failed events reused: %+v", r)
	}
}

// testIdempotencyPerMember is issue 17 item 0 as it was reported: ids are
// keyed by (board, member, id) (R4 v1.1), so mallory sending alice's next
// id first neither blocks alice's event nor turns it into a duplicate.
func testIdempotencyPerMember(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	b := put(t, s, rank.DefaultBoard("rt-arena"))

	m1 := apply(t, s, delta(b.ID, "alice-1", "mallory", 0))
	if m1.Duplicate || m1.Seq != 1 || m1.Member != "mallory" {
		t.Fatalf("mallory's alice-1 = %+v", m1)
	}
	a1 := apply(t, s, delta(b.ID, "alice-1", "alice", 5))
	if a1.Duplicate || a1.Seq != 2 || a1.Score != 5 || a1.Rank != 1 || a1.Member != "alice" {
		t.Fatalf("alice's alice-1 after mallory's = %+v; want applied (seq 2, score 5, rank 1)", a1)
	}
	// Each member's id is its own: a retry of either is that member's
	// duplicate, another payload under either is that member's conflict.
	for _, tc := range []struct {
		e    rank.Event
		want rank.Result
	}{
		{delta(b.ID, "alice-1", "mallory", 0), m1},
		{delta(b.ID, "alice-1", "alice", 5), a1},
	} {
		want := tc.want
		want.Duplicate = true
		if got := apply(t, s, tc.e); got != want {
			t.Fatalf("retry of %s's %s = %+v\nwant %+v", tc.e.Member, tc.e.ID, got, want)
		}
	}
	before := snapshot(t, s, b.ID)
	for _, e := range []rank.Event{
		delta(b.ID, "alice-1", "alice", 6),
		delta(b.ID, "alice-1", "mallory", 1),
	} {
		if r, err := rank.ApplyWait(ctx, s, e); !errors.Is(err, rank.ErrIdempotencyConflict) {
			t.Fatalf("Apply(%+v) = %+v, %v; want ErrIdempotencyConflict", e, r, err)
		}
	}
	if after := snapshot(t, s, b.ID); after != before {
		t.Fatalf("conflicts changed the board:\n%s\nwant\n%s", after, before)
	}
	wantTop(t, s, b.ID, ent(1, "alice", 5), ent(2, "mallory", 0))
}

// testIdempotencyExpiryFake moves the injected clock past a 1s window. An
// engine whose expiry runs on a server's own clock gets a few real seconds.
func testIdempotencyExpiryFake(t *testing.T, f Factory) {
	clk := NewClock(nowAnchor())
	s := f(t, clk.Now)
	b := put(t, s, board("rt-idem-exp", func(b *rank.Board) { b.IdempotencyWindow = rank.Duration(rank.MinIdempotencyWindow) }))
	r1 := apply(t, s, delta(b.ID, "x", "a", 1))
	if r := apply(t, s, delta(b.ID, "x", "a", 1)); !r.Duplicate {
		t.Fatalf("retry inside the window: %+v", r)
	}
	clk.Advance(2 * rank.MinIdempotencyWindow)
	var r rank.Result
	eventually(t, expiryPatience, "id x expires", func() bool {
		var err error
		// Another payload: a conflict until the record expires.
		r, err = rank.ApplyWait(t.Context(), s, delta(b.ID, "x", "a", 2))
		if err != nil && !errors.Is(err, rank.ErrIdempotencyConflict) {
			t.Fatalf("Apply after window: %v", err)
		}
		return err == nil
	})
	if r.Duplicate || r.Score != 3 || r.Seq != r1.Seq+1 {
		t.Fatalf("after the window: %+v, want score 3 at seq %d", r, r1.Seq+1)
	}
}

func testIdempotencyExpiryReal(t *testing.T, f Factory) {
	s := f(t, nil)
	b := put(t, s, board("rt-idem-real", func(b *rank.Board) { b.IdempotencyWindow = rank.Duration(rank.MinIdempotencyWindow) }))
	r1 := apply(t, s, delta(b.ID, "x", "a", 1))
	var r rank.Result
	eventually(t, expiryPatience, "id x expires", func() bool {
		r = apply(t, s, delta(b.ID, "x", "a", 1))
		return !r.Duplicate
	})
	if r.Score != 2 || r.Seq != r1.Seq+1 {
		t.Fatalf("after the window: %+v, want score 2 at seq %d", r, r1.Seq+1)
	}
}

func testLimits(t *testing.T, f Factory) {
	s := f(t, nil)
	const M = rank.MaxScore
	incr := put(t, s, rank.DefaultBoard("rt-lim-incr"))
	capped := put(t, s, board("rt-lim-capped", func(b *rank.Board) { b.MaxDelta = 100 }))
	best := put(t, s, board("rt-lim-best", func(b *rank.Board) { b.Mode = rank.Best }))
	set := put(t, s, board("rt-lim-set", func(b *rank.Board) { b.Mode = rank.Set; b.MaxDelta = 100 }))
	var g ids
	apply(t, s, delta(incr.ID, g.next(), "hi", M-10))
	apply(t, s, delta(incr.ID, g.next(), "lo", -(M-3)))
	apply(t, s, delta(capped.ID, g.next(), "a", 100))
	apply(t, s, delta(capped.ID, g.next(), "b", -100))
	apply(t, s, value(best.ID, g.next(), "a", 7))
	apply(t, s, value(set.ID, g.next(), "a", -100))
	boards := []string{incr.ID, capped.ID, best.ID, set.ID}
	before := snapshot(t, s, boards...)

	long := strings.Repeat("m", 65)
	cases := []struct {
		e    rank.Event
		want error
	}{
		{delta(incr.ID, g.next(), "hi", M+1), rank.ErrInvalidScore},
		{delta(incr.ID, g.next(), "new", -(M + 1)), rank.ErrInvalidScore},
		{delta(incr.ID, g.next(), "new", 1<<62), rank.ErrInvalidScore},
		{delta(incr.ID, g.next(), "hi", 11), rank.ErrOutOfRange},
		{delta(incr.ID, g.next(), "hi", M), rank.ErrOutOfRange},
		{delta(incr.ID, g.next(), "lo", -4), rank.ErrOutOfRange},
		{delta(capped.ID, g.next(), "a", 101), rank.ErrDeltaTooLarge},
		{delta(capped.ID, g.next(), "new", -101), rank.ErrDeltaTooLarge},
		{value(set.ID, g.next(), "a", 101), rank.ErrDeltaTooLarge},
		{value(set.ID, g.next(), "a", -101), rank.ErrDeltaTooLarge},
		{value(set.ID, g.next(), "a", M+1), rank.ErrInvalidScore},
		{value(best.ID, g.next(), "a", -(M + 1)), rank.ErrInvalidScore},
		{delta(best.ID, g.next(), "a", 1), rank.ErrBadRequest},
		{delta(set.ID, g.next(), "a", 1), rank.ErrBadRequest},
		{value(incr.ID, g.next(), "hi", 1), rank.ErrBadRequest},
		{rank.Event{Board: incr.ID, ID: g.next(), Member: "hi", Amount: 1}, rank.ErrBadRequest},
		{delta(incr.ID, "", "hi", 1), rank.ErrBadRequest},
		{delta(incr.ID, g.next(), "", 1), rank.ErrInvalidMember},
		{delta(incr.ID, g.next(), "has space", 1), rank.ErrInvalidMember},
		{delta(incr.ID, g.next(), "a/b", 1), rank.ErrInvalidMember},
		{delta(incr.ID, g.next(), long, 1), rank.ErrInvalidMember},
		{delta(incr.ID, g.next(), "ünï", 1), rank.ErrInvalidMember},
	}
	for _, tc := range cases {
		applyErr(t, s, tc.e, tc.want)
		if after := snapshot(t, s, boards...); after != before {
			t.Fatalf("failed Apply(%+v) changed data:\n%s\nwant\n%s", tc.e, after, before)
		}
	}
	// The edges themselves are allowed.
	if r := apply(t, s, delta(capped.ID, g.next(), "a", -100)); r.Score != 0 {
		t.Fatalf("delta -max_delta: %+v", r)
	}
	if r := apply(t, s, delta(incr.ID, g.next(), "hi", 10)); r.Score != M {
		t.Fatalf("delta to exactly 2^53-1: %+v", r)
	}
	if r := apply(t, s, delta(incr.ID, g.next(), "lo", -3)); r.Score != -M {
		t.Fatalf("delta to exactly -(2^53-1): %+v", r)
	}
	if r := apply(t, s, delta(incr.ID, g.next(), "a-b_c.d:e@f", 1)); r.Member != "a-b_c.d:e@f" {
		t.Fatalf("member with every allowed punctuation: %+v", r)
	}
}

func testExtremeScores(t *testing.T, f Factory) {
	s := f(t, nil)
	const M = rank.MaxScore
	var g ids
	for _, o := range []rank.Order{rank.Desc, rank.Asc} {
		inc := put(t, s, board("rt-ext-incr-"+string(o), func(b *rank.Board) { b.Order = o }))
		apply(t, s, delta(inc.ID, g.next(), "top", M))
		apply(t, s, delta(inc.ID, g.next(), "next", M-1))
		apply(t, s, delta(inc.ID, g.next(), "bottom", -M))
		apply(t, s, delta(inc.ID, g.next(), "above", -M+1))
		if r := apply(t, s, delta(inc.ID, g.next(), "top", 0)); r.Score != M || r.PrevScore != M {
			t.Fatalf("%s: +0 at the max: %+v", o, r)
		}
		want := []rank.Entry{ent(1, "top", M), ent(2, "next", M-1), ent(3, "above", -M+1), ent(4, "bottom", -M)}
		if o == rank.Asc {
			want = []rank.Entry{ent(1, "bottom", -M), ent(2, "above", -M+1), ent(3, "next", M-1), ent(4, "top", M)}
		}
		wantTop(t, s, inc.ID, want...)
		m := one(t, s, inc.ID, "next", 1)
		if m.Score != M-1 {
			t.Fatalf("%s: Ranks(next).Score = %d", o, m.Score)
		}

		set := put(t, s, board("rt-ext-set-"+string(o), func(b *rank.Board) { b.Order = o; b.Mode = rank.Set }))
		for _, v := range []int64{M, -M, M - 1, -M + 1} {
			if r := apply(t, s, value(set.ID, g.next(), "m", v)); r.Score != v {
				t.Fatalf("%s: set %d: %+v", o, v, r)
			}
			wantTop(t, s, set.ID, ent(1, "m", v))
		}
		// Equal extreme scores still tie-break exactly.
		tie := put(t, s, board("rt-ext-tie-"+string(o), func(b *rank.Board) { b.Order = o }))
		apply(t, s, delta(tie.ID, g.next(), "x", -M))
		apply(t, s, delta(tie.ID, g.next(), "y", -M))
		wantTop(t, s, tie.ID, ent(1, "x", -M), ent(2, "y", -M))
	}
}
