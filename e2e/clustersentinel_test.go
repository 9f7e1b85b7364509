package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
)

// startLBClusterSentinel is startLBCluster with CLUSTER_REDIS=sentinel:
// the gateways on a master, two replicas and three Sentinels, with
// --redis-replicas 1. Only `up` reads the variable; the other commands
// read ports.env.
func startLBClusterSentinel(t *testing.T) *lbCluster {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli", "nats-server", "haproxy", "prometheus"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Missing(t, bin, "scripts/deps.sh (apt-get install redis-server redis-tools nats-server haproxy prometheus)")
		}
	}
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	c := &lbCluster{t: t, root: root, dir: t.TempDir()}
	up := func() (string, error) {
		cmd := exec.Command("bash", filepath.Join(root, "scripts", "cluster.sh"), "up")
		cmd.Env = append(os.Environ(), "CLUSTER_DIR="+c.dir, "WSGATEWAY_BIN="+gatewayBin, "CLUSTER_REDIS=sentinel")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster logs:\n%s", c.logs())
		}
		if out, err := c.script("down"); err != nil {
			t.Errorf("cluster.sh down: %v\n%s", err, out)
		}
	})
	for attempt := 0; ; attempt++ {
		out, err := up()
		if err == nil {
			break
		}
		if attempt == 3 || !strings.Contains(c.logs(), "address already in use") {
			t.Fatalf("CLUSTER_REDIS=sentinel cluster.sh up: %v\n%s", err, out)
		}
		if out, err := c.script("down"); err != nil {
			t.Fatalf("cluster.sh down after a port clash: %v\n%s", err, out)
		}
		os.RemoveAll(filepath.Join(c.dir, "logs"))
		os.Remove(filepath.Join(c.dir, "ports.env"))
	}
	c.ports = readEnvFile(t, filepath.Join(c.dir, "ports.env"))
	c.secret = readEnvFile(t, filepath.Join(c.dir, "gateway.env"))["LB_JWT_SECRET"]
	return c
}

// TestClusterSentinel runs the redis-sentinel topology from
// scripts/cluster.sh (deploy/redis/sentinel.conf, the gateways on
// redis-sentinel:// with LB_REDIS_REPLICAS=1) and puts load through
// HAProxy while the master is SIGKILLed: the Sentinels promote a replica,
// the gateways follow it without a restart, and the ledger is exact.
func TestClusterSentinel(t *testing.T) {
	testenv.Long(t)
	c := startLBClusterSentinel(t)
	if !strings.HasPrefix(c.ports["REDIS_URL"], "redis-sentinel://") || strings.Count(c.ports["REDIS_URL"], ",") != 2 || c.ports["REDIS_REPLICAS"] != "1" {
		t.Fatalf("ports.env: REDIS_URL %q, REDIS_REPLICAS %q; want three Sentinels and durable acks", c.ports["REDIS_URL"], c.ports["REDIS_REPLICAS"])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lb := "http://" + c.addr("LB")
	admin := c.token(auth.Claims{Sub: "admin", Role: auth.Admin})
	const board = "sentinel"
	if st, b, err := rest(ctx, "PUT", lb+"/api/v1/boards/"+board, admin, map[string]any{"id": board}, nil); err != nil || st/100 != 2 {
		t.Fatalf("create board through the LB: %d %s %v", st, b, err)
	}
	tok := c.token(auth.Claims{Sub: "loadgen", Role: auth.Server})
	clients := make([]*client.Client, 3)
	for i := range clients {
		clients[i] = dialer{t}.dial(tok, []string{"ws://" + c.addr("LB") + "/ws"}, nil)
	}
	l := newLedger()
	ld := startLoad(l, clients, board, memberIDs(40), 2, 300, 1<<40)
	ld.waitSent(t, 300)

	master := func() string {
		v, err := testenv.RedisDo(c.addr("SENTINEL1"), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "lbmaster")
		if err != nil {
			return err.Error()
		}
		return fmt.Sprint(v)
	}
	before := master()
	c.signal("redis", syscall.SIGKILL)
	killed := time.Now()
	testenv.Eventually(t, 60*time.Second, "the Sentinels to promote a replica", func() error {
		if m := master(); m == before || !strings.Contains(m, "127.0.0.1") {
			return fmt.Errorf("master %s (%s before the kill)", m, before)
		}
		return nil
	})
	promoted := time.Now()
	acked := l.acked()
	testenv.Until(t, 30*time.Second, "100 acks after the promotion", func() bool { return l.acked() >= acked+100 })
	t.Logf("master %s killed; %s promoted after %s; 100 acks within %s of the promotion", before, master(),
		promoted.Sub(killed).Round(time.Millisecond), time.Since(promoted).Round(time.Millisecond))
	ld.Finish(t, 60*time.Second)

	// The gateways' /readyz failed while no master answered, so HAProxy
	// took them out; it puts them back after its checks pass again.
	testenv.Eventually(t, 30*time.Second, "the LB ready again", func() error {
		st, b, err := rest(ctx, "GET", lb+"/readyz", "", nil, nil)
		if err != nil || st != 200 {
			return fmt.Errorf("%d %s %v", st, b, err)
		}
		return nil
	})
	truth, total, err := readBoard(ctx, &gateway{Addr: c.addr("LB")}, admin, board)
	if err != nil {
		t.Fatal(err)
	}
	want := l.expected()
	if int(total) != len(want) || len(truth) != len(want) {
		t.Errorf("board has %d members (total %d), the ledger %d", len(truth), total, len(want))
	}
	for _, e := range truth {
		if e.Score != want[e.Member] {
			t.Errorf("member %s: score %d, acknowledged events sum to %d", e.Member, e.Score, want[e.Member])
		}
	}
	for _, bad := range l.checkAcks() {
		t.Error(bad)
	}
	t.Logf("ledger: %s", l.stats())
}
