package memstore_test

import (
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// TestDerivedDifferentialSeeds runs the derived boards' differential test
// on more seeds than the conformance suite does.
func TestDerivedDifferentialSeeds(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run("", func(t *testing.T) {
			t.Parallel()
			ranktest.DerivedDifferential(t, func(t *testing.T, now func() time.Time) rank.Store { return newStore(t, now) }, seed, 4000)
		})
	}
}

// FuzzDerived drives the derived boards' differential test with fuzz
// bytes: two bytes a choice (source, member, amount, clock step).
func FuzzDerived(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 30, 0, 0, 0, 5})
	f.Add([]byte{0, 1, 0, 3, 0, 40, 0, 0, 0, 29, 0, 2, 0, 3, 0, 0, 0, 0, 0, 20})
	f.Add([]byte{0, 3, 0, 1, 0, 10, 0, 1, 0, 4, 0, 1, 0, 9, 0, 0, 0, 28})
	f.Fuzz(func(t *testing.T, data []byte) {
		ranktest.DerivedFuzz(t, func(t *testing.T, now func() time.Time) rank.Store { return newStore(t, now) }, data)
	})
}
