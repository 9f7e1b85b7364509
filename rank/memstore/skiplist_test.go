package memstore

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// checkList compares sl with want (keys in order) through every query and
// verifies the span of every link.
func checkList(t *testing.T, sl *skiplist, want []*node) {
	t.Helper()
	if sl.length != len(want) {
		t.Fatalf("length %d, want %d", sl.length, len(want))
	}
	pos := map[*node]int{}
	i := 0
	for n := sl.first(); n != nil; n = n.level[0].next {
		if i >= len(want) || n != want[i] {
			t.Fatalf("level 0 differs at %d", i)
		}
		i++
		pos[n] = i
	}
	for lvl := range sl.levels {
		at := 0
		for x := &sl.head; ; x = x.level[lvl].next {
			l := x.level[lvl]
			if l.next == nil {
				if at+l.span != sl.length && !(x == &sl.head && l.span == 0) {
					t.Fatalf("level %d: last span from %d is %d, length %d", lvl, at, l.span, sl.length)
				}
				break
			}
			if pos[l.next] != at+l.span {
				t.Fatalf("level %d: span from %d is %d, next is at %d", lvl, at, l.span, pos[l.next])
			}
			at = pos[l.next]
		}
	}
	for i, n := range want {
		if r := sl.rankOf(&n.key); r != i+1 {
			t.Fatalf("rankOf(%v) = %d, want %d", n.key, r, i+1)
		}
		if got := sl.byRank(i + 1); got != n {
			t.Fatalf("byRank(%d) = %v, want %v", i+1, got, n.key)
		}
	}
	for _, r := range []int{0, -1, len(want) + 1} {
		if sl.byRank(r) != nil {
			t.Fatalf("byRank(%d) is not nil", r)
		}
	}
	if r := sl.rankOf(&key{s: 1 << 60, m: "absent"}); r != 0 {
		t.Fatalf("rankOf(absent) = %d", r)
	}
	for s := int64(-2); s <= 12; s++ {
		less := 0
		for _, n := range want {
			if n.s < s {
				less++
			}
		}
		if got := sl.countLess(s); got != less {
			t.Fatalf("countLess(%d) = %d, want %d", s, got, less)
		}
	}
}

func TestSkiplistRandom(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2, 3, 4} {
		rng := rand.New(rand.NewPCG(seed, 9))
		sl := newSkiplist(seed)
		var want []*node
		sortWant := func() { slices.SortFunc(want, func(a, b *node) int { return cmpKey(&a.key, &b.key) }) }
		byMember := map[string]*node{}
		for op := range 3000 {
			m := string(rune('a' + rng.IntN(26)))
			m += string(rune('a' + rng.IntN(26)))
			k := key{s: int64(rng.IntN(10)), t: int64(rng.IntN(3)), m: m}
			n := byMember[m]
			switch {
			case n == nil:
				n = sl.newNode()
				n.key = k
				byMember[m] = n
				want = append(want, n)
				sortWant()
				if r := sl.insert(n); want[r-1] != n {
					t.Fatalf("insert returned rank %d, node is elsewhere", r)
				}
			case rng.IntN(3) == 0:
				i := slices.Index(want, n)
				if r := sl.remove(n); r != i+1 {
					t.Fatalf("remove returned %d, want %d", r, i+1)
				}
				want = slices.Delete(want, i, i+1)
				delete(byMember, m)
				if r := sl.remove(n); r != 0 {
					t.Fatalf("second remove returned %d", r)
				}
			default: // move, reusing the node and its level
				i := slices.Index(want, n)
				if r := sl.remove(n); r != i+1 {
					t.Fatalf("remove returned %d, want %d", r, i+1)
				}
				n.key = k
				sortWant()
				if r := sl.insert(n); want[r-1] != n {
					t.Fatalf("reinsert returned rank %d, node is elsewhere", r)
				}
			}
			if op%97 == 0 || op == 2999 {
				checkList(t, sl, want)
			}
		}
		for len(want) > 0 { // empty it completely
			n := want[rng.IntN(len(want))]
			sl.remove(n)
			want = slices.DeleteFunc(want, func(x *node) bool { return x == n })
		}
		checkList(t, sl, want)
		if sl.levels != 1 {
			t.Fatalf("empty list keeps %d levels", sl.levels)
		}
	}
}

func TestKeyOrder(t *testing.T) {
	t.Parallel()
	// Ascending s, then t, then member bytes descending ('a' > 'Z' > 'B').
	ordered := []key{
		{s: -5, t: 9, m: "a"},
		{s: 0, t: -3, m: "a"},
		{s: 0, t: 0, m: "b"},
		{s: 0, t: 0, m: "a"},
		{s: 0, t: 0, m: "Z"},
		{s: 0, t: 0, m: "B"},
		{s: 0, t: 2, m: "z"},
		{s: 7, t: 0, m: "z"},
	}
	for i := range ordered {
		for j := range ordered {
			if got := ordered[i].less(&ordered[j]); got != (i < j) {
				t.Errorf("%v.less(%v) = %v", ordered[i], ordered[j], got)
			}
		}
	}
}

func TestRandomLevelDistribution(t *testing.T) {
	t.Parallel()
	sl := newSkiplist(42)
	counts := make([]int, maxLevel+1)
	const n = 100000
	for range n {
		counts[sl.randomLevel()]++
	}
	// P(level 1) = 3/4; allow a wide margin, this only catches a broken generator.
	if c := counts[1]; c < n*70/100 || c > n*80/100 {
		t.Fatalf("level 1 drawn %d of %d times, want about 75%%", c, n)
	}
	if counts[2] < n*15/100 || counts[2] > n*22/100 {
		t.Fatalf("level 2 drawn %d of %d times, want about 19%%", counts[2], n)
	}
}

func cmpKey(a, b *key) int {
	switch {
	case a.less(b):
		return -1
	case b.less(a):
		return 1
	}
	return 0
}
