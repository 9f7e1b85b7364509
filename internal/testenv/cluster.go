package testenv

// Clusters: a Redis Cluster of masters and a NATS cluster, each started on
// free loopback ports and stopped at the end of the test.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RedisCluster is a Redis Cluster started for one test: masters, and
// replicas of them when started by StartRedisClusterReplicas. Each node is
// a Proc: Kill and Start it to inject a fault (it keeps its nodes.conf, so
// it rejoins with its id, and a master with its slots unless a replica was
// promoted meanwhile: then it rejoins as that replica's replica).
type RedisCluster struct {
	Nodes []*Redis
	IDs   []string // CLUSTER MYID of each node, in Nodes order
	// ReplicaOf is, for each node, the index in Nodes of the master it
	// was started as a replica of, or -1 for a master.
	ReplicaOf []int
}

// clusterSlots is how many hash slots Redis Cluster has.
const clusterSlots = 16384

// StartRedisCluster starts masters redis-servers with cluster mode on,
// gives each an equal range of the 16384 slots (CLUSTER ADDSLOTSRANGE),
// introduces them (CLUSTER MEET) and waits until every node says
// cluster_state:ok and knows the others. Full coverage is not required,
// so the masters left keep serving their slots while one is down, as a
// production cluster without replicas would be configured to.
func StartRedisCluster(t testing.TB, masters int, extra ...string) *RedisCluster {
	t.Helper()
	return startRedisCluster(t, masters, 0, "2000", extra)
}

// StartRedisClusterReplicas starts a Redis Cluster of masters masters
// with replicas replicas each (redis-cli --cluster create
// --cluster-replicas): Nodes holds the masters first, then the replicas,
// master by master. A master's failure is detected within a second
// (cluster-node-timeout 1000), and its replica then promoted.
func StartRedisClusterReplicas(t testing.TB, masters, replicas int, extra ...string) *RedisCluster {
	t.Helper()
	c := startRedisCluster(t, masters, replicas, "1000", extra)
	c.WaitReplicas(t, 30*time.Second)
	return c
}

func startRedisCluster(t testing.TB, masters, replicas int, nodeTimeout string, extra []string) *RedisCluster {
	t.Helper()
	if masters < 1 || replicas < 0 {
		t.Fatalf("testenv: a Redis Cluster of %d masters with %d replicas each", masters, replicas)
	}
	args := append([]string{"--cluster-enabled", "yes", "--cluster-node-timeout", nodeTimeout,
		"--cluster-require-full-coverage", "no", "--cluster-config-file", "nodes.conf"}, extra...)
	c := &RedisCluster{}
	for i := range masters * (1 + replicas) {
		// The bus port is port+10000: a node whose bus port is out of
		// range or taken exits at start, and testenv picks another port.
		n := StartRedis(t, args...)
		id, err := RedisDo(n.Addr(), "CLUSTER", "MYID")
		if err != nil {
			t.Fatalf("testenv: CLUSTER MYID: %v", err)
		}
		c.Nodes = append(c.Nodes, n)
		c.IDs = append(c.IDs, id.(string))
		of := -1
		if i >= masters {
			of = (i - masters) / replicas
		}
		c.ReplicaOf = append(c.ReplicaOf, of)
	}
	for i, n := range c.Nodes {
		if i < masters {
			lo, hi := i*clusterSlots/masters, (i+1)*clusterSlots/masters-1
			if _, err := RedisDo(n.Addr(), "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
				t.Fatalf("testenv: CLUSTER ADDSLOTSRANGE on %s: %v", n.Addr(), err)
			}
		}
		if i > 0 {
			if _, err := RedisDo(c.Nodes[0].Addr(), "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(n.Port)); err != nil {
				t.Fatalf("testenv: CLUSTER MEET %s: %v", n.Addr(), err)
			}
		}
	}
	c.WaitOK(t, 30*time.Second)
	for i, of := range c.ReplicaOf {
		if of < 0 {
			continue
		}
		// A replica must know its master first: gossip may take a moment
		// to bring every node to every other.
		Eventually(t, 30*time.Second, "CLUSTER REPLICATE", func() error {
			_, err := RedisDo(c.Nodes[i].Addr(), "CLUSTER", "REPLICATE", c.IDs[of])
			return err
		})
	}
	c.WaitOK(t, 30*time.Second)
	return c
}

// WaitReplicas waits until every master serving slots has as many
// replicas online (their initial sync done) as it was started with.
func (c *RedisCluster) WaitReplicas(t testing.TB, within time.Duration) {
	t.Helper()
	want := 0
	for _, of := range c.ReplicaOf {
		if of == 0 {
			want++
		}
	}
	Eventually(t, within, fmt.Sprintf("%d replicas online on every master", want), func() error {
		for _, port := range c.masterPorts() {
			v, err := RedisDo("127.0.0.1:"+strconv.Itoa(port), "INFO", "replication")
			if err != nil {
				return err
			}
			if got := strings.Count(fmt.Sprint(v), "state=online"); got < want {
				return fmt.Errorf("master on port %d has %d replicas online", port, got)
			}
		}
		return nil
	})
}

// masterPorts is the ports of the masters serving slots, as the first
// node that answers sees them.
func (c *RedisCluster) masterPorts() []int {
	for _, n := range c.Nodes {
		v, err := RedisDo(n.Addr(), "CLUSTER", "SLOTS")
		if err != nil {
			continue
		}
		var ports []int
		for _, r := range v.([]any) {
			port := int(r.([]any)[2].([]any)[1].(int64))
			if !slices.Contains(ports, port) {
				ports = append(ports, port)
			}
		}
		return ports
	}
	return nil
}

// WaitPromoted waits, after master dead was killed, until a replica
// serves its slots: every other node reports cluster_state:ok and agrees
// on the slots' owners, none of them dead. It returns the index of the
// node that serves them now.
func (c *RedisCluster) WaitPromoted(t testing.TB, dead int, within time.Duration) int {
	t.Helper()
	if c.ReplicaOf[dead] >= 0 {
		t.Fatalf("testenv: node %d was not started as a master", dead)
	}
	slot := dead * clusterSlots / c.masters() // the first slot it was given
	gone := ":" + strconv.Itoa(c.Nodes[dead].Port)
	Eventually(t, within, fmt.Sprintf("a replica serving the slots of killed master %d", dead), func() error {
		var first string
		for i, n := range c.Nodes {
			if i == dead {
				continue
			}
			info, err := RedisDo(n.Addr(), "CLUSTER", "INFO")
			if err != nil {
				return err
			}
			if s := info.(string); !strings.Contains(s, "cluster_state:ok") {
				return fmt.Errorf("node %d: %q", i, s)
			}
			owners, err := c.owners(n.Addr())
			if err != nil {
				return err
			}
			if strings.Contains(owners+" ", gone+" ") {
				return fmt.Errorf("node %d still sees %s serving slots: %s", i, gone, owners)
			}
			if first == "" {
				first = owners
			} else if owners != first {
				return fmt.Errorf("node %d sees slots %s, another %s", i, owners, first)
			}
		}
		return nil
	})
	return c.Owner(t, slot)
}

// masters is how many nodes were started as masters.
func (c *RedisCluster) masters() int {
	n := 0
	for _, of := range c.ReplicaOf {
		if of < 0 {
			n++
		}
	}
	return n
}

// WaitOK waits until every running node reports cluster_state:ok, knows
// every node and agrees on who serves each slot.
func (c *RedisCluster) WaitOK(t testing.TB, within time.Duration) {
	t.Helper()
	Eventually(t, within, "Redis Cluster state ok on every node", func() error {
		var first string
		for i, n := range c.Nodes {
			info, err := RedisDo(n.Addr(), "CLUSTER", "INFO")
			if err != nil {
				return err
			}
			s := info.(string)
			if !strings.Contains(s, "cluster_state:ok") ||
				!strings.Contains(s, fmt.Sprintf("cluster_known_nodes:%d\r", len(c.Nodes))) ||
				!strings.Contains(s, fmt.Sprintf("cluster_slots_ok:%d\r", clusterSlots)) {
				return fmt.Errorf("node %d: %q", i, s)
			}
			owners, err := c.owners(n.Addr())
			if err != nil {
				return err
			}
			if i == 0 {
				first = owners
			} else if owners != first {
				return fmt.Errorf("node %d sees slots %s, node 0 %s", i, owners, first)
			}
		}
		return nil
	})
}

// owners is CLUSTER SLOTS of one node as "lo-hi:port ..." for comparison.
func (c *RedisCluster) owners(addr string) (string, error) {
	v, err := RedisDo(addr, "CLUSTER", "SLOTS")
	if err != nil {
		return "", err
	}
	var parts []string
	for _, r := range v.([]any) {
		row := r.([]any)
		master := row[2].([]any)
		parts = append(parts, fmt.Sprintf("%d-%d:%d", row[0], row[1], master[1]))
	}
	slices.Sort(parts)
	return strings.Join(parts, " "), nil
}

// URL is the redis-cluster:// URL with every node as a seed.
func (c *RedisCluster) URL() string {
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, n.Addr())
	}
	return "redis-cluster://" + strings.Join(addrs, ",")
}

// KeySlot is CLUSTER KEYSLOT of key, asked of a running node.
func (c *RedisCluster) KeySlot(t testing.TB, key string) int {
	t.Helper()
	var lastErr error
	for _, n := range c.Nodes {
		v, err := RedisDo(n.Addr(), "CLUSTER", "KEYSLOT", key)
		if err == nil {
			return int(v.(int64))
		}
		lastErr = err
	}
	t.Fatalf("testenv: CLUSTER KEYSLOT %s: %v", key, lastErr)
	return -1
}

// Owner is the index in Nodes of the master serving slot, as the first
// running node sees it.
func (c *RedisCluster) Owner(t testing.TB, slot int) int {
	t.Helper()
	var lastErr error
	for _, n := range c.Nodes {
		v, err := RedisDo(n.Addr(), "CLUSTER", "SLOTS")
		if err != nil {
			lastErr = err
			continue
		}
		for _, r := range v.([]any) {
			row := r.([]any)
			if int(row[0].(int64)) <= slot && slot <= int(row[1].(int64)) {
				port := int(row[2].([]any)[1].(int64))
				for i, m := range c.Nodes {
					if m.Port == port {
						return i
					}
				}
			}
		}
		lastErr = fmt.Errorf("slot %d has no owner", slot)
	}
	t.Fatalf("testenv: owner of slot %d: %v", slot, lastErr)
	return -1
}

// MigrateSlot moves slot from master from to master to the way
// redis-cli --cluster reshard does: IMPORTING on the target, MIGRATING on
// the source, MIGRATE of the keys count at a time (between rounds it calls
// between, so a test can let traffic meet the half-migrated slot), then
// SETSLOT NODE on the target, the source and the others.
func (c *RedisCluster) MigrateSlot(t testing.TB, slot, from, to, count int, between func()) (moved int) {
	t.Helper()
	src, dst := c.Nodes[from], c.Nodes[to]
	s := strconv.Itoa(slot)
	must := func(addr string, args ...string) any {
		t.Helper()
		v, err := RedisDo(addr, args...)
		if err != nil {
			t.Fatalf("testenv: %s on %s: %v", strings.Join(args, " "), addr, err)
		}
		return v
	}
	must(dst.Addr(), "CLUSTER", "SETSLOT", s, "IMPORTING", c.IDs[from])
	must(src.Addr(), "CLUSTER", "SETSLOT", s, "MIGRATING", c.IDs[to])
	for {
		keys := must(src.Addr(), "CLUSTER", "GETKEYSINSLOT", s, strconv.Itoa(count)).([]any)
		if len(keys) == 0 {
			break
		}
		args := []string{"MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), "", "0", "5000", "KEYS"}
		for _, k := range keys {
			args = append(args, k.(string))
		}
		must(src.Addr(), args...)
		moved += len(keys)
		if between != nil {
			between()
		}
	}
	// The target first, so the slot never has no owner that takes writes.
	must(dst.Addr(), "CLUSTER", "SETSLOT", s, "NODE", c.IDs[to])
	must(src.Addr(), "CLUSTER", "SETSLOT", s, "NODE", c.IDs[to])
	for i, n := range c.Nodes {
		if i != from && i != to {
			must(n.Addr(), "CLUSTER", "SETSLOT", s, "NODE", c.IDs[to])
		}
	}
	return moved
}

// NATSCluster is a NATS cluster (full mesh of routes) started for one test.
type NATSCluster struct {
	Nodes   []*NATS
	monitor []int // each node's monitoring port (/routez)
}

// StartNATSCluster starts n nats-servers routed to each other and waits
// until each has a route to every other one. Every node after the first
// routes to the first; NATS gossips the rest of the mesh.
func StartNATSCluster(t testing.TB, n int) *NATSCluster {
	t.Helper()
	c := &NATSCluster{}
	bin := natsServerBinary(t)
	seed := ""
	for i := range n {
		var routePort, mon int
		// The route and monitoring ports are picked with the client port,
		// so a clash on any of them is retried on fresh ports by newProc.
		p := newProc(t, "nats", bin, func(port int, dir string) []string {
			routePort, mon = FreePort(t), FreePort(t)
			args := []string{"-a", "127.0.0.1", "-p", strconv.Itoa(port), "--name", fmt.Sprintf("nats%d", i+1),
				"--cluster_name", "wsgateway", "--cluster", "nats://127.0.0.1:" + strconv.Itoa(routePort),
				"-m", strconv.Itoa(mon)}
			if seed != "" {
				args = append(args, "--routes", seed)
			}
			return args
		}, natsReady)
		if i == 0 {
			seed = "nats://127.0.0.1:" + strconv.Itoa(routePort)
		}
		c.Nodes = append(c.Nodes, &NATS{p})
		c.monitor = append(c.monitor, mon)
	}
	c.WaitRoutes(t, 30*time.Second)
	return c
}

// URLs is every node's nats:// URL, comma-separated (the --nats-url form).
func (c *NATSCluster) URLs() string {
	var u []string
	for _, n := range c.Nodes {
		u = append(u, n.URL())
	}
	return strings.Join(u, ",")
}

// WaitRoutes waits until every node has routes to all the others.
func (c *NATSCluster) WaitRoutes(t testing.TB, within time.Duration) {
	t.Helper()
	Eventually(t, within, "NATS routes between every node", func() error {
		for i := range c.Nodes {
			peers, err := c.routedPeers(i)
			if err != nil {
				return err
			}
			if peers < len(c.Nodes)-1 {
				return fmt.Errorf("nats%d has routes to %d peers", i+1, peers)
			}
		}
		return nil
	})
}

// routedPeers is how many distinct servers node i has routes to
// (nats-server may pool several routes per peer).
func (c *NATSCluster) routedPeers(i int) (int, error) {
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(c.monitor[i]) + "/routez")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	peers := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, `"remote_id": "`); ok {
			peers[strings.TrimSuffix(v, `",`)] = true
		}
	}
	return len(peers), sc.Err()
}

// Clients is the names of the client connections node i has now
// (monitoring /connz), e.g. which gateways are connected to it.
func (c *NATSCluster) Clients(i int) ([]string, error) {
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(c.monitor[i]) + "/connz")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Connections []struct {
			Name string `json:"name"`
		} `json:"connections"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("testenv: /connz of nats%d: %v", i+1, err)
	}
	var names []string
	for _, conn := range body.Connections {
		names = append(names, conn.Name)
	}
	return names, nil
}

// RedisDo sends one command and returns its whole reply decoded: string
// for simple and bulk strings, int64, []any for arrays, nil for a null;
// an error reply is returned as an error. Enough for test set-up without
// a client library.
func RedisDo(addr string, args ...string) (any, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	return readRESP(bufio.NewReader(c))
}

func readRESP(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return nil, errors.New("testenv: empty RESP line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, errors.New(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readRESP(r); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("testenv: RESP type %q", line[0])
}
