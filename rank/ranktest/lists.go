package ranktest

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/rank"
)

// testRankLists: Ranks of a list as member lists read it (docs/protocol.md
// §11): duplicates, absent and banned members, members on both sides of
// ties, names and meta on some, around 0 and wider, on every tiebreak and
// order, with and without cohorts. Each listed member must read as the
// board's (or its cohort's) page places it: same rank, score, name and
// window of entries with their meta.
func testRankLists(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	scores := []int64{5, 5, 7, 5, 9, 5, 5, 7, 3, 3}
	list := []string{"m1", "absent", "m0", "m1", "cheat", "m5", "m9", "m4", "nobody", "m8", "m0", "m6", "m2"}
	for _, tie := range []rank.Tiebreak{rank.First, rank.Last, rank.Shared} {
		for _, order := range []rank.Order{rank.Desc, rank.Asc} {
			for _, cohort := range []int{0, 4} {
				b := put(t, s, board(fmt.Sprintf("rt-list-%s-%s-%d", tie, order, cohort), func(b *rank.Board) {
					b.Tiebreak, b.Order, b.Cohort.Size = tie, order, cohort
				}))
				var g ids
				for i, sc := range scores {
					m := fmt.Sprintf("m%d", i)
					e := delta(b.ID, g.next(), m, sc)
					if i%3 == 0 {
						e = named(e, "N"+m)
					}
					if i%2 == 1 {
						e = withMeta(e, meta.Meta(`{"i":`+strconv.Itoa(i)+`}`))
					}
					apply(t, s, e)
				}
				apply(t, s, delta(b.ID, g.next(), "cheat", 6))
				if _, err := modOf(t, s).BanMember(ctx, b.ID, rank.Ban{Member: "cheat", Reason: "test", By: "admin"}); err != nil {
					t.Fatalf("BanMember: %v", err)
				}
				// The page each member ranks in: the board's, or its cohort's.
				pages := map[string][]rank.Entry{}
				cohortOf := map[string]string{}
				if cohort == 0 {
					es := all(t, s, b.ID, "").Entries
					for _, e := range es {
						pages[e.Member] = es
					}
				} else {
					for c := 1; c <= (len(scores)+cohort-1)/cohort; c++ {
						es := cohortTop(t, s, b.ID, "", strconv.Itoa(c), 0, 100).Entries
						for _, e := range es {
							pages[e.Member], cohortOf[e.Member] = es, strconv.Itoa(c)
						}
					}
				}
				if len(pages) != len(scores) {
					t.Fatalf("%s: %d members on its pages, want %d", b.ID, len(pages), len(scores))
				}
				for _, around := range []int{0, 1, 3} {
					rs := ranks(t, s, b.ID, "", around, list...)
					if rs.Total != int64(len(scores)) {
						t.Fatalf("%s: total %d, want %d", b.ID, rs.Total, len(scores))
					}
					for i, m := range list {
						got := rs.Members[i]
						what := fmt.Sprintf("%s around %d: %s (list position %d)", b.ID, around, m, i)
						page, ok := pages[m]
						if !ok {
							if got.Member != m || got.Found || got.Rank != 0 || got.Score != 0 || len(got.Around) != 0 || got.Cohort != "" {
								t.Fatalf("%s: %+v, want not found", what, got)
							}
							continue
						}
						k := 0
						for page[k].Member != m {
							k++
						}
						self := page[k]
						if got.Member != m || !got.Found || got.Rank != self.Rank || got.Score != self.Score || got.Name != self.Name || got.Cohort != cohortOf[m] {
							t.Fatalf("%s: %+v, want %+v in cohort %q", what, got, self, cohortOf[m])
						}
						window := page[max(0, k-around):min(len(page), k+around+1)]
						if !sameEntries(got.Around, window) {
							t.Fatalf("%s: around %s %v, want %s %v", what, fmtEntries(got.Around), got.Around, fmtEntries(window), window)
						}
					}
				}
			}
		}
	}
}
