package memstore

// Group standings: cohorts (§12, cohort.go) and regions (§17, region.go)
// are both rankings of some of a period's entries. A group keeps a tree
// holding the period's own nodes (a node's key changes only while it is out
// of every tree), so a rank within a group is a plain position with the
// board's order and ties, and hiding, showing, removing and erasing an entry
// are the same for both kinds. They differ only in how a member is placed.

import "github.com/wsgateway/wsgateway/rank"

// groups is one period's groups of one kind, by key K.
type groups[K comparable] struct {
	of   map[string]K // each placed member's group
	sets map[K]*tree  // each group's ranking
}

func newGroups[K comparable]() groups[K] {
	return groups[K]{of: map[string]K{}, sets: map[K]*tree{}}
}

// tree is group k's tree, made when it has none.
func (g *groups[K]) tree(k K) *tree {
	t := g.sets[k]
	if t == nil {
		t = newTree()
		g.sets[k] = t
	}
	return t
}

// leave takes n out of its group's tree (a ban hides it, a removal drops
// it); its placement stays, so it comes back to the same group.
func (g *groups[K]) leave(n *node) {
	if k, ok := g.of[n.m]; ok {
		if t := g.sets[k]; t != nil {
			t.remove(n)
		}
	}
}

// enter puts n back in its group's tree (a ban lifted).
func (g *groups[K]) enter(n *node) {
	if k, ok := g.of[n.m]; ok {
		g.tree(k).insert(n)
	}
}

// forget drops member's placement; it reports whether it had one. Its
// node must be out of the tree (leave).
func (g *groups[K]) forget(member string) bool {
	_, ok := g.of[member]
	delete(g.of, member)
	return ok
}

// nodes lists the nodes of every group's tree, for rekey.
func (g *groups[K]) nodes() map[K][]*node {
	out := make(map[K][]*node, len(g.sets))
	for k, t := range g.sets {
		ns := make([]*node, 0, t.length)
		for cur := t.at(1); cur.node() != nil; cur.next() {
			ns = append(ns, cur.node())
		}
		out[k] = ns
	}
	return out
}

// rekey rebuilds the trees after their nodes were given new keys
// (reconfigure): a tree is ordered by the keys its nodes had.
func (g *groups[K]) rekey(nodes map[K][]*node) {
	for k, ns := range nodes {
		t := newTree()
		for _, n := range ns {
			t.insert(n)
		}
		g.sets[k] = t
	}
}

// groupRank is member node n's rank and neighbours within tree t, the
// group it is in. b.mu held.
func (b *board) groupRank(z *zset, t *tree, n *node, around int) rank.MemberRank {
	pos := t.rankOf(&n.key)
	lo := max(1, pos-around)
	hi := min(t.length, pos+around)
	return rank.MemberRank{
		Member: n.m,
		Found:  true,
		Rank:   b.rankInTree(t, n, pos),
		Score:  n.score,
		Name:   b.names[n.m],
		Around: b.treeEntries(z, t, lo, hi-lo+1),
	}
}

// groupPage is entries [offset, offset+limit) of group tree t (nil: a
// group nobody is in) into pg.
func (b *board) groupPage(pg *rank.Page, z *zset, t *tree, offset, limit int) {
	if t == nil {
		return
	}
	pg.Total = int64(t.length)
	pg.Entries = b.treeEntries(z, t, offset+1, limit)
}

// leaveGroups takes n out of the trees of its cohort and region.
func (z *zset) leaveGroups(n *node) {
	if z.co != nil {
		z.co.leave(n)
	}
	if z.rg != nil {
		z.rg.leave(n)
	}
}

// enterGroups puts n back in the trees of its cohort and region.
func (z *zset) enterGroups(n *node) {
	if z.co != nil {
		z.co.enter(n)
	}
	if z.rg != nil {
		z.rg.enter(n)
	}
}
