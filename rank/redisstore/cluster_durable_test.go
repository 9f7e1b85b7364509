package redisstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// boardOnMaster puts a default board whose slot master (an index in
// c.Nodes) serves, and returns its id.
func boardOnMaster(t *testing.T, c *testenv.RedisCluster, s *Store, master int, prefix string) string {
	t.Helper()
	for i := range 1000 {
		id := fmt.Sprintf("%s%d", prefix, i)
		if c.Owner(t, c.KeySlot(t, id)) == master {
			mustPut(t, s, rank.DefaultBoard(id))
			return id
		}
	}
	t.Fatalf("no board on master %d", master)
	return ""
}

// With Replicas = 1 on a Redis Cluster each master's writes wait for that
// master's replica: while one master's only replica is frozen, applies to
// a board on that master answer unavailable (the sink still hears the
// change the master made) while a board on another master is
// acknowledged; a re-send through another client, whose connections never
// carried the first write, is not acknowledged either until the replica
// has it; once it thaws, the re-send is acknowledged as a duplicate and
// the replica holds the standings.
func TestClusterReplicaWait(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	c := testenv.StartRedisClusterReplicas(t, 3, 1)
	var mu sync.Mutex
	var sunk []rank.Change
	hooks := rank.Hooks{Sink: func(ch []rank.Change) {
		mu.Lock()
		sunk = append(sunk, ch...)
		mu.Unlock()
	}}
	cfg := Config{Prefix: "crw", Replicas: 1, ReplicaTimeout: time.Second, Timeout: 3 * time.Second, Logger: tlog(t)}
	a := newOn(t, c.URL(), hooks, cfg)
	b := newOn(t, c.URL(), rank.Hooks{}, cfg)
	d := newOn(t, c.URL(), rank.Hooks{}, cfg) // writes nothing but its sync keys
	frozen, live := boardOnMaster(t, c, a, 0, "f"), boardOnMaster(t, c, a, 1, "l")
	replica := c.Nodes[3]
	if c.ReplicaOf[3] != 0 {
		t.Fatalf("node 3 replicates %d, want master 0", c.ReplicaOf[3])
	}

	for _, board := range []string{frozen, live} {
		if _, err := rank.ApplyWait(t.Context(), b, incr(board, "e1", "m", 5)); err != nil {
			t.Fatalf("apply to %s with the replicas in sync: %v", board, err)
		}
	}
	replica.Pause()
	var wg sync.WaitGroup
	var errFrozen, errLive error
	e2 := incr(frozen, "e2", "m", 7)
	wg.Go(func() { _, errFrozen = rank.ApplyWait(t.Context(), a, e2) })
	wg.Go(func() { _, errLive = rank.ApplyWait(t.Context(), a, incr(live, "e2", "m", 7)) })
	wg.Wait()
	if !rank.IsUnavailable(errFrozen) {
		t.Fatalf("apply to the board whose master's replica is frozen: %v, want unavailable", errFrozen)
	}
	if errLive != nil {
		t.Fatalf("apply to a board on another master meanwhile: %v, want acknowledged", errLive)
	}
	mu.Lock()
	heard := false
	for _, ch := range sunk {
		heard = heard || (ch.Board == frozen && ch.New == 12)
	}
	mu.Unlock()
	if !heard {
		t.Fatalf("sink heard %+v, want the unconfirmed change too", sunk)
	}
	if _, err := rank.ApplyWait(t.Context(), b, e2); !rank.IsUnavailable(err) {
		t.Fatalf("re-send through another client with the replica frozen: %v, want unavailable", err)
	}
	// A call answered from a record written on another connection is
	// confirmed apart (confirmEarlier), by a write in its slot and a WAIT
	// on its master: a WAIT alone, on a connection that wrote nothing,
	// would answer at once.
	found := &call{e: e2, found: true}
	d.lanes[0].wait.confirmEarlier(t.Context(), d.client, []*call{found})
	if !rank.IsUnavailable(found.err) {
		t.Fatalf("an earlier write confirmed with the replica frozen: %v, want unavailable", found.err)
	}
	replica.Resume()
	testenv.Eventually(t, 20*time.Second, "the earlier write confirmed", func() error {
		found = &call{e: e2, found: true}
		d.lanes[0].wait.confirmEarlier(t.Context(), d.client, []*call{found})
		return found.err
	})
	testenv.Eventually(t, 20*time.Second, "the re-send acknowledged", func() error {
		r, err := rank.ApplyWait(t.Context(), b, e2)
		if err != nil {
			return err
		}
		if !r.Duplicate || r.Score != 12 {
			return fmt.Errorf("re-send answered %+v, want the first result as a duplicate", r)
		}
		return nil
	})
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr(), OnConnect: func(ctx context.Context, cn *redis.Conn) error {
		return cn.ReadOnly(ctx).Err() // a replica answers reads of its slots only so
	}})
	defer rc.Close()
	got, err := rc.ZRangeWithScores(t.Context(), "crw:{"+frozen+"}:z:0", 0, -1).Result()
	if err != nil || len(got) != 1 || got[0].Score != 12 {
		t.Fatalf("replica's standings %v, %v; want m at 12", got, err)
	}
}
