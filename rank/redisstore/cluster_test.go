package redisstore

import (
	"context"
	"errors"
	"os/exec"
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
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		testenv.Missing(t, "redis-cli", "apt-get install -y redis-tools")
	}
	var addrs []string
	for range 3 {
		// The bus port is port+10000; a node whose bus port is out of range
		// exits at start and testenv tries another port.
		n := testenv.StartRedis(t, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000")
		addrs = append(addrs, n.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		testenv.Eventually(t, 20*time.Second, "cluster_state:ok on "+a, func() error {
			info, err := c.ClusterInfo(context.Background()).Result()
			if err == nil && !strings.Contains(info, "cluster_state:ok") {
				err = errors.New("not ok yet")
			}
			return err
		})
		c.Close()
	}
	return "redis-cluster://" + strings.Join(addrs, ",")
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
	t.Run("ShardsSpread", func(t *testing.T) { testShardsSpread(t, factory(t, nil).(*Store)) })
	t.Run("Differential", func(t *testing.T) {
		ranktest.Differential(t, newMem(t), factory(t, nil), 7, 1500)
	})
}
