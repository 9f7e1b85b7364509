package live

import "math/rand/v2"

// rangeIndex finds the views whose window score range intersects a span, in
// O((k+1)·log n) for k hits: a treap ordered by (lo, id) where every node
// also carries the largest hi in its subtree, so a search prunes every
// subtree that ends below the span. Ranges are in "goodness" space (higher
// ranks higher, whatever the board's order).
//
// Not safe for concurrent use; the engine's mutex guards it.
type rangeIndex struct {
	root *view
	n    int
}

// less orders views by (lo, id); ids are unique, so the order is total.
func less(a, b *view) bool {
	if a.lo != b.lo {
		return a.lo < b.lo
	}
	return a.id < b.id
}

func (v *view) fix() {
	v.maxHi = v.hi
	if v.left != nil {
		v.maxHi = max(v.maxHi, v.left.maxHi)
	}
	if v.right != nil {
		v.maxHi = max(v.maxHi, v.right.maxHi)
	}
}

// insert adds v, whose lo and hi are set and which is not in the index.
func (x *rangeIndex) insert(v *view) {
	v.left, v.right, v.prio, v.indexed = nil, nil, rand.Uint32(), true
	v.fix()
	x.root = treapInsert(x.root, v)
	x.n++
}

// remove takes v out of the index, if it is in it. v's lo must not have
// changed since it was inserted.
func (x *rangeIndex) remove(v *view) {
	if !v.indexed {
		return
	}
	x.root = treapRemove(x.root, v)
	v.left, v.right, v.indexed = nil, nil, false
	x.n--
}

// stab calls fn for every view with lo <= b and hi >= a.
func (x *rangeIndex) stab(a, b int64, fn func(*view)) { stab(x.root, a, b, fn) }

func stab(t *view, a, b int64, fn func(*view)) {
	for t != nil && t.maxHi >= a {
		stab(t.left, a, b, fn)
		if t.lo > b {
			return // t and its right subtree all start above the span
		}
		if t.hi >= a {
			fn(t)
		}
		t = t.right
	}
}

func treapInsert(t, v *view) *view {
	if t == nil {
		return v
	}
	if less(v, t) {
		t.left = treapInsert(t.left, v)
		if t.left.prio > t.prio {
			t = rotateRight(t)
		}
	} else {
		t.right = treapInsert(t.right, v)
		if t.right.prio > t.prio {
			t = rotateLeft(t)
		}
	}
	t.fix()
	return t
}

func treapRemove(t, v *view) *view {
	if t == nil {
		return nil
	}
	switch {
	case t == v:
		t = merge(t.left, t.right)
		if t != nil {
			t.fix()
		}
		return t
	case less(v, t):
		t.left = treapRemove(t.left, v)
	default:
		t.right = treapRemove(t.right, v)
	}
	t.fix()
	return t
}

// merge joins two treaps where every key of a is below every key of b.
func merge(a, b *view) *view {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.right = merge(a.right, b)
		a.fix()
		return a
	default:
		b.left = merge(a, b.left)
		b.fix()
		return b
	}
}

func rotateRight(t *view) *view {
	l := t.left
	t.left, l.right = l.right, t
	t.fix()
	l.fix()
	return l
}

func rotateLeft(t *view) *view {
	r := t.right
	t.right, r.left = r.left, t
	t.fix()
	r.fix()
	return r
}
