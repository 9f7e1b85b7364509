package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestClusterShardedLedger writes a 6-shard board (R24, its shards spread
// over a 3-master Redis Cluster) through two gateways while two of its
// slots move to another master one after the other: a shard's, then the
// board's own, which holds the seq every shard's event takes (ack_rank
// none: one call per board per lane round gives them). Halfway, a PATCH
// turns ack_rank to global. The acks before it carry no rank, the acks
// after it (once both nodes have the new config) carry the global rank,
// and the ledger is exact: every acknowledged event counted once across
// the shards, none lost, no seq given twice, a re-send answering the first
// ack.
func TestClusterShardedLedger(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	c := newCluster(t, clusterOpts{Nodes: 2, RedisCluster: true})
	const board = "shl"
	putBoard(t, c.nodes[0], board, map[string]any{"shards": 6})
	var ws []*watcher
	for _, g := range c.nodes {
		ws = append(ws, watch(t, g, board, "m000"))
	}
	l := newLedger()
	ld := startLoad(l, serverClients(t, 4, c.urls()...), board, memberIDs(60), 4, 800, 1<<40)
	ld.waitSent(t, 800)

	// Both moves go to a master that serves none of the slot's board yet,
	// so each meets the lanes half-way (TRYAGAIN, applied again).
	shardSlot, boardSlot := c.shardSlot(t, board), c.RCluster.KeySlot(t, board)
	for _, slot := range []int{shardSlot, boardSlot} {
		from := c.RCluster.Owner(t, slot)
		to := (from + 1) % len(c.RCluster.Nodes)
		before := ld.Sent()
		moved := c.RCluster.MigrateSlot(t, slot, from, to, 20, func() {
			ld.waitSent(t, ld.Sent()+20) // traffic meets the half-moved slot
		})
		c.RCluster.WaitOK(t, 20*time.Second)
		t.Logf("slot %d: %d keys moved from master %d to %d while %d events were sent", slot, moved, from, to, ld.Sent()-before)
	}
	busy := 0
	for _, g := range c.nodes {
		busy += strings.Count(g.Logs(), "slot busy")
	}
	t.Logf("lane rounds that met a moving slot and applied again: %d", busy)
	ld.waitSent(t, ld.Sent()+400)
	noRank := l.acked()
	l.mu.Lock()
	for id, as := range l.acks {
		if as[0].Rank != 0 || as[0].PrevRank != nil {
			t.Errorf("e2e: ack of %s with the default ack_rank: %+v, want no rank", id, as[0])
		}
	}
	l.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	st, b, err := rest(ctx, "PATCH", c.nodes[0].HTTP()+"/api/v1/boards/"+board, adminToken(t), map[string]any{"ack_rank": "global"}, nil)
	if err != nil || st != 200 {
		t.Fatalf("e2e: PATCH ack_rank global: %d %s %v", st, b, err)
	}
	// Each node serves ranks once it has the new config; from then on
	// every ack it sends carries one.
	for i, g := range c.nodes {
		cl := serverClients(t, 1, g.URL())[0]
		k := 0
		testenv.Until(t, 20*time.Second, "an ack with a rank from node "+g.opts.Node, func() bool {
			k++
			e := event{ID: fmt.Sprintf("probe-%d-%d", i, k), Member: "m001", Delta: 1}
			if err := l.send(ctx, cl, board, e); err != nil {
				t.Fatalf("e2e: probe %s: %v", e.ID, err)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			return l.acks[e.ID][0].Rank > 0
		})
	}
	// The events first sent from here on meet both nodes serving ranks.
	l.mu.Lock()
	before := maps.Clone(l.sent)
	l.mu.Unlock()
	ld.waitSent(t, ld.Sent()+600)
	ld.Finish(t, 60*time.Second)
	ranked := 0
	l.mu.Lock()
	for id, as := range l.acks {
		if _, ok := before[id]; ok {
			continue
		}
		// Every member has had an entry since the first few hundred events.
		if as[0].Rank < 1 || as[0].PrevRank == nil || *as[0].PrevRank < 1 {
			t.Errorf("e2e: ack of %s after ack_rank global: %+v, want a rank and a previous rank", id, as[0])
		}
		ranked++
	}
	l.mu.Unlock()
	if ranked < 300 {
		t.Errorf("e2e: %d acks with ack_rank global, want at least 300", ranked)
	}
	t.Logf("acks without rank: %d; with: %d", noRank, ranked)
	verify(t, l, board, c.nodes, ws, c.resender(t, c.nodes[1]), verifyOpts{})
}

// shardSlot is the slot of one of a sharded board's shards, found from
// its keys on the masters (shard i's hash tag is {<board>#<i>…}).
func (c *cluster) shardSlot(t testing.TB, board string) int {
	t.Helper()
	for _, n := range c.RCluster.Nodes {
		keys, err := testenv.RedisDo(n.Addr(), "KEYS", "*{"+board+"#*")
		if err != nil {
			t.Fatalf("e2e: KEYS on %s: %v", n.Addr(), err)
		}
		if ks, _ := keys.([]any); len(ks) > 0 {
			return c.RCluster.KeySlot(t, ks[0].(string))
		}
	}
	t.Fatalf("e2e: no key of a shard of %s on any master", board)
	return -1
}
