package ranktest

// Store.Cohorts (§12): a period's cohorts in order, per tier from the
// lowest on a league board, read from the placements however the members
// fared since.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

func cohortsOf(t *testing.T, s rank.Store, id string, p rank.PeriodSel) []string {
	t.Helper()
	got, err := s.Cohorts(t.Context(), id, p)
	if err != nil {
		t.Fatalf("Cohorts(%s, %q): %v", id, p, err)
	}
	return got
}

func wantCohorts(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if got == nil || !slices.Equal(got, want) {
		t.Fatalf("%s: cohorts %q, want %q (never nil)", what, got, want)
	}
}

// testCohortsList: the cohorts of plain and league periods, a period
// nobody played, past retain, and the errors.
func testCohortsList(t *testing.T, f Factory) {
	clk := NewClock(skewedAnchor())
	s := f(t, clk.Now)
	ctx := t.Context()
	var g ids

	plain := put(t, s, board("rt-cl-plain", nil))
	apply(t, s, delta(plain.ID, g.next(), "a", 1))
	wantCohorts(t, "a board without cohorts", cohortsOf(t, s, plain.ID, ""))
	if _, err := s.Cohorts(ctx, "rt-cl-none", ""); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("Cohorts of no board: %v, want ErrUnknownBoard", err)
	}
	if _, err := s.Cohorts(ctx, "bad id", ""); !errors.Is(err, rank.ErrInvalidBoard) {
		t.Fatalf("Cohorts of an invalid id: %v, want ErrInvalidBoard", err)
	}

	co := put(t, s, board("rt-cl-co", func(b *rank.Board) { b.Cohort.Size, b.Reset, b.Retain = 3, "1m", 1 }))
	p := rank.PeriodAt(co, clk.Now())
	clk.Set(p.Start.Add(time.Second))
	wantCohorts(t, "a period nobody played", cohortsOf(t, s, co.ID, ""))
	for i := range 7 {
		apply(t, s, delta(co.ID, g.next(), fmt.Sprintf("m%d", i), int64(i)))
	}
	wantCohorts(t, "7 members by 3", cohortsOf(t, s, co.ID, ""), "1", "2", "3")
	// m6 alone in cohort 3 is removed: the cohort it was placed in stays.
	if err := s.RemoveMember(ctx, co.ID, "m6", ""); err != nil {
		t.Fatal(err)
	}
	if pg := cohortTop(t, s, co.ID, "", "3", 0, 10); pg.Total != 0 {
		t.Fatalf("cohort 3 after the removal: %+v", pg)
	}
	wantCohorts(t, "after a removal", cohortsOf(t, s, co.ID, ""), "1", "2", "3")
	this := rank.PeriodSel(strconv.FormatInt(p.Index, 10))
	wantCohorts(t, "by index", cohortsOf(t, s, co.ID, this), "1", "2", "3")
	if _, err := s.Cohorts(ctx, co.ID, "yesterday"); !errors.Is(err, rank.ErrBadRequest) {
		t.Fatalf("a malformed period: %v, want ErrBadRequest", err)
	}
	next := rank.PeriodAt(co, p.End)
	clk.Set(next.Start.Add(time.Second))
	wantCohorts(t, "the next period before play", cohortsOf(t, s, co.ID, ""))
	wantCohorts(t, "previous", cohortsOf(t, s, co.ID, "previous"), "1", "2", "3")
	apply(t, s, delta(co.ID, g.next(), "m0", 1))
	wantCohorts(t, "the next period", cohortsOf(t, s, co.ID, ""), "1")
	clk.Set(next.End.Add(3 * time.Minute)) // retain 1: p is gone
	wantCohorts(t, "past retain", cohortsOf(t, s, co.ID, this))

	// A league: period 1 all bronze; after its moves, period 2's cohorts
	// are listed per tier from the lowest, and period 1's stay as placed.
	lg := put(t, s, leagueBoard("rt-cl-lg", 2, 1, 1, "bronze", "silver", "gold"))
	p = rank.PeriodAt(lg, clk.Now())
	clk.Set(p.Start.Add(time.Second))
	for i := range 5 {
		apply(t, s, delta(lg.ID, g.next(), fmt.Sprintf("n%d", i), int64(10-i)))
	}
	wantCohorts(t, "league period 1", cohortsOf(t, s, lg.ID, ""), "bronze-1", "bronze-2", "bronze-3")
	next = rank.PeriodAt(lg, p.End)
	clk.Set(next.Start.Add(time.Second))
	// n0, n2 and n4 (alone in bronze-3) move up; n1 and n3 stay.
	for _, m := range []string{"n0", "n1", "n2", "n4"} {
		apply(t, s, delta(lg.ID, g.next(), m, 1))
	}
	wantCohorts(t, "league period 2", cohortsOf(t, s, lg.ID, ""), "bronze-1", "silver-1", "silver-2")
	wantCohorts(t, "league period 1 after its moves", cohortsOf(t, s, lg.ID, "previous"), "bronze-1", "bronze-2", "bronze-3")
}
