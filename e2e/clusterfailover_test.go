package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestClusterReplicaFailover is R25 (docs/protocol.md §10) on a Redis
// Cluster with replicas, end to end: two gateways with --redis-replicas 1
// on three masters; load on a board of the master to be killed and on a
// board of another master, every event re-sent with its id until
// acknowledged. The victim's replicas are made to lag (their links cut
// and kept down while the master writes on), then the master is
// SIGKILLed and the cluster promotes a replica. The other board is
// acknowledged throughout. With two replicas per master the victim's
// board is acknowledged again within 5 s of the promotion (its other
// replica follows the promoted one); with one, once the killed master,
// started again, has rejoined as the new master's replica. No gateway
// restarts; both ledgers are exact: nothing acknowledged lost, nothing
// applied twice, frames converge.
func TestClusterReplicaFailover(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	t.Run("two-replicas", func(t *testing.T) { clusterReplicaFailover(t, 2) })
	t.Run("one-replica", func(t *testing.T) { clusterReplicaFailover(t, 1) })
}

func clusterReplicaFailover(t *testing.T, replicas int) {
	rc := testenv.StartRedisClusterReplicas(t, 3, replicas)
	c := newCluster(t, clusterOpts{Nodes: 2, RedisURL: func(env) string { return rc.URL() },
		Args: []string{"--redis-replicas", "1", "--redis-replica-timeout", "500ms"}})
	const victim, other = 0, 1
	boardOn := func(prefix string, master int) string {
		for i := range 1000 {
			id := fmt.Sprintf("%s%d", prefix, i)
			if rc.Owner(t, rc.KeySlot(t, id)) == master {
				putBoard(t, c.nodes[0], id, nil)
				return id
			}
		}
		t.Fatalf("e2e: no board id %s<n> on master %d", prefix, master)
		return ""
	}
	down, up := boardOn("dn", victim), boardOn("up", other)
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

	old := rc.Nodes[victim]
	var reps []*testenv.Redis
	for i, of := range rc.ReplicaOf {
		if of == victim {
			reps = append(reps, rc.Nodes[i])
		}
	}
	for _, r := range reps {
		redisDo(t, r.Addr(), "CONFIG", "SET", "masterauth", "not-the-password")
	}
	redisDo(t, old.Addr(), "CLIENT", "KILL", "TYPE", "replica")
	cut := masterOffset(t, old.Addr())
	testenv.Eventually(t, 20*time.Second, "the master writing on without its replica", func() error {
		if off := masterOffset(t, old.Addr()); off < cut+1000 {
			return fmt.Errorf("offset %d, %d at the cut", off, cut)
		}
		return nil
	})
	old.Kill()
	killed := time.Now()
	for _, r := range reps {
		redisDo(t, r.Addr(), "CONFIG", "SET", "masterauth", "")
	}
	before, from := lUp.acked(), time.Now()
	testenv.Until(t, 30*time.Second, "200 more acks on the other master's board", func() bool {
		return lUp.acked() >= before+200
	})
	t.Logf("other master's board: 200 acks in %s after the kill (load offered: 400/s)", time.Since(from).Round(time.Millisecond))
	promoted := rc.WaitPromoted(t, victim, 30*time.Second)
	at := time.Now()
	t.Logf("node %d promoted %s after the kill", promoted, at.Sub(killed).Round(time.Millisecond))
	if replicas > 1 {
		before = lDown.acked()
		testenv.Until(t, 5*time.Second, "50 acks on the victim's board within 5 s of the promotion", func() bool {
			return lDown.acked() >= before+50
		})
		t.Logf("victim's board: 50 acks within %s of the promotion", time.Since(at).Round(time.Millisecond))
	} else {
		old.Start()
		rc.WaitOK(t, 30*time.Second)
		rc.WaitReplicas(t, 30*time.Second)
		rejoined := time.Now()
		before = lDown.acked()
		testenv.Until(t, 15*time.Second, "50 acks on the victim's board once its new master has a replica", func() bool {
			return lDown.acked() >= before+50
		})
		t.Logf("victim's board: 50 acks within %s of its new master's replica coming online", time.Since(rejoined).Round(time.Millisecond))
	}
	ldDown.waitSent(t, ldDown.Sent()+300)
	ldUp.waitSent(t, ldUp.Sent()+300)
	ldDown.Finish(t, 60*time.Second)
	ldUp.Finish(t, 60*time.Second)
	verify(t, lDown, down, c.nodes, wsDown, c.resender(t, c.nodes[0]), verifyOpts{})
	verify(t, lUp, up, c.nodes, wsUp, c.resender(t, c.nodes[1]), verifyOpts{})
}
