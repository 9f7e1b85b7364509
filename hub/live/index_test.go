package live

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRangeIndex checks stab against a brute-force scan through random
// inserts, removals and queries, including unbounded ranges.
func TestRangeIndex(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var x rangeIndex
	var in []*view
	randRange := func() (int64, int64) {
		a, b := rng.Int64N(1000), rng.Int64N(1000)
		if a > b {
			a, b = b, a
		}
		switch rng.IntN(10) {
		case 0:
			a = math.MinInt64
		case 1:
			b = math.MaxInt64
		}
		return a, b
	}
	for id := uint64(1); id <= 5000; id++ {
		switch op := rng.IntN(10); {
		case op < 5 || len(in) == 0:
			v := &view{id: id}
			v.lo, v.hi = randRange()
			x.insert(v)
			in = append(in, v)
		case op < 7:
			i := rng.IntN(len(in))
			x.remove(in[i])
			x.remove(in[i]) // twice is harmless
			in = slices.Delete(in, i, i+1)
		default:
			a, b := randRange()
			var got, want []uint64
			x.stab(a, b, func(v *view) { got = append(got, v.id) })
			for _, v := range in {
				if v.lo <= b && v.hi >= a {
					want = append(want, v.id)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("stab(%d, %d) = %v, want %v", a, b, got, want)
			}
		}
		if x.n != len(in) {
			t.Fatalf("index holds %d, want %d", x.n, len(in))
		}
	}
	checkTreap(t, x.root)
}

// checkTreap verifies order, heap priority and the maxHi augmentation.
func checkTreap(t *testing.T, v *view) (lo, hi *view, maxHi int64) {
	t.Helper()
	if v == nil {
		return nil, nil, math.MinInt64
	}
	m := v.hi
	lo, hi = v, v
	if v.left != nil {
		l, h, mh := checkTreap(t, v.left)
		if !less(h, v) || v.left.prio > v.prio {
			t.Fatalf("left child of %d out of order", v.id)
		}
		lo, m = l, max(m, mh)
	}
	if v.right != nil {
		l, h, mh := checkTreap(t, v.right)
		if !less(v, l) || v.right.prio > v.prio {
			t.Fatalf("right child of %d out of order", v.id)
		}
		hi, m = h, max(m, mh)
	}
	if v.maxHi != m {
		t.Fatalf("maxHi of %d is %d, want %d", v.id, v.maxHi, m)
	}
	return lo, hi, m
}
