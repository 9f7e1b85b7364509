package memstore_test

import (
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// The memory engine is one node: R27's placement and league fold under
// concurrent applies on one store (ranktest.CohortNodes with the store
// passed as both nodes).
func TestCohortNodes(t *testing.T) {
	t.Parallel()
	clk := ranktest.NewClock(time.Now())
	s := newStore(t, clk.Now)
	ranktest.CohortNodes(t, clk, s, s)
}

// League moves over two real period boundaries (the store's real clock).
func TestLeagueRealPeriods(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	ranktest.LeagueRealPeriods(t, newStore(t, nil))
}
