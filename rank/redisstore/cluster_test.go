package redisstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// startCluster starts a three-master Redis Cluster on free ports and
// returns its redis-cluster:// url.
func startCluster(t *testing.T) string {
	t.Helper()
	return testenv.StartRedisCluster(t, 3).URL()
}

// The whole conformance suite and the differential test on a three-node
// Redis Cluster: every script's keys share the board's hash tag, so every
// script runs on one node; DeleteBoard scans each master.
func TestCluster(t *testing.T) {
	t.Parallel()
	url := startCluster(t)
	factory := func(t *testing.T, now func() time.Time) rank.Store {
		client, err := NewClient(url)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := client.(*redis.ClusterClient); !ok {
			t.Fatalf("NewClient(%s) = %T, want a cluster client", url, client)
		}
		s, err := New(context.Background(), Config{Client: client, Now: now, Prefix: "c" + strings.TrimPrefix(t.Name(), "TestCluster/")})
		if err != nil {
			client.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("Conformance", func(t *testing.T) { ranktest.Run(t, factory) })
	t.Run("Differential", func(t *testing.T) {
		ranktest.Differential(t, newMem(t), factory(t, nil), 7, 1500)
	})
}
