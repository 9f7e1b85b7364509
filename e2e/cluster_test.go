package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
)

// lbCluster is the topology of docker-compose.yml run by scripts/cluster.sh
// as local processes, from the same deploy/ files.
type lbCluster struct {
	t      *testing.T
	root   string
	dir    string
	ports  map[string]string // ports.env
	secret string            // LB_JWT_SECRET of the run (cluster.sh writes dir/gateway.env)
}

func (c *lbCluster) script(args ...string) (string, error) {
	cmd := exec.Command("bash", append([]string{filepath.Join(c.root, "scripts", "cluster.sh")}, args...)...)
	cmd.Env = append(os.Environ(), "CLUSTER_DIR="+c.dir, "WSGATEWAY_BIN="+gatewayBin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *lbCluster) addr(name string) string { return "127.0.0.1:" + c.ports[name] }

// logs is the tail of every process's log, for a failing test.
func (c *lbCluster) logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(c.dir, "logs", "*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "== %s\n%s\n", filepath.Base(f), strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	return b.String()
}

func (c *lbCluster) signal(name string, sig syscall.Signal) int {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, "pids", name+".pid"))
	if err != nil {
		c.t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, sig); err != nil {
		c.t.Fatalf("signal %s (%d): %v", name, pid, err)
	}
	return pid
}

// prom runs an instant query and returns each result's labels and value.
func (c *lbCluster) prom(ctx context.Context, query string) ([]map[string]string, error) {
	u := "http://" + c.addr("PROMETHEUS") + "/api/v1/query?query=" + url.QueryEscape(query)
	var body struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if _, raw, err := rest(ctx, "GET", u, "", nil, &body); err != nil {
		return nil, fmt.Errorf("%v %s", err, raw)
	}
	var out []map[string]string
	for _, r := range body.Data.Result {
		m := r.Metric
		m["__value__"] = fmt.Sprint(r.Value[1])
		out = append(out, m)
	}
	return out, nil
}

// alertState is the state (pending, firing) of alert name for node, "" when absent.
func (c *lbCluster) alertState(ctx context.Context, name, node string) (string, error) {
	var body struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if _, raw, err := rest(ctx, "GET", "http://"+c.addr("PROMETHEUS")+"/api/v1/alerts", "", nil, &body); err != nil {
		return "", fmt.Errorf("%v %s", err, raw)
	}
	for _, a := range body.Data.Alerts {
		if a.Labels["alertname"] == name && a.Labels["node"] == node {
			return a.State, nil
		}
	}
	return "", nil
}

func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

func startLBCluster(t *testing.T) *lbCluster {
	t.Helper()
	for _, bin := range []string{"redis-server", "nats-server", "haproxy", "prometheus"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Missing(t, bin, "scripts/deps.sh (apt-get install redis-server nats-server haproxy prometheus)")
		}
	}
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	c := &lbCluster{t: t, root: root, dir: t.TempDir()}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster logs:\n%s", c.logs())
		}
		if out, err := c.script("down"); err != nil {
			t.Errorf("cluster.sh down: %v\n%s", err, out)
		}
	})
	// Another test may take a picked port between the pick and the bind:
	// start again on new ports, as startGateway does.
	for attempt := 0; ; attempt++ {
		out, err := c.script("up")
		if err == nil {
			break
		}
		if attempt == 3 || !strings.Contains(c.logs(), "address already in use") {
			t.Fatalf("cluster.sh up: %v\n%s", err, out)
		}
		if out, err := c.script("down"); err != nil {
			t.Fatalf("cluster.sh down after a port clash: %v\n%s", err, out)
		}
		os.RemoveAll(filepath.Join(c.dir, "logs"))
		os.Remove(filepath.Join(c.dir, "ports.env"))
	}
	c.ports = readEnvFile(t, filepath.Join(c.dir, "ports.env"))
	for _, p := range []string{"REDIS", "NATS1_CLIENT", "GW1", "LB", "PROMETHEUS"} {
		if n, _ := strconv.Atoi(c.ports[p]); n == 0 || n == 6379 || n == 4222 || n == 8080 {
			t.Fatalf("ports.env %s=%q: want a free port picked at start", p, c.ports[p])
		}
	}
	c.secret = readEnvFile(t, filepath.Join(c.dir, "gateway.env"))["LB_JWT_SECRET"]
	return c
}

func (c *lbCluster) token(cl auth.Claims) string {
	c.t.Helper()
	cl.TTL = time.Hour
	tok, err := auth.MintHS256([]byte(c.secret), cl)
	if err != nil {
		c.t.Fatal(err)
	}
	return tok
}

// TestCluster runs the compose topology from scripts/cluster.sh and puts
// load through HAProxy while one gateway is killed and another drained
// (SIGTERM): clients reconnect through the load balancer, the ledger is
// exact, and Prometheus sees the killed gateway down, fires GatewayDown,
// then sees it up again once restarted.
func TestCluster(t *testing.T) {
	testenv.Long(t)
	c := startLBCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lb := "http://" + c.addr("LB")
	admin := c.token(auth.Claims{Sub: "admin", Role: auth.Admin})
	const board = "cluster"
	if st, b, err := rest(ctx, "PUT", lb+"/api/v1/boards/"+board, admin, map[string]any{"id": board, "client_writes": true}, nil); err != nil || st/100 != 2 {
		t.Fatalf("create board through the LB: %d %s %v", st, b, err)
	}

	// Six server clients through the LB: leastconn spreads them, two per gateway.
	var reconnects atomic.Int64
	tok := c.token(auth.Claims{Sub: "loadgen", Role: auth.Server})
	clients := make([]*client.Client, 6)
	for i := range clients {
		clients[i] = dialer{t}.dial(tok, []string{"ws://" + c.addr("LB") + "/ws"}, &client.Options{OnState: func(s client.State) {
			if s == client.StateReconnecting {
				reconnects.Add(1)
			}
		}})
	}
	l := newLedger()
	ld := startLoad(l, clients, board, memberIDs(40), 2, 300, 1<<40)
	ld.waitSent(t, 200)

	// Kill gateway2; drain gateway3 (SIGTERM) and wait for it to exit.
	c.signal("gateway2", syscall.SIGKILL)
	ld.waitSent(t, ld.Sent()+200)
	pid := c.signal("gateway3", syscall.SIGTERM)
	testenv.Until(t, 20*time.Second, "gateway3 to finish draining", func() bool { return syscall.Kill(pid, 0) != nil })
	ld.waitSent(t, ld.Sent()+200)
	testenv.Until(t, 10*time.Second, "clients to reconnect through the LB", func() bool { return reconnects.Load() >= 2 })

	// Prometheus: the killed target goes down, GatewayDown fires.
	testenv.Eventually(t, 30*time.Second, "Prometheus to see gateway2 down", func() error {
		r, err := c.prom(ctx, `up{job="wsgateway",node="gateway2"}`)
		if err != nil || len(r) != 1 || r[0]["__value__"] != "0" {
			return fmt.Errorf("%v %v", r, err)
		}
		return nil
	})
	testenv.Eventually(t, 60*time.Second, "GatewayDown to fire for gateway2", func() error {
		st, err := c.alertState(ctx, "GatewayDown", "gateway2")
		if err != nil || st != "firing" {
			return fmt.Errorf("state %q %v", st, err)
		}
		return nil
	})

	// Both come back; Prometheus sees gateway2 up; load lands on them again.
	for _, n := range []string{"2", "3"} {
		if out, err := c.script("gateway", n); err != nil {
			t.Fatalf("cluster.sh gateway %s: %v\n%s", n, err, out)
		}
	}
	testenv.Eventually(t, 30*time.Second, "Prometheus to see gateway2 up again", func() error {
		r, err := c.prom(ctx, `up{job="wsgateway",node="gateway2"}`)
		if err != nil || len(r) != 1 || r[0]["__value__"] != "1" {
			return fmt.Errorf("%v %v", r, err)
		}
		return nil
	})
	ld.waitSent(t, ld.Sent()+200)
	ld.Finish(t, 30*time.Second)

	// The ledger: every member's score through the LB is the sum of its
	// distinct acknowledged events; no id applied twice.
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
	t.Logf("ledger: %s; client reconnects %d", l.stats(), reconnects.Load())

	// Every gateway answers through its own port again and the LB is ready.
	for _, g := range []string{"GW1", "GW2", "GW3", "LB"} {
		resp, err := http.Get("http://" + c.addr(g) + "/readyz")
		if err != nil {
			t.Fatalf("%s /readyz: %v", g, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s /readyz = %d", g, resp.StatusCode)
		}
	}
}
