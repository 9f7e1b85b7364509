package rank

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Decay makes a board "hot" (docs/protocol.md §8, R22): its events land in
// buckets of Bucket (aligned to the unix epoch, UTC) and a member's score is
// Σ_{k<Buckets} Factor^k × (the sum of its deltas in the k-th bucket back
// from the current one), rounded to 3 decimals. The zero value is no decay.
// Decay is a plain value so that Board stays comparable.
type Decay struct {
	Bucket  Duration `json:"bucket"`
	Buckets int      `json:"buckets"`
	Factor  float64  `json:"factor"`
}

// Limits of a decay config.
const (
	MinDecayBucket  = time.Minute
	MaxDecayBuckets = 400
	// HotDecimals is how many decimals a hot board's scores carry: every
	// score an engine returns for a hot board is in thousandths.
	HotDecimals = 3
	// MaxHotBucketSum bounds a member's sum of deltas in one bucket of a hot
	// board (else ErrOutOfRange): with at most MaxDecayBuckets buckets the
	// decayed score in thousandths stays within ±(2^53-1).
	MaxHotBucketSum = MaxScore / 1000 / MaxDecayBuckets
)

// IsZero reports whether d is unset (the board does not decay).
func (d Decay) IsZero() bool { return d == Decay{} }

// Hot reports whether the board decays.
func (b Board) Hot() bool { return !b.Decay.IsZero() }

// Decimals is how many decimals the board's scores carry on the wire: every
// int64 score an engine returns for the board is in units of 10^-Decimals
// (3 for hot boards, else 0).
func (b Board) Decimals() int {
	if b.Hot() {
		return HotDecimals
	}
	return 0
}

// BucketMs is the bucket length in milliseconds.
func (d Decay) BucketMs() int64 { return time.Duration(d.Bucket).Milliseconds() }

// BucketAt is the index of the bucket that holds t: ⌊unix ms / bucket ms⌋.
func (d Decay) BucketAt(t time.Time) int64 {
	ms, span := t.UnixMilli(), d.BucketMs()
	q := ms / span
	if ms%span < 0 {
		q--
	}
	return q
}

// BucketStart is when bucket idx begins.
func (d Decay) BucketStart(idx int64) time.Time { return time.UnixMilli(idx * d.BucketMs()).UTC() }

// UnmarshalJSON reads a decay object strictly (exact, known, unrepeated
// names), as board configs are read.
func (d *Decay) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*d = Decay{}
		return nil
	}
	if _, err := strictKeys(b, func(key string) bool {
		return key == "bucket" || key == "buckets" || key == "factor"
	}); err != nil {
		return fmt.Errorf("field decay: %v (want bucket, buckets and factor)", err)
	}
	type plain Decay // no UnmarshalJSON: no recursion
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("field decay: %v", jsonErrorText(err))
	}
	*d = Decay(p)
	return nil
}

// validateDecay checks a hot board's decay against the rest of its config.
func validateDecay(b Board) error {
	d := b.Decay
	if d.IsZero() {
		return nil
	}
	if b.Mode != Incr {
		return fmt.Errorf("needs mode incr, not %s", b.Mode)
	}
	if b.Reset != None {
		return fmt.Errorf("needs reset none, not %s", b.Reset)
	}
	span := time.Duration(d.Bucket)
	if span < MinDecayBucket || span%time.Minute != 0 || (24*time.Hour)%span != 0 {
		return fmt.Errorf("bucket %s is not a whole number of minutes from 1m that divides 24h (1m, 15m, 1h, 6h)", span)
	}
	if d.Buckets < 1 || d.Buckets > MaxDecayBuckets {
		return fmt.Errorf("buckets %d is not within 1..%d", d.Buckets, MaxDecayBuckets)
	}
	if !(d.Factor > 0 && d.Factor < 1) {
		return fmt.Errorf("factor %v is not within (0, 1)", d.Factor)
	}
	return nil
}

// DecayedScore is the reference of a hot board's score (R22) from a
// member's per-bucket sums: sums[k] is the sum of its deltas in the k-th
// bucket back from the current one (len(sums) ≤ Buckets; missing = 0). It
// returns the score in thousandths, rounded half away from zero. Both
// engines compute exactly this, in this order of operations (the Redis
// engine's Lua included), so they agree to the bit: the weight is built by
// repeated multiplication from 1, the terms are added from k = 0 up.
func (d Decay) DecayedScore(sums []int64) int64 {
	acc, w := 0.0, 1.0
	for k := 0; k < len(sums) && k < d.Buckets; k++ {
		if sums[k] != 0 {
			// The conversions forbid fusing into an FMA, which Lua cannot do.
			acc = float64(acc + float64(w*float64(sums[k])))
		}
		w = float64(w * d.Factor)
	}
	return Thousandths(acc)
}

// Thousandths is x × 1000 rounded half away from zero (as math.Round).
func Thousandths(x float64) int64 {
	return int64(math.Round(float64(x * 1000)))
}

// HotSums turns a member's bucket sums (bucket index → sum) into the
// per-k-back slice DecayedScore takes, at current bucket cur; it reports
// false when no bucket with an event is within the window (the member has
// left the board). A bucket with events has an entry even when its sum is
// 0, so such a member stays on the board with 0.
func (d Decay) HotSums(sums map[int64]int64, cur int64) ([]int64, bool) {
	out := make([]int64, d.Buckets)
	in := false
	for idx, s := range sums {
		k := cur - idx
		if k < 0 || k >= int64(d.Buckets) {
			continue
		}
		out[k] += s
		in = true
	}
	return out, in
}

// CheckDecayChange refuses a config change that adds, removes or alters
// decay on an existing board: its stored bucket sums mean nothing under
// another bucket, and plain scores have no buckets. Both engines call it in
// PutBoard.
func CheckDecayChange(old, next Board) error {
	if old.Decay != next.Decay {
		return fmt.Errorf("%w: field decay: cannot change on an existing board (delete it and create it again)", ErrInvalidConfig)
	}
	return nil
}

// HotBucket decides which bucket an event of time t lands in at store time
// now (after Admit): the bucket holding t, or the current one for a t a
// little ahead of now (R17 allows MaxAhead). A bucket that has left the
// window is board_closed with reason outside_window: the event would
// count for nothing.
func (d Decay) HotBucket(t, now time.Time) (int64, error) {
	cur := d.BucketAt(now)
	eb := min(d.BucketAt(t), cur)
	if cur-eb >= int64(d.Buckets) {
		return 0, &ClosedError{Reason: ClosedOutsideWindow}
	}
	return eb, nil
}
