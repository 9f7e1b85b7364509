package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// eachStore runs f once on one redis-server and once on a 3-master Redis
// Cluster, as parallel subtests "redis" and "cluster": the multi-node
// tests hold on both deployments.
func eachStore(t *testing.T, f func(t *testing.T, o clusterOpts)) {
	t.Helper()
	for _, s := range []struct {
		name    string
		cluster bool
	}{{"redis", false}, {"cluster", true}} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			f(t, clusterOpts{RedisCluster: s.cluster})
		})
	}
}

// boardOn is a board id (prefix plus a number) whose hash slot the given
// master serves, created through the first gateway. Board keys carry the
// id as their hash tag, so the id's slot is every key's slot.
func (c *cluster) boardOn(t testing.TB, prefix string, master int) string {
	t.Helper()
	for i := range 1000 {
		id := fmt.Sprintf("%s%d", prefix, i)
		if c.RCluster.Owner(t, c.RCluster.KeySlot(t, id)) == master {
			putBoard(t, c.nodes[0], id, nil)
			return id
		}
	}
	t.Fatalf("e2e: no board id %s<n> on master %d", prefix, master)
	return ""
}

// acked is how many distinct events the ledger has acknowledged.
func (l *ledger) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

// storeTimeout is the gateways' --store-timeout default (R13's bound).
const storeTimeout = 2 * time.Second

// probeUnavailable sends one new event to board and returns how long the
// gateway took to answer it, failing unless the answer is `unavailable`
// within the store timeout (R13: promptly, never a silent wait).
func probeUnavailable(t testing.TB, cl *client.Client, board, id string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout+time.Second)
	defer cancel()
	start := time.Now()
	_, err := cl.Score(ctx, client.ScoreReq{Board: board, Member: "probe", Delta: client.Int(1), ID: id})
	took := time.Since(start)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != proto.CodeUnavailable {
		t.Fatalf("e2e: score on %s with its master down: %v after %s, want unavailable within %s", board, err, took, storeTimeout)
	}
	return took
}

// TestClusterMasterKill SIGKILLs one master of a 3-master Redis Cluster
// (AOF with appendfsync always) while events for two boards flow through
// two gateways: a board on the killed master, one on a live master. Events
// for the dead master's slots get `unavailable` within the store timeout;
// the other board keeps being acknowledged meanwhile; once the master is
// back both ledgers are exact.
func TestClusterMasterKill(t *testing.T) {
	t.Parallel()
	c := newCluster(t, clusterOpts{Nodes: 2, RedisCluster: true,
		RedisArgs: []string{"--appendonly", "yes", "--appendfsync", "always"}})
	const victim, other = 0, 1
	down, up := c.boardOn(t, "dn", victim), c.boardOn(t, "up", other)
	var wsDown, wsUp []*watcher
	for _, g := range c.nodes {
		wsDown = append(wsDown, watch(t, g, down, "m000"))
		wsUp = append(wsUp, watch(t, g, up, "m000"))
	}
	lDown, lUp := newLedger(), newLedger()
	ldDown := startLoad(lDown, serverClients(t, 2, c.urls()...), down, memberIDs(40), 4, 400, 1<<40)
	ldUp := startLoad(lUp, serverClients(t, 2, c.urls()...), up, memberIDs(40), 4, 400, 1<<40)
	ldDown.waitSent(t, 400)
	ldUp.waitSent(t, 400)

	c.RCluster.Nodes[victim].Kill()
	killed := time.Now()
	probe := serverClients(t, 2, c.urls()...)
	for i := range 6 {
		took := probeUnavailable(t, probe[i%2], down, fmt.Sprintf("probe-%d", i))
		t.Logf("probe %d on the dead master's board: unavailable after %s", i, took.Round(time.Millisecond))
	}
	// The live master's board keeps being acknowledged while the other is down.
	before := lUp.acked()
	testenv.Until(t, 30*time.Second, "200 more acks on the live master's board", func() bool {
		return lUp.acked() >= before+200
	})
	restarted := time.Now()
	lDown.mu.Lock()
	var during []time.Duration // acks of events applied just before the kill
	for _, at := range lDown.ackAt {
		if at.After(killed) {
			during = append(during, at.Sub(killed).Round(time.Millisecond))
		}
	}
	lDown.mu.Unlock()
	t.Logf("dead master's board: acks received after the kill, at %v", during)
	c.RCluster.Nodes[victim].Start()
	c.RCluster.WaitOK(t, 30*time.Second)
	t.Logf("master down %s; first ack on its board %s after the restart began",
		restarted.Sub(killed).Round(time.Millisecond), lDown.firstAckAfter(restarted).Round(time.Millisecond))
	ldDown.waitSent(t, ldDown.Sent()+300)
	ldUp.waitSent(t, ldUp.Sent()+300)
	ldDown.Finish(t, 60*time.Second)
	ldUp.Finish(t, 60*time.Second)
	verify(t, lDown, down, c.nodes, wsDown, c.resender(t, c.nodes[0]), verifyOpts{})
	verify(t, lUp, up, c.nodes, wsUp, c.resender(t, c.nodes[1]), verifyOpts{})
	lDown.mu.Lock()
	defer lDown.mu.Unlock()
	if lDown.codes[proto.CodeUnavailable] == 0 {
		t.Errorf("e2e: the dead master's board load saw no unavailable: %v", lDown.codes)
	}
}
