package redisstore

import (
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// TestConformanceSharded runs the sharded boards' suite (the twin
// comparison among it) on one Redis.
func TestConformanceSharded(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	ranktest.RunSharded(t, func(t *testing.T, now func() time.Time) rank.Store {
		return newStore(t, srv, Config{Now: now})
	})
}
