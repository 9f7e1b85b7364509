package memstore

// An order-statistic skip list in the manner of Redis's zskiplist: every
// forward link carries its span (how many level-0 steps it skips), so the
// position of a node and the node at a position are found in O(log n).

const (
	maxLevel = 32 // enough for 4^32 nodes
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

type link struct {
	next *node
	span int   // level-0 steps from this node to next (to the end when next is nil)
	s    int64 // next.s, kept here so that most comparisons do not touch next: a cache miss saved per level
}

// before reports whether the node l points to sorts before k.
func (l *link) before(k *key) bool {
	if l.s != k.s {
		return l.s < k.s
	}
	return l.next.key.less(k)
}

type node struct {
	key
	score   int64 // the member's score as stored
	reached int64 // the seq at which the member reached its current score
	level   []link
	one     [1]link // backing store of level for the (most common) level-1 nodes
}

// skiplist is not safe for concurrent use; its board's lock guards it.
type skiplist struct {
	head   node // sentinel; level has maxLevel links
	levels int  // levels in use, at least 1
	length int
	rng    uint64 // xorshift state for node levels
}

func newSkiplist(seed uint64) *skiplist {
	sl := &skiplist{levels: 1, rng: seed | 1}
	sl.head.level = make([]link, maxLevel)
	return sl
}

// randomLevel returns a level with P(level > k) = 4^-k, as Redis does.
func (sl *skiplist) randomLevel() int {
	lvl := 1
	for lvl < maxLevel {
		sl.rng ^= sl.rng << 13
		sl.rng ^= sl.rng >> 7
		sl.rng ^= sl.rng << 17
		if sl.rng&3 != 0 {
			break
		}
		lvl++
	}
	return lvl
}

// newNode makes a node with a random level; its key is set by the caller.
func (sl *skiplist) newNode() *node {
	n := &node{}
	if lvl := sl.randomLevel(); lvl == 1 {
		n.level = n.one[:]
	} else {
		n.level = make([]link, lvl)
	}
	return n
}

// insert links n (key set, level allocated, not in the list) and returns its
// 1-based rank.
func (sl *skiplist) insert(n *node) int {
	var update [maxLevel]*node
	var rank [maxLevel]int
	x := &sl.head
	for i := sl.levels - 1; i >= 0; i-- {
		if i < sl.levels-1 {
			rank[i] = rank[i+1]
		}
		for x.level[i].next != nil && x.level[i].before(&n.key) {
			rank[i] += x.level[i].span
			x = x.level[i].next
		}
		update[i] = x
	}
	lvl := len(n.level)
	if lvl > sl.levels {
		for i := sl.levels; i < lvl; i++ {
			rank[i] = 0
			update[i] = &sl.head
			update[i].level[i].span = sl.length
		}
		sl.levels = lvl
	}
	for i := range lvl {
		n.level[i].next, n.level[i].s = update[i].level[i].next, update[i].level[i].s
		update[i].level[i].next, update[i].level[i].s = n, n.s
		n.level[i].span = update[i].level[i].span - (rank[0] - rank[i])
		update[i].level[i].span = rank[0] - rank[i] + 1
	}
	for i := lvl; i < sl.levels; i++ {
		update[i].level[i].span++
	}
	sl.length++
	return rank[0] + 1
}

// remove unlinks n (found by its current key) and returns the 1-based rank
// it had, or 0 when it is not in the list. n keeps its level for reinsertion.
func (sl *skiplist) remove(n *node) int {
	var update [maxLevel]*node
	traversed := 0
	x := &sl.head
	for i := sl.levels - 1; i >= 0; i-- {
		for x.level[i].next != nil && x.level[i].before(&n.key) {
			traversed += x.level[i].span
			x = x.level[i].next
		}
		update[i] = x
	}
	if x.level[0].next != n {
		return 0
	}
	for i := range sl.levels {
		if update[i].level[i].next == n {
			update[i].level[i].span += n.level[i].span - 1
			update[i].level[i].next, update[i].level[i].s = n.level[i].next, n.level[i].s
		} else {
			update[i].level[i].span--
		}
	}
	for sl.levels > 1 && sl.head.level[sl.levels-1].next == nil {
		sl.levels--
	}
	sl.length--
	for i := range n.level {
		n.level[i] = link{}
	}
	return traversed + 1
}

// rankOf is the 1-based rank of the node with key k, or 0 when absent.
func (sl *skiplist) rankOf(k *key) int {
	rank := 0
	x := &sl.head
	for i := sl.levels - 1; i >= 0; i-- {
		for x.level[i].next != nil && (x.level[i].s < k.s || x.level[i].s == k.s && !k.less(&x.level[i].next.key)) {
			rank += x.level[i].span
			x = x.level[i].next
		}
		if x != &sl.head && x.key == *k {
			return rank
		}
	}
	return 0
}

// byRank is the node at 1-based rank r, or nil when r is out of range.
func (sl *skiplist) byRank(r int) *node {
	if r < 1 || r > sl.length {
		return nil
	}
	traversed := 0
	x := &sl.head
	for i := sl.levels - 1; i >= 0; i-- {
		for x.level[i].next != nil && traversed+x.level[i].span <= r {
			traversed += x.level[i].span
			x = x.level[i].next
		}
		if traversed == r {
			return x
		}
	}
	return nil
}

// countLess is the number of nodes whose oriented score is below s: those
// strictly better than s.
func (sl *skiplist) countLess(s int64) int {
	n := 0
	x := &sl.head
	for i := sl.levels - 1; i >= 0; i-- {
		for x.level[i].next != nil && x.level[i].s < s {
			n += x.level[i].span
			x = x.level[i].next
		}
	}
	return n
}

// first is the node of rank 1, or nil.
func (sl *skiplist) first() *node { return sl.head.level[0].next }
