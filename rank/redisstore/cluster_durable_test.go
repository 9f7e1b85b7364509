package redisstore

import (
	"context"
	"errors"
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
	if !errors.Is(errFrozen, rank.ErrUnavailable) {
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
	if _, err := rank.ApplyWait(t.Context(), b, e2); !errors.Is(err, rank.ErrUnavailable) {
		t.Fatalf("re-send through another client with the replica frozen: %v, want unavailable", err)
	}
	// A call answered from a record written on another connection is
	// confirmed apart (confirmEarlier), by a write in its slot and a WAIT
	// on its master: a WAIT alone, on a connection that wrote nothing,
	// would answer at once.
	found := &call{e: e2, found: true}
	d.lanes[0].wait.confirmEarlier(t.Context(), d.client, []*call{found})
	if !errors.Is(found.err, rank.ErrUnavailable) {
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

// The hook ends a part with a WAIT of its own and notes which of the
// part's commands got an answer; a part go-redis sends again (after a
// broken connection) brings the earlier attempt's WAIT along, which is
// dropped rather than sent; a part of nothing but such a WAIT is not sent.
// Without the round in the context the hook passes the part through.
func TestWaitHookParts(t *testing.T) {
	t.Parallel()
	h := &waitHook{w: &replicaWait{n: 1, ms: 5}}
	var sent [][]redis.Cmder
	next := func(ctx context.Context, cmds []redis.Cmder) error {
		sent = append(sent, cmds)
		cmds[1].SetErr(errors.New("refused")) // the second script fails
		return nil
	}
	hook := h.ProcessPipelineHook(next)
	ctx := t.Context()
	a, b := redis.NewCmd(ctx, "evalsha", "x", 0), redis.NewCmd(ctx, "evalsha", "y", 0)

	if err := hook(ctx, []redis.Cmder{a, b}); err != nil || len(sent) != 1 || len(sent[0]) != 2 {
		t.Fatalf("without a round: %v, sent %v; want the part as it was", err, sent)
	}
	sent = nil
	r := &waitRound{waits: map[redis.Cmder]bool{}}
	rctx := context.WithValue(ctx, h, r)
	if err := hook(rctx, []redis.Cmder{a, b}); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || len(sent[0]) != 3 || sent[0][2].Name() != "wait" || fmt.Sprint(sent[0][2].Args()) != "[wait 1 5]" {
		t.Fatalf("sent %v, want the part and WAIT 1 5 last", sent)
	}
	first := sent[0][2]
	if len(r.parts) != 1 || len(r.parts[0].ran) != 1 || r.parts[0].ran[0] != a || r.parts[0].wait != first {
		t.Fatalf("parts %+v, want the one that got an answer, with its WAIT", r.parts)
	}
	// go-redis re-sends the part with the WAIT it carried.
	sent = nil
	b.SetErr(nil)
	if err := hook(rctx, []redis.Cmder{a, b, first}); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || len(sent[0]) != 3 || sent[0][0] != a || sent[0][1] != b || sent[0][2] == first || sent[0][2].Name() != "wait" {
		t.Fatalf("re-sent part %v, want the two scripts and a new WAIT only", sent)
	}
	sent = nil
	if err := hook(rctx, []redis.Cmder{first}); err != nil || len(sent) != 0 {
		t.Fatalf("a part of an old WAIT alone: %v, sent %v; want nothing sent", err, sent)
	}
}
