package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	testenv.Long(t)
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
	before, from := lUp.acked(), time.Now()
	testenv.Until(t, 30*time.Second, "200 more acks on the live master's board", func() bool {
		return lUp.acked() >= before+200
	})
	t.Logf("live master's board: 200 acks in %s while the other master was down (load offered: 400/s)", time.Since(from).Round(time.Millisecond))
	// Readiness sends a keyless PING, which the Redis client routes to a
	// live master once the dead one fails: reported, not asserted.
	notReady := 0
	for range 12 {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout+time.Second)
		st, _, err := rest(ctx, "GET", c.nodes[0].HTTP()+"/readyz", "", nil, nil)
		cancel()
		if err != nil || st != 200 {
			notReady++
		}
	}
	t.Logf("/readyz with one master down: %d of 12 checks not ready", notReady)
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
	ldDown.waitSent(t, ldDown.Sent()+300)
	t.Logf("master down %s; first ack on its board %s after the restart began",
		restarted.Sub(killed).Round(time.Millisecond), lDown.firstAckAfter(restarted).Round(time.Millisecond))
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

// TestClusterSlotMigration moves the board's hash slot to another master
// (SETSLOT IMPORTING/MIGRATING, MIGRATE of its keys 50 at a time, SETSLOT
// NODE) while events flow through two gateways. Applies that meet the
// half-moved slot get TRYAGAIN (or ASK, then TRYAGAIN) and are sent again
// by the gateways' lanes; once the slot has its new owner the gateways
// follow MOVED. The ledger is exact: every acknowledged event counted
// once, none lost, none applied twice.
func TestClusterSlotMigration(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	c := newCluster(t, clusterOpts{Nodes: 2, RedisCluster: true})
	ws := c.watchAll(t)
	l := newLedger()
	ld := startLoad(l, serverClients(t, 4, c.urls()...), c.board, memberIDs(40), 4, 800, 1<<40)
	ld.waitSent(t, 1500) // 1500 idempotency records: the migration takes many rounds

	slot := c.RCluster.KeySlot(t, c.board)
	from := c.RCluster.Owner(t, slot)
	to := (from + 1) % len(c.RCluster.Nodes)
	busyLogged := func() bool {
		for _, g := range c.nodes {
			if strings.Contains(g.Logs(), "slot busy") {
				return true
			}
		}
		return false
	}
	rounds := 0
	start := time.Now()
	moved := c.RCluster.MigrateSlot(t, slot, from, to, 50, func() {
		if rounds++; rounds == 1 {
			// Hold the slot half-moved until a gateway's apply has met it.
			testenv.Until(t, 10*time.Second, "an apply to meet the migrating slot", busyLogged)
		}
	})
	t.Logf("slot %d: %d keys moved from master %d to %d in %d rounds, %s", slot, moved, from, to, rounds, time.Since(start).Round(time.Millisecond))
	c.RCluster.WaitOK(t, 20*time.Second)
	if got := c.RCluster.Owner(t, slot); got != to {
		t.Fatalf("e2e: slot %d is served by master %d after the migration, want %d", slot, got, to)
	}
	ld.waitSent(t, ld.Sent()+800)
	ld.Finish(t, 60*time.Second)
	left, err := testenv.RedisDo(c.RCluster.Nodes[from].Addr(), "CLUSTER", "COUNTKEYSINSLOT", fmt.Sprint(slot))
	if err != nil || left != int64(0) {
		t.Errorf("e2e: the old owner still has %v keys of slot %d (%v)", left, slot, err)
	}
	busy := 0
	for _, g := range c.nodes {
		busy += strings.Count(g.Logs(), "slot busy")
	}
	t.Logf("lane rounds that met the moving slot and applied again: %d", busy)
	verify(t, l, c.board, c.nodes, ws, c.resender(t, c.nodes[0]), verifyOpts{})
}

// TestNATSClusterNodeKill runs three gateways on a 3-node NATS cluster,
// each given every node's URL, and SIGKILLs the NATS node that serves the
// most gateways while events flow into one gateway: the gateways on it
// reconnect to the other nodes, and every node's frames keep converging to
// the store (the ledger check bounds them from the last applied event).
func TestNATSClusterNodeKill(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	c := newCluster(t, clusterOpts{Nodes: 3, NATSCluster: true})
	nc := c.NCluster
	// The NATS node with the most gateways on it (each picks one at random).
	victim, onVictim := -1, []string(nil)
	testenv.Eventually(t, 10*time.Second, "every gateway connected to a NATS node", func() error {
		victim, onVictim = -1, nil
		total := 0
		for i := range nc.Nodes {
			names, err := nc.Clients(i)
			if err != nil {
				return err
			}
			total += len(names)
			if len(names) > len(onVictim) {
				victim, onVictim = i, names
			}
		}
		if total < len(c.nodes) {
			return fmt.Errorf("%d gateway connections", total)
		}
		return nil
	})
	ws := c.watchAll(t)
	l := newLedger()
	// Writers on n1 only: the other gateways' frames come through NATS.
	ld := startLoad(l, serverClients(t, 2, c.nodes[0].URL()), c.board, memberIDs(40), 4, 600, 1<<40)
	ld.waitSent(t, 600)
	nc.Nodes[victim].Kill()
	killed := time.Now()
	t.Logf("killed nats%d, which served gateways %v", victim+1, onVictim)
	byName := map[string]*gateway{}
	for _, g := range c.nodes {
		byName[g.opts.Node] = g
	}
	for _, name := range onVictim {
		g := byName[name]
		if g == nil {
			t.Fatalf("e2e: nats%d had a client %q that is no gateway", victim+1, name)
		}
		testenv.Until(t, 15*time.Second, name+" to reconnect to another NATS node", func() bool {
			return strings.Contains(g.Logs(), "reconnected to NATS")
		})
		readyz(t, g, true, 15*time.Second)
	}
	t.Logf("gateways reconnected %s after the kill", time.Since(killed).Round(time.Millisecond))
	ld.waitSent(t, ld.Sent()+600)
	ld.Finish(t, 60*time.Second)
	verify(t, l, c.board, c.nodes, ws, c.resender(t, c.nodes[2]), verifyOpts{})
}
