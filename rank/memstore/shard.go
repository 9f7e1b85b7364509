package memstore

import "github.com/wsgateway/wsgateway/rank"

// forest is one period's ranking over a board's shards (§9, R24): a tree
// per shard, a member in the tree of rank.ShardOf. Positions are global:
// a key's position is 1 + the entries strictly before it in every tree,
// and cursors merge the trees. Tie keys are the board's seq, one counter
// under the board's lock, so the merged order is exactly an unsharded
// board's (the Redis engine orders cross-shard ties by store time).
//
// An unsharded board has one tree and every method goes straight to it.
type forest struct {
	trees []*tree
}

func newForest(shards int) *forest {
	f := &forest{trees: make([]*tree, max(1, shards))}
	for i := range f.trees {
		f.trees[i] = newTree()
	}
	return f
}

// of is the tree that holds member m.
func (f *forest) of(m string) *tree {
	if len(f.trees) == 1 {
		return f.trees[0]
	}
	return f.trees[rank.ShardOf(m, len(f.trees))]
}

// len is the number of entries in every tree.
func (f *forest) len() int {
	n := 0
	for _, t := range f.trees {
		n += t.length
	}
	return n
}

// before is the number of entries of the trees other than own whose key
// is below k.
func (f *forest) before(k *key, own *tree) int {
	n := 0
	var path [maxDepth]step
	for _, t := range f.trees {
		if t == own {
			continue
		}
		_, pos, base := t.find(k, &path)
		n += base + pos
	}
	return n
}

// insert adds n (key set, not in a tree) and returns its 1-based position.
func (f *forest) insert(n *node) int {
	t := f.of(n.m)
	pos := t.insert(n)
	if len(f.trees) == 1 {
		return pos
	}
	return pos + f.before(&n.key, t)
}

// remove takes n out and returns the position it had.
func (f *forest) remove(n *node) int {
	t := f.of(n.m)
	pos := t.remove(n)
	if len(f.trees) == 1 {
		return pos
	}
	return pos + f.before(&n.key, t)
}

// rankOf is the 1-based position of the entry with key k, 0 when absent.
func (f *forest) rankOf(k *key) int {
	t := f.of(k.m)
	pos := t.rankOf(k)
	if pos == 0 || len(f.trees) == 1 {
		return pos
	}
	return pos + f.before(k, t)
}

// countLess is the number of entries strictly better than oriented score s.
func (f *forest) countLess(s int64) int {
	n := 0
	for _, t := range f.trees {
		n += t.countLess(s)
	}
	return n
}

// at is a cursor at 1-based position r, past the end when out of range.
func (f *forest) at(r int) fcursor {
	if len(f.trees) == 1 {
		return fcursor{one: f.trees[0].at(r)}
	}
	if r < 1 || r > f.len() {
		return fcursor{many: []cursor{}, cur: -1}
	}
	cs := make([]cursor, len(f.trees))
	if r <= walkMax {
		// Near the top (every page of R24's window): merge from the
		// first entries, r-1 steps.
		for i, t := range f.trees {
			cs[i] = t.at(1)
		}
		c := fcursor{many: cs}
		c.pick()
		for ; r > 1; r-- {
			c.next()
		}
		return c
	}
	k := f.select1(r)
	// Every tree's cursor at its first key not below k: the merge then
	// starts at k itself.
	var path [maxDepth]step
	for i, t := range f.trees {
		_, pos, base := t.find(k, &path)
		cs[i] = t.at(base + pos + 1)
	}
	c := fcursor{many: cs}
	c.pick()
	return c
}

// walkMax is the deepest position at reaches by merging from the top; a
// deeper one (an around window of a member far down) is found by select1.
const walkMax = 256

// select1 is the key at global position r (1 ≤ r ≤ len): the one tree
// holding it has it at the index where the key's global position is r, and
// a key's global position grows with its index in its tree, so a binary
// search per tree finds it.
func (f *forest) select1(r int) *key {
	for _, t := range f.trees {
		lo, hi := 1, t.length
		for lo <= hi {
			mid := (lo + hi) / 2
			n := t.byRank(mid)
			g := mid + f.before(&n.key, t)
			switch {
			case g == r:
				return &n.key
			case g < r:
				lo = mid + 1
			default:
				hi = mid - 1
			}
		}
	}
	panic("memstore: forest position out of range") // r was checked against len
}

// fcursor walks a forest in rank order: one tree's cursor, or a merge of
// one cursor per tree (cur is the index of the one at the smallest key).
type fcursor struct {
	one  cursor
	many []cursor // nil for a single tree
	cur  int
}

// ok reports whether the cursor is at an entry.
func (c *fcursor) ok() bool {
	if c.many == nil {
		return c.one.lf != nil
	}
	return c.cur >= 0
}

func (c *fcursor) node() *node {
	if c.many == nil {
		return c.one.node()
	}
	return c.many[c.cur].node()
}

func (c *fcursor) next() {
	if c.many == nil {
		c.one.next()
		return
	}
	c.many[c.cur].next()
	c.pick()
}

// pick points cur at the cursor with the smallest key, -1 when all ended.
// A linear scan: at most 64 shards, and pages are short.
func (c *fcursor) pick() {
	c.cur = -1
	var best *node
	for i := range c.many {
		n := c.many[i].node()
		if n != nil && (best == nil || n.key.less(&best.key)) {
			best, c.cur = n, i
		}
	}
}
