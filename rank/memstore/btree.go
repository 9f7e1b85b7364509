package memstore

import "math"

// An order-statistic B+tree: every inner node keeps, per child, the number
// of entries under it, so the position of a key (the sum of the counts left
// of its path) and the entry at a position are found in O(log n), and a
// page of k entries from a position in O(log n + k) along the leaf chain.
//
// It replaces the skip list that DESIGN.md names: the same queries, measured
// faster at a million members (BenchmarkApply; docs/performance.md) because
// a lookup touches a few nodes laid out as arrays (the upper ones stay in
// cache) instead of a skip list node per level, each a cache miss.

const (
	leafCap  = 64 // entries per leaf: the leaf search reads 8 cache lines of s at most
	innerCap = 64 // children per inner node
	maxDepth = 40 // inner levels; with at least 2 children per level, 2^40 entries
)

// key orders a board's members: ascending s, then ascending t, then member
// id in descending byte order (the order of Redis's ZREVRANGE among equal
// sorted-set scores, which the shared tiebreak must match).
type key struct {
	s int64  // the score oriented so that smaller ranks first
	t int64  // tie key: reached-seq (first), -reached-seq (last), 0 (shared)
	m string // member id
}

func (a *key) less(b *key) bool {
	if a.s != b.s {
		return a.s < b.s
	}
	if a.t != b.t {
		return a.t < b.t
	}
	return a.m > b.m
}

// node is a member's entry; the tree holds pointers to it, so the member
// map's pointer stays valid while the entry moves between leaves.
type node struct {
	key
	score   int64 // the member's score as stored
	reached int64 // the seq at which the member reached its current score
}

// leaf holds entries in key order. s and t are copies of the entries' keys,
// so a search compares within the leaf's arrays and dereferences an entry
// only on an (s, t) tie.
type leaf struct {
	n    int
	next *leaf // the leaf that follows in key order, for pages
	s    [leafCap]int64
	t    [leafCap]int64
	item [leafCap]*node
}

// inner separates its children by keys: sep i (i ≥ 1) is at most every key
// under child i and above every key under child i-1. Sep 0 is unused.
// Separators are not updated when an entry is removed: they stay bounds.
type inner struct {
	n      int
	cnt    [innerCap]int // entries under each child
	s      [innerCap]int64
	t      [innerCap]int64
	m      [innerCap]string
	kids   [innerCap]*inner // children when the node is more than one level above the leaves
	leaves [innerCap]*leaf  // children when the node is right above the leaves
}

// tree is not safe for concurrent use; its board's lock guards it.
type tree struct {
	height int    // inner levels above the leaves; 0: the root is a leaf
	root   *inner // when height > 0
	lroot  *leaf  // when height == 0
	length int
	// Node capacities, at most leafCap and innerCap; tests use small ones to
	// build deep trees from few entries.
	lcap, icap int
}

func newTree() *tree { return newTreeCaps(leafCap, innerCap) }

func newTreeCaps(lcap, icap int) *tree {
	return &tree{lroot: &leaf{}, lcap: lcap, icap: icap}
}

// Minimum fills of non-root nodes. Underflow is fixed with a sibling: merged
// when the two fit in 3/4 of a node (so a merge is not split again by the
// next insert), else evened out; either way both keep at least min.
func (tr *tree) lmin() int { return tr.lcap / 4 }
func (tr *tree) imin() int { return tr.icap / 4 }

// before reports whether entry j sorts before k.
func (lf *leaf) before(j int, k *key) bool {
	if lf.s[j] != k.s {
		return lf.s[j] < k.s
	}
	if lf.t[j] != k.t {
		return lf.t[j] < k.t
	}
	return lf.item[j].m > k.m
}

// search is the number of entries before k.
func (lf *leaf) search(k *key) int {
	lo, hi := 0, lf.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if lf.before(mid, k) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// search is the child whose range holds k: the number of separators 1..n-1
// at or before k.
func (in *inner) search(k *key) int {
	lo, hi := 1, in.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if in.s[mid] < k.s || in.s[mid] == k.s && (in.t[mid] < k.t || in.t[mid] == k.t && in.m[mid] >= k.m) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo - 1
}

type step struct {
	in *inner
	i  int // the child taken
}

// find descends towards k, recording the path. It returns the leaf, the
// number of entries of the leaf before k, and the number of entries of the
// tree in leaves left of it.
func (tr *tree) find(k *key, path *[maxDepth]step) (lf *leaf, pos, base int) {
	lf = tr.lroot
	if tr.height > 0 {
		in := tr.root
		for d := 0; ; d++ {
			i := in.search(k)
			for _, c := range in.cnt[:i] {
				base += c
			}
			path[d] = step{in, i}
			if d == tr.height-1 {
				lf = in.leaves[i]
				break
			}
			in = in.kids[i]
		}
	}
	return lf, lf.search(k), base
}

// insert adds n (key set, not in the tree) and returns its 1-based rank.
func (tr *tree) insert(n *node) int {
	var path [maxDepth]step
	lf, pos, base := tr.find(&n.key, &path)
	for d := range tr.height {
		path[d].in.cnt[path[d].i]++
	}
	tr.length++
	if lf.n < tr.lcap {
		lf.insertAt(pos, n)
		return base + pos + 1
	}
	right := &leaf{next: lf.next}
	lf.next = right
	half := lf.n / 2
	moveEntries(right, 0, lf, half, lf.n-half)
	if pos <= half {
		lf.insertAt(pos, n)
	} else {
		right.insertAt(pos-half, n)
	}
	sep := key{right.s[0], right.t[0], right.item[0].m}
	tr.grow(&path, tr.height-1, lf.n, sep, right.n, nil, right)
	return base + pos + 1
}

// grow records that the child at path[d] split: it keeps leftCnt entries,
// and the new node (ni or nl) with rightCnt entries, all at or above sep,
// follows it. d < 0 means the root split.
func (tr *tree) grow(path *[maxDepth]step, d int, leftCnt int, sep key, rightCnt int, ni *inner, nl *leaf) {
	for ; d >= 0; d-- {
		in, i := path[d].in, path[d].i
		in.cnt[i] = leftCnt
		if in.n < tr.icap {
			in.insertKid(i+1, &sep, rightCnt, ni, nl)
			return
		}
		right := &inner{}
		half := in.n / 2
		moveKids(right, 0, in, half, in.n-half)
		if i+1 <= half {
			in.insertKid(i+1, &sep, rightCnt, ni, nl)
		} else {
			right.insertKid(i+1-half, &sep, rightCnt, ni, nl)
		}
		// Right's sep 0 is the bound between the halves; it moves up.
		sep = key{right.s[0], right.t[0], right.m[0]}
		right.m[0] = ""
		leftCnt, rightCnt = in.total(), right.total()
		ni, nl = right, nil
	}
	root := &inner{n: 2}
	root.cnt[0], root.cnt[1] = leftCnt, rightCnt
	root.s[1], root.t[1], root.m[1] = sep.s, sep.t, sep.m
	if tr.height == 0 {
		root.leaves[0], root.leaves[1] = tr.lroot, nl
		tr.lroot = nil
	} else {
		root.kids[0], root.kids[1] = tr.root, ni
	}
	tr.root = root
	tr.height++
}

// remove unlinks n (found by its current key) and returns the 1-based rank
// it had, or 0 when it is not in the tree.
func (tr *tree) remove(n *node) int {
	var path [maxDepth]step
	lf, pos, base := tr.find(&n.key, &path)
	if pos >= lf.n || lf.item[pos] != n {
		return 0
	}
	for d := range tr.height {
		path[d].in.cnt[path[d].i]--
	}
	tr.length--
	lf.removeAt(pos)
	if tr.height > 0 && lf.n < tr.lmin() {
		tr.rebalance(&path)
	}
	return base + pos + 1
}

// rebalance fixes an underfull leaf at the end of path, and then each
// ancestor that its fix left underfull; the root shrinks when left with one
// child.
func (tr *tree) rebalance(path *[maxDepth]step) {
	for d := tr.height - 1; d >= 0; d-- {
		p, j := path[d].in, path[d].i
		if j > 0 { // prefer the left sibling; every inner node has two children
			j--
		}
		if d == tr.height-1 {
			tr.fixLeaves(p, j)
		} else {
			tr.fixInners(p, j)
		}
		if d == 0 {
			if p.n == 1 {
				tr.root, tr.lroot = p.kids[0], p.leaves[0]
				tr.height--
			}
			return
		}
		if p.n >= tr.imin() {
			return
		}
	}
}

// fixLeaves merges or evens out the leaves j and j+1 of p.
func (tr *tree) fixLeaves(p *inner, j int) {
	a, b := p.leaves[j], p.leaves[j+1]
	total := a.n + b.n
	if total <= tr.lcap*3/4 {
		moveEntries(a, a.n, b, 0, b.n)
		a.next = b.next
		p.removeKid(j + 1)
		p.cnt[j] = total
		return
	}
	if half := total / 2; a.n > half {
		moveEntries(b, 0, a, half, a.n-half)
	} else {
		moveEntries(a, a.n, b, 0, half-a.n)
	}
	p.s[j+1], p.t[j+1], p.m[j+1] = b.s[0], b.t[0], b.item[0].m
	p.cnt[j], p.cnt[j+1] = a.n, b.n
}

// fixInners merges or evens out the children j and j+1 of p.
func (tr *tree) fixInners(p *inner, j int) {
	a, b := p.kids[j], p.kids[j+1]
	total := a.n + b.n
	// The separator between a and b in p bounds b's first child.
	b.s[0], b.t[0], b.m[0] = p.s[j+1], p.t[j+1], p.m[j+1]
	if total <= tr.icap*3/4 {
		moveKids(a, a.n, b, 0, b.n)
		p.removeKid(j + 1)
		p.cnt[j] = a.total()
		return
	}
	if half := total / 2; a.n > half {
		moveKids(b, 0, a, half, a.n-half)
	} else {
		moveKids(a, a.n, b, 0, half-a.n)
	}
	p.s[j+1], p.t[j+1], p.m[j+1] = b.s[0], b.t[0], b.m[0]
	b.m[0] = ""
	p.cnt[j], p.cnt[j+1] = a.total(), b.total()
}

// rankOf is the 1-based rank of the entry with key k, or 0 when absent.
func (tr *tree) rankOf(k *key) int {
	var path [maxDepth]step
	lf, pos, base := tr.find(k, &path)
	if pos < lf.n && lf.s[pos] == k.s && lf.t[pos] == k.t && lf.item[pos].m == k.m {
		return base + pos + 1
	}
	return 0
}

// countLess is the number of entries whose oriented score is below s: those
// strictly better than s. No tie key is math.MinInt64 (seqs are positive),
// so (s, MinInt64) sorts before every entry with score s.
func (tr *tree) countLess(s int64) int {
	var path [maxDepth]step
	_, pos, base := tr.find(&key{s: s, t: math.MinInt64}, &path)
	return base + pos
}

// cursor walks entries in rank order; its leaf is nil past the end.
type cursor struct {
	lf *leaf
	i  int
}

func (c *cursor) node() *node {
	if c.lf == nil {
		return nil
	}
	return c.lf.item[c.i]
}

func (c *cursor) next() {
	if c.i++; c.i >= c.lf.n {
		c.lf, c.i = c.lf.next, 0
	}
}

// at is a cursor at 1-based rank r; past the end when r is out of range.
func (tr *tree) at(r int) cursor {
	if r < 1 || r > tr.length {
		return cursor{}
	}
	r--
	lf := tr.lroot
	if tr.height > 0 {
		in := tr.root
		for d := 0; ; d++ {
			i := 0
			for r >= in.cnt[i] {
				r -= in.cnt[i]
				i++
			}
			if d == tr.height-1 {
				lf = in.leaves[i]
				break
			}
			in = in.kids[i]
		}
	}
	return cursor{lf, r}
}

// byRank is the entry at 1-based rank r, or nil when r is out of range.
func (tr *tree) byRank(r int) *node {
	c := tr.at(r)
	return c.node()
}

func (lf *leaf) insertAt(i int, n *node) {
	copy(lf.s[i+1:lf.n+1], lf.s[i:lf.n])
	copy(lf.t[i+1:lf.n+1], lf.t[i:lf.n])
	copy(lf.item[i+1:lf.n+1], lf.item[i:lf.n])
	lf.s[i], lf.t[i], lf.item[i] = n.s, n.t, n
	lf.n++
}

func (lf *leaf) removeAt(i int) {
	copy(lf.s[i:], lf.s[i+1:lf.n])
	copy(lf.t[i:], lf.t[i+1:lf.n])
	copy(lf.item[i:], lf.item[i+1:lf.n])
	lf.n--
	lf.item[lf.n] = nil // the node may be deleted; do not keep it alive
}

// moveEntries moves k entries of src from si to dst at di, closing the gap
// in src and opening one in dst.
func moveEntries(dst *leaf, di int, src *leaf, si, k int) {
	copy(dst.s[di+k:dst.n+k], dst.s[di:dst.n])
	copy(dst.t[di+k:dst.n+k], dst.t[di:dst.n])
	copy(dst.item[di+k:dst.n+k], dst.item[di:dst.n])
	copy(dst.s[di:di+k], src.s[si:si+k])
	copy(dst.t[di:di+k], src.t[si:si+k])
	copy(dst.item[di:di+k], src.item[si:si+k])
	dst.n += k
	copy(src.s[si:], src.s[si+k:src.n])
	copy(src.t[si:], src.t[si+k:src.n])
	copy(src.item[si:], src.item[si+k:src.n])
	clear(src.item[src.n-k : src.n])
	src.n -= k
}

func (in *inner) total() int {
	t := 0
	for _, c := range in.cnt[:in.n] {
		t += c
	}
	return t
}

// insertKid puts a child (ni or nl) with separator sep and cnt entries at i.
func (in *inner) insertKid(i int, sep *key, cnt int, ni *inner, nl *leaf) {
	copy(in.cnt[i+1:in.n+1], in.cnt[i:in.n])
	copy(in.s[i+1:in.n+1], in.s[i:in.n])
	copy(in.t[i+1:in.n+1], in.t[i:in.n])
	copy(in.m[i+1:in.n+1], in.m[i:in.n])
	copy(in.kids[i+1:in.n+1], in.kids[i:in.n])
	copy(in.leaves[i+1:in.n+1], in.leaves[i:in.n])
	in.cnt[i], in.s[i], in.t[i], in.m[i], in.kids[i], in.leaves[i] = cnt, sep.s, sep.t, sep.m, ni, nl
	in.n++
}

func (in *inner) removeKid(i int) {
	copy(in.cnt[i:], in.cnt[i+1:in.n])
	copy(in.s[i:], in.s[i+1:in.n])
	copy(in.t[i:], in.t[i+1:in.n])
	copy(in.m[i:], in.m[i+1:in.n])
	copy(in.kids[i:], in.kids[i+1:in.n])
	copy(in.leaves[i:], in.leaves[i+1:in.n])
	in.n--
	in.m[in.n], in.kids[in.n], in.leaves[in.n] = "", nil, nil
}

// moveKids moves k children of src, with their separators and counts, from
// si to dst at di, closing the gap in src and opening one in dst.
func moveKids(dst *inner, di int, src *inner, si, k int) {
	copy(dst.cnt[di+k:dst.n+k], dst.cnt[di:dst.n])
	copy(dst.s[di+k:dst.n+k], dst.s[di:dst.n])
	copy(dst.t[di+k:dst.n+k], dst.t[di:dst.n])
	copy(dst.m[di+k:dst.n+k], dst.m[di:dst.n])
	copy(dst.kids[di+k:dst.n+k], dst.kids[di:dst.n])
	copy(dst.leaves[di+k:dst.n+k], dst.leaves[di:dst.n])
	copy(dst.cnt[di:di+k], src.cnt[si:si+k])
	copy(dst.s[di:di+k], src.s[si:si+k])
	copy(dst.t[di:di+k], src.t[si:si+k])
	copy(dst.m[di:di+k], src.m[si:si+k])
	copy(dst.kids[di:di+k], src.kids[si:si+k])
	copy(dst.leaves[di:di+k], src.leaves[si:si+k])
	dst.n += k
	copy(src.cnt[si:], src.cnt[si+k:src.n])
	copy(src.s[si:], src.s[si+k:src.n])
	copy(src.t[si:], src.t[si+k:src.n])
	copy(src.m[si:], src.m[si+k:src.n])
	copy(src.kids[si:], src.kids[si+k:src.n])
	copy(src.leaves[si:], src.leaves[si+k:src.n])
	clear(src.m[src.n-k : src.n])
	clear(src.kids[src.n-k : src.n])
	clear(src.leaves[src.n-k : src.n])
	src.n -= k
}
