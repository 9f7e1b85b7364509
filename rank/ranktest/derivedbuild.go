package ranktest

import (
	"strconv"
	"sync"
	"testing"

	"github.com/wsgateway/wsgateway/rank"
)

// testDerivedBuildConcurrent: two PUTs of the same new union over sources
// holding data, at once, with events racing them: both answer success, and
// from the moment each answers the union equals its recomputation (one
// builds, the other waits for it; on Redis, under the build's lease).
func testDerivedBuildConcurrent(t *testing.T, f Factory) {
	s := f(t, nil)
	var g ids
	grp := func(b *rank.Board) { b.Group = "rt-dbc" }
	put(t, s, board("rt-dbc-a", grp))
	put(t, s, board("rt-dbc-b", func(b *rank.Board) { grp(b); b.Tiebreak = rank.Shared }))
	for i := range 900 {
		m := "m" + strconv.Itoa(i%700)
		apply(t, s, delta("rt-dbc-a", g.next(), m, int64(i%17-4)))
		if i%2 == 0 {
			apply(t, s, delta("rt-dbc-b", g.next(), m, int64(i%7)))
		}
	}
	u := board("rt-dbc-u", func(b *rank.Board) {
		grp(b)
		b.Source = rank.UnionOf([]string{"rt-dbc-a", "rt-dbc-b"}, []int64{2, 5})
	})
	evs := make([]rank.Event, 0, 200)
	for i := range 200 {
		evs = append(evs, delta([]string{"rt-dbc-a", "rt-dbc-b"}[i%2], g.next(), "m"+strconv.Itoa(i*3%800), int64(i%9)))
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, errs[i] = s.PutBoard(t.Context(), u) })
	}
	wg.Go(func() {
		for _, e := range evs {
			if _, err := rank.ApplyWait(t.Context(), s, e); err != nil {
				t.Errorf("Apply(%+v): %v", e, err)
				return
			}
		}
	})
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("PUT %d of the union: %v", i+1, err)
		}
	}
	want := expectSum(rank.Desc, []map[string]int64{scoresOf(t, s, "rt-dbc-a", ""), scoresOf(t, s, "rt-dbc-b", "")}, []int64{2, 5})
	wantEntries(t, "union after two concurrent PUTs", noNames(all(t, s, u.ID, "").Entries), want...)
}
