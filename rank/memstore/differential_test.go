package memstore_test

import (
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// TestDifferentialModel holds the tree engine equal to the naive model
// on random streams of events over every order × mode × tiebreak.
func TestDifferentialModel(t *testing.T) {
	t.Parallel()
	for _, seed := range []int64{1, 2, 3} {
		t.Run("", func(t *testing.T) {
			t.Parallel()
			ranktest.Differential(t, newStore(t, nil), newModel(), seed, 4000)
		})
	}
}

// TestDifferentialReuse runs Differential twice on the same stores: the
// second run starts by deleting the boards of the first.
func TestDifferentialReuse(t *testing.T) {
	t.Parallel()
	s, m := newStore(t, nil), newModel()
	ranktest.Differential(t, s, m, 7, 1500)
	ranktest.Differential(t, s, m, 8, 1500)
}

func FuzzEquivalence(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{0x01, 0x08, 5, 0, 0x01, 5, 0, 0x00, 5, 0})                // incr asc, retry
	f.Add([]byte{0x1a, 0x00, 10, 0, 0x01, 10, 0, 0x02, 10, 0, 0x0b, 9, 1}) // best shared, ties
	f.Add([]byte{0x91, 0x80, 0x7f, 0, 0x80, 0x05, 0, 0x81, 0x85, 0})       // max_delta, extremes
	f.Add([]byte{0x04, 0x00, 3, 0, 0x41, 3, 2, 0x10, 4, 0, 0x17, 1, 0})    // set, names, reuse
	f.Fuzz(func(t *testing.T, script []byte) {
		ranktest.ApplyScript(t, newStore(t, nil), newModel(), script)
	})
}

// TestDifferentialModeration holds the tree engine equal to the model with
// bans, lifts, global bans, until expiry and removals among the events,
// compared after every step.
func TestDifferentialModeration(t *testing.T) {
	t.Parallel()
	for _, seed := range []int64{1, 2, 3} {
		t.Run("", func(t *testing.T) {
			t.Parallel()
			clk := ranktest.NewClock(time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC))
			ranktest.DifferentialModeration(t, newStore(t, clk.Now), newModelAt(clk.Now), clk, seed, 3000)
		})
	}
}

// FuzzHotDifferential holds a hot board equal to the reference formula on
// random events across many bucket boundaries (ranktest.HotDifferential),
// one seed per input.
func FuzzHotDifferential(f *testing.F) {
	for _, seed := range []uint64{0, 1, 7, 42, 1 << 40} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		clk := ranktest.NewClock(time.Date(2026, 2, 3, 4, 10, 0, 0, time.UTC))
		ranktest.HotDifferential(t, newStore(t, clk.Now), clk, "fuzz-hot", seed, 300)
	})
}
