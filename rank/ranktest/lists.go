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
				checkList(t, s, b, len(scores), list, 0, 1, 3)
			}
		}
	}
}

// testRankListsLong: lists longer than the chunks a store may read them in
// (hundreds of ids per command), absent members and duplicates spread
// through them, on a plain board and a cohort board.
func testRankListsLong(t *testing.T, f Factory) {
	s := f(t, nil)
	const n = 600
	for _, cohort := range []int{0, 250} {
		b := put(t, s, board(fmt.Sprintf("rt-list-long-%d", cohort), func(b *rank.Board) {
			b.Tiebreak, b.Cohort.Size = rank.Shared, cohort
		}))
		var g ids
		for i := range n {
			e := delta(b.ID, g.next(), fmt.Sprintf("p%03d", i), int64(i%37))
			if i%5 == 0 {
				e = withMeta(named(e, fmt.Sprintf("P%d", i)), meta.Meta(`{"i":`+strconv.Itoa(i)+`}`))
			}
			apply(t, s, e)
		}
		var list []string
		for i := range 2*n + 3 {
			switch {
			case i%7 == 3:
				list = append(list, fmt.Sprintf("gone%d", i))
			default:
				list = append(list, fmt.Sprintf("p%03d", (i*13)%n))
			}
		}
		checkList(t, s, b, n, list, 0, 2)
	}
}

// checkList reads list (of members of board b, which has total entries)
// with each of arounds and holds every listed member's result to the page
// it ranks in: the board's, or on a cohort board its cohort's.
func checkList(t *testing.T, s rank.Store, b rank.Board, total int, list []string, arounds ...int) {
	t.Helper()
	// The page each member ranks in: the board's, or its cohort's.
	pages := map[string][]rank.Entry{}
	cohortOf := map[string]string{}
	if b.Cohort.Size == 0 {
		es := all(t, s, b.ID, "").Entries
		for _, e := range es {
			pages[e.Member] = es
		}
	} else {
		for c := 1; c <= (total+b.Cohort.Size-1)/b.Cohort.Size; c++ {
			es := cohortTop(t, s, b.ID, "", strconv.Itoa(c), 0, b.Cohort.Size).Entries
			for _, e := range es {
				pages[e.Member], cohortOf[e.Member] = es, strconv.Itoa(c)
			}
		}
	}
	if len(pages) != total {
		t.Fatalf("%s: %d members on its pages, want %d", b.ID, len(pages), total)
	}
	for _, around := range arounds {
		rs := ranks(t, s, b.ID, "", around, list...)
		if rs.Total != int64(total) {
			t.Fatalf("%s: total %d, want %d", b.ID, rs.Total, total)
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
