package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestSentinelFailover is R25 (docs/protocol.md §10) end to end: two
// gateways with --redis-url redis-sentinel://… and --redis-replicas 1 on a
// master, two replicas and three Sentinels; load on both gateways, every
// event re-sent with its id until acknowledged. The replicas are made to
// lag (their links cut and kept down while the master writes on), then the
// master is SIGKILLed and Sentinel promotes a replica. /readyz says 503
// while no master answers; acks resume within 5 s of the promotion without
// a restart; the ledger is exact: nothing acknowledged lost, nothing
// applied twice, frames converge.
func TestSentinelFailover(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	rs := testenv.StartRedisSentinel(t, 2, 3)
	c := newCluster(t, clusterOpts{Nodes: 2, RedisURL: func(env) string { return rs.URL() },
		Args: []string{"--redis-replicas", "1", "--redis-replica-timeout", "500ms"}})
	ws := c.watchAll(t)
	l := newLedger()
	ld := startLoad(l, serverClients(t, 2, c.urls()...), c.board, memberIDs(40), 4, 400, 1<<40)
	ld.waitSent(t, 400)

	old := rs.Master(t)
	for _, r := range rs.Redis {
		if r != old {
			redisDo(t, r.Addr(), "CONFIG", "SET", "masterauth", "not-the-password")
		}
	}
	redisDo(t, old.Addr(), "CLIENT", "KILL", "TYPE", "replica")
	cut := masterOffset(t, old.Addr())
	testenv.Eventually(t, 20*time.Second, "the master writing on without its replicas", func() error {
		if off := masterOffset(t, old.Addr()); off < cut+1000 {
			return fmt.Errorf("offset %d, %d at the cut", off, cut)
		}
		return nil
	})
	old.Kill()
	killed := time.Now()
	for _, r := range rs.Redis {
		if r != old {
			redisDo(t, r.Addr(), "CONFIG", "SET", "masterauth", "")
		}
	}
	readyz(t, c.nodes[0], false, 10*time.Second)
	promoted := rs.WaitPromoted(t, old, 30*time.Second)
	at := time.Now()
	t.Logf("%s promoted %s after the kill", promoted.Addr(), at.Sub(killed).Round(time.Millisecond))
	before := l.acked()
	testenv.Until(t, 5*time.Second, "50 acks after the promotion", func() bool { return l.acked() >= before+50 })
	t.Logf("acks resumed: 50 within %s of the promotion; /readyz 200 %s after it",
		time.Since(at).Round(time.Millisecond), readyz(t, c.nodes[0], true, 10*time.Second).Round(time.Millisecond))
	ld.waitSent(t, ld.Sent()+400)
	ld.Finish(t, 60*time.Second)
	verify(t, l, c.board, c.nodes, ws, c.resender(t, c.nodes[0]), verifyOpts{})
}

func redisDo(t *testing.T, addr string, args ...string) {
	t.Helper()
	if _, err := testenv.RedisDo(addr, args...); err != nil {
		t.Fatalf("e2e: %v on %s: %v", args, addr, err)
	}
}

// masterOffset is the server's master_repl_offset.
func masterOffset(t *testing.T, addr string) int64 {
	t.Helper()
	v, err := testenv.RedisDo(addr, "INFO", "replication")
	if err != nil {
		t.Fatalf("e2e: INFO replication on %s: %v", addr, err)
	}
	for _, line := range strings.Split(fmt.Sprint(v), "\n") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "master_repl_offset:"); ok {
			off, _ := strconv.ParseInt(n, 10, 64)
			return off
		}
	}
	t.Fatalf("e2e: no master_repl_offset on %s", addr)
	return 0
}
