package redisstore

import (
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// Two engines on one server are two nodes (R27): placement at once
// through both never overfills a cohort, and a league period's moves are
// made once whichever node first plays the next period.
func TestCohortNodes(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	clk := ranktest.NewClock(time.Now())
	a := newStore(t, srv, Config{Now: clk.Now, Prefix: "nodes"})
	b := newStore(t, srv, Config{Now: clk.Now, Prefix: "nodes"})
	ranktest.CohortNodes(t, clk, a, b)
}

// League moves over two real period boundaries (Redis's own clock).
func TestLeagueRealPeriods(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	ranktest.LeagueRealPeriods(t, newStore(t, testenv.StartRedis(t), Config{}))
}
