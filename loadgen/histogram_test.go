package loadgen

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestBucketsAreContiguousAndTight(t *testing.T) {
	t.Parallel()
	prevTop := int64(-1)
	for i := range nBuckets {
		top := bucketTop(i)
		if top <= prevTop {
			t.Fatalf("bucket %d tops at %d, not above %d", i, top, prevTop)
		}
		for _, v := range []int64{prevTop + 1, top} {
			if got := bucketOf(v); got != i {
				t.Fatalf("bucketOf(%d) = %d; want %d", v, got, i)
			}
		}
		if lo := prevTop + 1; lo >= 1<<subBits && float64(top-lo) > float64(lo)/(1<<subBits) {
			t.Fatalf("bucket %d [%d, %d] wider than 1/%d of its values", i, lo, top, 1<<subBits)
		}
		prevTop = top
		if top < 0 || top == 1<<63-1 {
			break
		}
	}
}

// Quantiles agree with exact order statistics within the bucket precision.
func TestQuantilesMatchSortedValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		gen  func(r *rand.Rand) time.Duration
	}{
		{"uniform", func(r *rand.Rand) time.Duration { return time.Duration(r.Int64N(int64(10 * time.Millisecond))) }},
		{"exponential", func(r *rand.Rand) time.Duration { return time.Duration(r.ExpFloat64() * float64(time.Millisecond)) }},
		{"bimodal", func(r *rand.Rand) time.Duration {
			if r.IntN(100) == 0 {
				return 200*time.Millisecond + time.Duration(r.Int64N(int64(time.Millisecond)))
			}
			return 300*time.Microsecond + time.Duration(r.Int64N(int64(50*time.Microsecond)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(1, 2))
			var h Histogram
			vals := make([]time.Duration, 100000)
			for i := range vals {
				vals[i] = tc.gen(r)
				h.Record(vals[i])
			}
			slices.Sort(vals)
			for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
				exact := vals[min(int(q*float64(len(vals))+0.5), len(vals))-1]
				got := h.Quantile(q)
				if got < exact || float64(got-exact) > float64(exact)/100+1 {
					t.Errorf("q%.3f = %v; exact %v", q, got, exact)
				}
			}
			if h.Max() != vals[len(vals)-1] || h.Count() != int64(len(vals)) {
				t.Errorf("max %v count %d", h.Max(), h.Count())
			}
		})
	}
}

func TestConcurrentRecordAndDrain(t *testing.T) {
	t.Parallel()
	var h, win, total Histogram
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 10000 {
				h.Record(time.Duration(g*10000 + i))
			}
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			h.drainInto(&win)
		}
	}()
	wg.Wait()
	<-done
	h.drainInto(&win)
	total.Merge(&win)
	if total.Count() != 40000 || total.Max() != 39999 || h.Count() != 0 {
		t.Fatalf("count %d max %v left %d", total.Count(), total.Max(), h.Count())
	}
}

func TestEmptyHistogram(t *testing.T) {
	t.Parallel()
	var h Histogram
	if s := h.Summary(); s != (Quantiles{}) || h.CDF(10) != nil {
		t.Fatalf("empty summary %+v", s)
	}
}
