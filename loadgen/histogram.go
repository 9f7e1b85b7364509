package loadgen

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// subBits sets the histogram's precision: each power of two is split into
// 2^subBits linear buckets, so a recorded value is off by less than 1/128
// (0.8%) — HDR histogram's idea with fixed two-significant-digit precision.
const subBits = 7

// nBuckets covers every non-negative int64.
const nBuckets = (64 - subBits) << subBits

// Histogram is a log-linear histogram of durations, safe for concurrent
// Record calls (one atomic add per bucket; no lock, no allocation).
type Histogram struct {
	counts [nBuckets]atomic.Int64
	n      atomic.Int64
	sum    atomic.Int64 // nanoseconds
	max    atomic.Int64
}

func bucketOf(v int64) int {
	if v < 1<<subBits {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - subBits - 1
	return (shift+1)<<subBits + int(v>>shift) - 1<<subBits
}

// bucketTop is the largest value that falls in bucket i.
func bucketTop(i int) int64 {
	shift := i>>subBits - 1
	if shift < 0 {
		return int64(i)
	}
	mantissa := int64(i&(1<<subBits-1)) + 1<<subBits
	return (mantissa+1)<<shift - 1
}

// Record adds one value; negative values count as 0.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[bucketOf(v)].Add(1)
	h.n.Add(1)
	h.sum.Add(v)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// Count is the number of values recorded.
func (h *Histogram) Count() int64 { return h.n.Load() }

// Max is the largest value recorded.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Mean is the average value.
func (h *Histogram) Mean() time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / n)
}

// Quantile is the smallest bucket bound at or below which a fraction q of
// the values fall (never above Max).
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := int64(q*float64(n) + 0.5)
	rank = min(max(rank, 1), n)
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return time.Duration(min(bucketTop(i), h.max.Load()))
		}
	}
	return h.Max()
}

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
		}
	}
	h.n.Add(o.n.Load())
	h.sum.Add(o.sum.Load())
	m := o.max.Load()
	for {
		cur := h.max.Load()
		if m <= cur || h.max.CompareAndSwap(cur, m) {
			return
		}
	}
}

// drainInto moves every value of h into dst, leaving h empty: the progress
// line's per-second window. Values recorded concurrently land in either.
func (h *Histogram) drainInto(dst *Histogram) {
	for i := range h.counts {
		if c := h.counts[i].Swap(0); c != 0 {
			dst.counts[i].Add(c)
		}
	}
	dst.n.Add(h.n.Swap(0))
	dst.sum.Add(h.sum.Swap(0))
	dst.max.Store(max(dst.max.Load(), h.max.Swap(0)))
}

// Quantiles summarise a histogram in milliseconds.
type Quantiles struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Summary is h's quantiles.
func (h *Histogram) Summary() Quantiles {
	return Quantiles{
		Count: h.Count(), Mean: ms(h.Mean()),
		P50: ms(h.Quantile(0.50)), P90: ms(h.Quantile(0.90)), P99: ms(h.Quantile(0.99)),
		P999: ms(h.Quantile(0.999)), Max: ms(h.Max()),
	}
}

// CDF returns up to n points (value, fraction at or below) for a chart.
func (h *Histogram) CDF(n int) [][2]float64 {
	total := h.n.Load()
	if total == 0 {
		return nil
	}
	var pts [][2]float64
	var seen int64
	for i := range h.counts {
		c := h.counts[i].Load()
		if c == 0 {
			continue
		}
		seen += c
		pts = append(pts, [2]float64{ms(time.Duration(min(bucketTop(i), h.max.Load()))), float64(seen) / float64(total)})
	}
	if len(pts) <= n {
		return pts
	}
	// Thin out evenly, always keeping the last point (the maximum).
	out := make([][2]float64, 0, n)
	for k := range n - 1 {
		out = append(out, pts[k*len(pts)/(n-1)])
	}
	return append(out, pts[len(pts)-1])
}
