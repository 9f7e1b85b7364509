package redisstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// TestDifferentialModeration holds the Redis engine equal to the memory
// engine with bans, lifts, global bans, until expiry and removals among the
// events, compared after every step, both on one injected store clock.
func TestDifferentialModeration(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	for _, seed := range []int64{1, 2} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			clk := ranktest.NewClock(time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC))
			mem, err := memstore.New(rank.Hooks{}, memstore.Config{Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mem.Close() })
			ranktest.DifferentialModeration(t, mem, newStore(t, srv, Config{Now: clk.Now}), clk, seed, 2000)
		})
	}
}
