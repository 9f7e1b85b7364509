package loadgen

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Lifetimes spread uniformly over [Churn/2, 3·Churn/2], so connections
// dialled together do not leave together.
func TestLifetimeJitter(t *testing.T) {
	t.Parallel()
	g := &Generator{cfg: Config{Churn: 100 * time.Millisecond}}
	r := rand.New(rand.NewPCG(1, 2))
	const n = 10000
	lo, hi, sum := time.Hour, time.Duration(0), time.Duration(0)
	for range n {
		d := g.lifetime(r)
		lo, hi, sum = min(lo, d), max(hi, d), sum+d
	}
	if lo < 50*time.Millisecond || hi > 150*time.Millisecond {
		t.Errorf("lifetimes in [%s, %s]; want within [50ms, 150ms]", lo, hi)
	}
	if lo > 55*time.Millisecond || hi < 145*time.Millisecond {
		t.Errorf("lifetimes in [%s, %s]: not spread over [50ms, 150ms]", lo, hi)
	}
	if mean := sum / n; mean < 97*time.Millisecond || mean > 103*time.Millisecond {
		t.Errorf("mean lifetime %s; want 100ms", mean)
	}
}
