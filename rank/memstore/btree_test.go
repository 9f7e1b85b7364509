package memstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// checkTree compares tr with want (entries in key order) through every query
// and verifies the tree's invariants: counts, separators, fill, depth, and
// the leaf chain.
func checkTree(t *testing.T, tr *tree, want []*node) {
	t.Helper()
	if tr.length != len(want) {
		t.Fatalf("length %d, want %d", tr.length, len(want))
	}
	var leaves []*leaf
	if tr.height == 0 {
		if tr.root != nil || tr.lroot == nil {
			t.Fatal("height 0 without a root leaf")
		}
		checkLeaf(t, tr, tr.lroot, nil, nil, true)
		leaves = append(leaves, tr.lroot)
	} else {
		if tr.lroot != nil || tr.root == nil || tr.root.n < 2 {
			t.Fatalf("height %d: root leaf %v, root inner %v", tr.height, tr.lroot != nil, tr.root != nil)
		}
		if got := checkInner(t, tr, tr.root, tr.height, nil, nil, true, &leaves); got != tr.length {
			t.Fatalf("root holds %d entries, length %d", got, tr.length)
		}
	}
	for i, lf := range leaves {
		var next *leaf
		if i+1 < len(leaves) {
			next = leaves[i+1]
		}
		if lf.next != next {
			t.Fatalf("leaf %d of %d: next is not the following leaf", i, len(leaves))
		}
	}
	i := 0
	for c := tr.at(1); c.lf != nil; c.next() {
		if i >= len(want) || c.node() != want[i] {
			t.Fatalf("walk differs at %d", i)
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("walk saw %d entries, want %d", i, len(want))
	}
	for i, n := range want {
		if r := tr.rankOf(&n.key); r != i+1 {
			t.Fatalf("rankOf(%v) = %d, want %d", n.key, r, i+1)
		}
		if got := tr.byRank(i + 1); got != n {
			t.Fatalf("byRank(%d) = %v, want %v", i+1, got, n.key)
		}
	}
	for _, r := range []int{0, -1, len(want) + 1} {
		if tr.byRank(r) != nil {
			t.Fatalf("byRank(%d) is not nil", r)
		}
	}
	if r := tr.rankOf(&key{s: 1 << 60, m: "absent"}); r != 0 {
		t.Fatalf("rankOf(absent) = %d", r)
	}
	for _, n := range want { // a key between two entries is absent too
		k := n.key
		k.m += "\x00"
		if r := tr.rankOf(&k); r != 0 {
			t.Fatalf("rankOf(%v) = %d, want 0", k, r)
		}
	}
	for s := int64(-2); s <= 12; s++ {
		less := 0
		for _, n := range want {
			if n.s < s {
				less++
			}
		}
		if got := tr.countLess(s); got != less {
			t.Fatalf("countLess(%d) = %d, want %d", s, got, less)
		}
	}
}

// checkLeaf verifies a leaf's fill, its key copies, its cleared tail and that
// its keys lie in [lo, hi).
func checkLeaf(t *testing.T, tr *tree, lf *leaf, lo, hi *key, root bool) {
	t.Helper()
	if lf.n > tr.lcap || !root && lf.n < tr.lmin() {
		t.Fatalf("leaf holds %d, capacity %d, minimum %d", lf.n, tr.lcap, tr.lmin())
	}
	for j := range lf.n {
		n := lf.item[j]
		if n == nil || lf.s[j] != n.s || lf.t[j] != n.t {
			t.Fatalf("leaf entry %d does not mirror its node", j)
		}
		if j > 0 && !lf.item[j-1].less(&n.key) {
			t.Fatalf("leaf entries %d and %d out of order", j-1, j)
		}
		if lo != nil && n.less(lo) || hi != nil && !n.less(hi) {
			t.Fatalf("leaf entry %v outside its separators [%v, %v)", n.key, lo, hi)
		}
	}
	for j := lf.n; j < leafCap; j++ {
		if lf.item[j] != nil {
			t.Fatalf("leaf keeps a pointer in free slot %d", j)
		}
	}
}

// checkInner verifies the subtree of in (h levels above the leaves) within
// [lo, hi), appends its leaves in order, and returns its entry count.
func checkInner(t *testing.T, tr *tree, in *inner, h int, lo, hi *key, root bool, leaves *[]*leaf) int {
	t.Helper()
	if in.n > tr.icap || !root && in.n < tr.imin() {
		t.Fatalf("inner node holds %d, capacity %d, minimum %d", in.n, tr.icap, tr.imin())
	}
	total := 0
	for i := range in.n {
		klo, khi := lo, hi
		if i > 0 {
			klo = &key{in.s[i], in.t[i], in.m[i]}
			if lo != nil && klo.less(lo) || hi != nil && !klo.less(hi) {
				t.Fatalf("separator %v outside [%v, %v)", klo, lo, hi)
			}
		}
		if i+1 < in.n {
			khi = &key{in.s[i+1], in.t[i+1], in.m[i+1]}
		}
		var got int
		if h == 1 {
			if in.leaves[i] == nil || in.kids[i] != nil {
				t.Fatalf("child %d of a node above the leaves is not a leaf", i)
			}
			checkLeaf(t, tr, in.leaves[i], klo, khi, false)
			*leaves = append(*leaves, in.leaves[i])
			got = in.leaves[i].n
		} else {
			if in.kids[i] == nil || in.leaves[i] != nil {
				t.Fatalf("child %d at height %d is not an inner node", i, h)
			}
			got = checkInner(t, tr, in.kids[i], h-1, klo, khi, false, leaves)
		}
		if in.cnt[i] != got {
			t.Fatalf("count of child %d is %d, it holds %d", i, in.cnt[i], got)
		}
		total += got
	}
	for i := in.n; i < innerCap; i++ {
		if in.kids[i] != nil || in.leaves[i] != nil || in.m[i] != "" {
			t.Fatalf("inner node keeps a reference in free slot %d", i)
		}
	}
	return total
}

// TestTreeRandom holds the tree equal to a sorted slice under random
// inserts, removals and moves, with node sizes from tiny (deep trees, many
// splits and merges) to the real ones.
func TestTreeRandom(t *testing.T) {
	t.Parallel()
	caps := []struct{ l, i int }{{4, 8}, {5, 9}, {8, 8}, {16, 12}, {leafCap, innerCap}}
	for _, c := range caps {
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("leaf%d/inner%d/seed%d", c.l, c.i, seed), func(t *testing.T) {
				t.Parallel()
				randomOps(t, newTreeCaps(c.l, c.i), seed, 3000)
			})
		}
	}
}

func randomOps(t *testing.T, tr *tree, seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, 9))
	var want []*node
	sortWant := func() { slices.SortFunc(want, func(a, b *node) int { return cmpKey(&a.key, &b.key) }) }
	byMember := map[string]*node{}
	maxHeight := 0
	for op := range ops {
		m := string(rune('a'+rng.IntN(26))) + string(rune('a'+rng.IntN(26)))
		k := key{s: int64(rng.IntN(10)), t: int64(rng.IntN(3)), m: m}
		n := byMember[m]
		switch {
		case n == nil:
			n = &node{key: k}
			byMember[m] = n
			want = append(want, n)
			sortWant()
			if r := tr.insert(n); r < 1 || want[r-1] != n {
				t.Fatalf("insert returned rank %d, node is elsewhere", r)
			}
		case rng.IntN(3) == 0:
			i := slices.Index(want, n)
			if r := tr.remove(n); r != i+1 {
				t.Fatalf("remove returned %d, want %d", r, i+1)
			}
			want = slices.Delete(want, i, i+1)
			delete(byMember, m)
			if r := tr.remove(n); r != 0 {
				t.Fatalf("second remove returned %d", r)
			}
		default: // move, reusing the node
			i := slices.Index(want, n)
			if r := tr.remove(n); r != i+1 {
				t.Fatalf("remove returned %d, want %d", r, i+1)
			}
			n.key = k
			sortWant()
			if r := tr.insert(n); r < 1 || want[r-1] != n {
				t.Fatalf("reinsert returned rank %d, node is elsewhere", r)
			}
		}
		maxHeight = max(maxHeight, tr.height)
		if op%97 == 0 || op == ops-1 {
			checkTree(t, tr, want)
		}
	}
	if tr.lcap < 32 && maxHeight < 2 {
		t.Fatalf("small nodes reached height %d only; the test does not cover inner splits", maxHeight)
	}
	for len(want) > 0 { // empty it completely, checking on the way down
		n := want[rng.IntN(len(want))]
		if tr.remove(n) == 0 {
			t.Fatal("remove of a present entry returned 0")
		}
		want = slices.DeleteFunc(want, func(x *node) bool { return x == n })
		if len(want)%13 == 0 {
			checkTree(t, tr, want)
		}
	}
	checkTree(t, tr, want)
	if tr.height != 0 {
		t.Fatalf("empty tree keeps height %d", tr.height)
	}
}

// Ascending and descending runs fill nodes from one side, which random
// keys do not: splits at the ends and merges of neighbours emptied in order.
func TestTreeSequential(t *testing.T) {
	t.Parallel()
	for _, desc := range []bool{false, true} {
		tr := newTreeCaps(8, 8)
		const n = 2000
		nodes := make([]*node, n)
		for i := range nodes {
			nodes[i] = &node{key: key{s: int64(i), m: "m"}}
		}
		order := slices.Clone(nodes)
		if desc {
			slices.Reverse(order)
		}
		for i, nd := range order {
			r := tr.insert(nd)
			if want := 1; !desc {
				want = i + 1
				if r != want {
					t.Fatalf("ascending insert %d at rank %d", i, r)
				}
			} else if r != want {
				t.Fatalf("descending insert %d at rank %d", i, r)
			}
		}
		checkTree(t, tr, nodes)
		for i, nd := range order[:n/2] { // remove from the same end
			if r := tr.remove(nd); desc && r != n-i || !desc && r != 1 {
				t.Fatalf("removal %d returned rank %d", i, r)
			}
		}
		rest := nodes[n/2:]
		if desc {
			rest = nodes[:n/2]
		}
		checkTree(t, tr, rest)
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

func cmpKey(a, b *key) int {
	switch {
	case a.less(b):
		return -1
	case b.less(a):
		return 1
	}
	return 0
}
