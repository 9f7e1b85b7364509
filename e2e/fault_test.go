package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// cluster is n gateways sharing one Redis and one NATS.
type cluster struct {
	env
	nodes []*gateway
	board string
}

type clusterOpts struct {
	Nodes     int
	RedisArgs []string
	// RedisURL overrides the gateways' Redis address (a proxy in front).
	RedisURL func(e env) string
	Args     []string // extra gateway flags
	// RedisCluster runs the gateways on a 3-master Redis Cluster
	// (c.RCluster) instead of one redis-server; RedisArgs go to each master.
	RedisCluster bool
	// NATSCluster runs them on a 3-node NATS cluster (c.NCluster), every
	// gateway given every node's URL, instead of one nats-server.
	NATSCluster bool
}

func newCluster(t testing.TB, o clusterOpts) *cluster {
	t.Helper()
	c := &cluster{board: "fault"}
	var redisURL, natsURL string
	if o.RedisCluster {
		c.RCluster = testenv.StartRedisCluster(t, 3, o.RedisArgs...)
		redisURL = c.RCluster.URL()
	} else {
		c.Redis = testenv.StartRedis(t, o.RedisArgs...)
		redisURL = c.Redis.URL()
	}
	if o.NATSCluster {
		c.NCluster = testenv.StartNATSCluster(t, 3)
		natsURL = c.NCluster.URLs()
	} else {
		c.NATS = testenv.StartNATS(t)
		natsURL = c.NATS.URL()
	}
	if o.RedisURL != nil {
		redisURL = o.RedisURL(c.env)
	}
	for i := range max(o.Nodes, 1) {
		c.nodes = append(c.nodes, startGateway(t, gwOpts{
			Node: fmt.Sprintf("n%d", i+1), RedisURL: redisURL, NATSURL: natsURL, Args: o.Args,
		}))
	}
	putBoard(t, c.nodes[0], c.board, nil)
	return c
}

func (c *cluster) urls() []string {
	var u []string
	for _, g := range c.nodes {
		u = append(u, g.URL())
	}
	return u
}

// watchAll puts a watcher on every node, watching member m000's view.
func (c *cluster) watchAll(t testing.TB, nodes ...*gateway) []*watcher {
	if nodes == nil {
		nodes = c.nodes
	}
	var ws []*watcher
	for _, g := range nodes {
		ws = append(ws, watch(t, g, c.board, "m000"))
	}
	return ws
}

// resender is a server client for the re-send part of the ledger check.
func (c *cluster) resender(t testing.TB, g *gateway) *client.Client {
	return serverClients(t, 1, g.URL())[0]
}

// readyz polls until /readyz of g says 200 (or 503 when want is false).
func readyz(t testing.TB, g *gateway, want bool, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	testenv.Eventually(t, within, fmt.Sprintf("/readyz of %s = %v", g.opts.Node, want), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, b, err := rest(ctx, "GET", g.HTTP()+"/readyz", "", nil, nil)
		if err != nil {
			return err
		}
		if (st == 200) != want {
			return fmt.Errorf("%d %s", st, b)
		}
		return nil
	})
	return time.Since(start)
}

// TestLedgerBaseline is the ledger check with no fault: two nodes, load on
// both, frames on both. If it fails, every fault test fails for that reason.
func TestLedgerBaseline(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	eachStore(t, func(t *testing.T, o clusterOpts) {
		o.Nodes = 2
		c := newCluster(t, o)
		ws := c.watchAll(t)
		l := newLedger()
		ld := startLoad(l, serverClients(t, 4, c.urls()...), c.board, memberIDs(40), 4, 1500, 1500)
		ld.waitSent(t, 1500)
		ld.Finish(t, 30*time.Second)
		verify(t, l, c.board, c.nodes, ws, c.resender(t, c.nodes[1]), verifyOpts{})
	})
}

// redisKill is the body of the two Redis SIGKILL tests: load, SIGKILL
// Redis, keep the load going while it is down, restart it (it reloads its
// AOF), finish. Then every acknowledged id is sent again: a re-send that is
// not a duplicate is an acknowledged event Redis lost. With appendfsync
// always none may be lost; with everysec the count is the measured window.
// After the re-sends the ledger must hold exactly.
func redisKill(t *testing.T, fsync string) (lost int, outage time.Duration) {
	c := newCluster(t, clusterOpts{Nodes: 2, RedisArgs: []string{"--appendonly", "yes", "--appendfsync", fsync}})
	ws := c.watchAll(t)
	l := newLedger()
	ld := startLoad(l, serverClients(t, 4, c.urls()...), c.board, memberIDs(40), 4, 800, 4000)
	ld.waitSent(t, 1200)
	killed := time.Now()
	c.Redis.Kill()
	readyz(t, c.nodes[0], false, 5*time.Second)
	time.Sleep(time.Second) // the outage under load is the point of the test
	restarted := time.Now()
	c.Redis.Start()
	ready := readyz(t, c.nodes[0], true, 15*time.Second)
	ld.waitSent(t, ld.Sent()+800)
	outage = restarted.Sub(killed)
	t.Logf("Redis down %s; /readyz 200 %s after redis-server answered PING; first ack %s after the restart began",
		outage.Round(time.Millisecond), ready.Round(time.Millisecond), l.firstAckAfter(restarted).Round(time.Millisecond))
	ld.Finish(t, 60*time.Second)

	// Re-send every acknowledged id: lost ones are applied now.
	rs := c.resender(t, c.nodes[0])
	l.mu.Lock()
	var evs []event
	for id := range l.acks {
		evs = append(evs, l.sent[id])
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, e := range evs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			a, err := rs.Score(ctx, client.ScoreReq{Board: c.board, Member: e.Member, Delta: client.Int(e.Delta), ID: e.ID})
			if err != nil {
				t.Errorf("e2e: re-send %s: %v", e.ID, err)
				return
			}
			if !a.Duplicate {
				mu.Lock()
				lost++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("appendfsync %s: %d of %d acknowledged events lost by the SIGKILL", fsync, lost, len(evs))
	// The lost events are applied again now, so they have a new ack; the
	// ledger keeps the first one, so skip the ack-agreement part by
	// checking scores and frames only.
	l.mu.Lock()
	l.lastAck = time.Now()
	if lost > 0 {
		// A lost event's later ack differs from its first: forget acks,
		// keep the sums (every event is now applied exactly once).
		for id, as := range l.acks {
			l.acks[id] = as[:1]
			l.acks[id][0].Duplicate = true // excluded from the seq check
		}
	}
	l.mu.Unlock()
	verify(t, l, c.board, c.nodes, ws, nil, verifyOpts{})
	return lost, outage
}

func TestRedisKillAppendfsyncAlways(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	lost, _ := redisKill(t, "always")
	if lost != 0 {
		t.Errorf("e2e: appendfsync always lost %d acknowledged events on SIGKILL", lost)
	}
}

func TestRedisKillAppendfsyncEverysec(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	// A process kill leaves written AOF data in the page cache, so even
	// everysec usually loses nothing here; an OS crash would lose up to
	// about a second (not reproducible in a test). The count is reported.
	redisKill(t, "everysec")
}

// TestRedisSlow freezes Redis (DEBUG SLEEP) longer than the gateway's store
// timeout under load: requests get `unavailable` or time out with the
// outcome unknown; some of those were applied after the sleep. Retries with
// the same id resolve every one of them exactly once.
func TestRedisSlow(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	c := newCluster(t, clusterOpts{Nodes: 2})
	ws := c.watchAll(t)
	l := newLedger()
	ld := startLoad(l, serverClients(t, 4, c.urls()...), c.board, memberIDs(40), 4, 800, 4000)
	ld.waitSent(t, 1000)
	start := time.Now()
	if r, err := testenv.RedisCommand(c.Redis.Addr(), "DEBUG", "SLEEP", "3"); err != nil || r != "+OK" {
		t.Fatalf("DEBUG SLEEP: %q %v", r, err)
	}
	woke := time.Now()
	t.Logf("Redis slept %s; first ack %s after it woke", woke.Sub(start).Round(time.Millisecond), l.firstAckAfter(woke).Round(time.Millisecond))
	ld.waitSent(t, ld.Sent()+800)
	ld.Finish(t, 60*time.Second)
	verify(t, l, c.board, c.nodes, ws, c.resender(t, c.nodes[0]), verifyOpts{})
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.codes[proto.CodeUnavailable] == 0 && l.codes["timeout"] == 0 {
		t.Errorf("e2e: a 3s Redis freeze produced no unavailable answer and no timeout: %v", l.codes)
	}
}

// TestRedisPartition puts a TCP proxy between the gateways and Redis and
// partitions it (bytes dropped, connections held open) for 3s, then heals
// it (the black-holed connections are cut).
func TestRedisPartition(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	var px *tcpProxy
	c := newCluster(t, clusterOpts{Nodes: 2, RedisURL: func(e env) string {
		px = startProxy(t, e.Redis.Addr())
		return "redis://" + px.Addr + "/0"
	}})
	ws := c.watchAll(t)
	l := newLedger()
	ld := startLoad(l, serverClients(t, 4, c.urls()...), c.board, memberIDs(40), 4, 800, 4000)
	ld.waitSent(t, 1000)
	px.Partition()
	readyz(t, c.nodes[0], false, 5*time.Second)
	time.Sleep(2 * time.Second)
	healed := time.Now()
	px.Heal()
	back := readyz(t, c.nodes[0], true, 15*time.Second)
	ld.waitSent(t, ld.Sent()+800)
	t.Logf("/readyz 200 again %s after the heal; first ack %s after it", back.Round(time.Millisecond), l.firstAckAfter(healed).Round(time.Millisecond))
	ld.Finish(t, 60*time.Second)
	verify(t, l, c.board, c.nodes, ws, c.resender(t, c.nodes[0]), verifyOpts{})
}

// TestNATSRestart stops NATS under load. Clients keep being served by the
// node they are on (acks, and that node's own frames); remote frames stop.
// After NATS returns, remote views resync and converge.
func TestNATSRestart(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	c := newCluster(t, clusterOpts{Nodes: 2})
	a, b := c.nodes[0], c.nodes[1]
	ws := c.watchAll(t)
	l := newLedger()
	// Writers only on a; b's watcher sees a's changes only through NATS.
	ld := startLoad(l, serverClients(t, 2, a.URL()), c.board, memberIDs(40), 4, 600, 4000)
	ld.waitSent(t, 600)
	c.NATS.Kill()
	stopped := time.Now()
	readyz(t, a, false, 5*time.Second)
	// Local service continues: events keep being acknowledged on a, and
	// a's own watcher keeps getting frames (its seq moves on).
	seqAt := func(w *watcher) int64 {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.top == nil {
			return 0
		}
		return w.top.Seq
	}
	aSeq, before := seqAt(ws[0]), ld.Sent()
	ld.waitSent(t, before+600)
	if got := seqAt(ws[0]); got <= aSeq {
		t.Errorf("e2e: node a sent no new top frame while NATS was down (seq %d, then %d)", aSeq, got)
	}
	// No event after NATS returns: b's frames can only catch up through
	// the resync the bus does on reconnect (the change stream is gone).
	ld.Finish(t, 60*time.Second)
	restarted := time.Now()
	c.NATS.Start()
	back := readyz(t, b, true, 15*time.Second)
	t.Logf("NATS down %s; node b ready again %s after the restart began", restarted.Sub(stopped).Round(time.Millisecond), back.Round(time.Millisecond))
	l.mu.Lock()
	l.lastAck = restarted // the bound runs from NATS being back
	l.mu.Unlock()
	// Verified before waiting for a's own reconnect (its backoff may be
	// longer than the bound): b's frames must converge within a second of
	// b being connected again, whatever a does meanwhile.
	verify(t, l, c.board, c.nodes, ws, c.resender(t, b), verifyOpts{Converge: time.Second + back})
	readyz(t, a, true, 15*time.Second)
}

// TestNodeKill SIGKILLs one of two gateways under load; its clients move to
// the other and re-send what was not acknowledged.
func TestNodeKill(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	eachStore(t, func(t *testing.T, o clusterOpts) {
		o.Nodes = 2
		c := newCluster(t, o)
		a, b := c.nodes[0], c.nodes[1]
		ws := c.watchAll(t, b)
		l := newLedger()
		clients := serverClients(t, 4, a.URL(), b.URL())
		ld := startLoad(l, clients, c.board, memberIDs(40), 4, 800, 4000)
		ld.waitSent(t, 1500)
		a.Kill()
		killed := time.Now()
		ld.waitSent(t, ld.Sent()+200)
		t.Logf("first ack %s after the kill", l.firstAckAfter(killed).Round(time.Millisecond))
		ld.Finish(t, 60*time.Second)
		for i, cl := range clients {
			if w := cl.Welcome(); w.Node != "n2" {
				t.Errorf("e2e: client %d is on %s after n1 was killed", i, w.Node)
			}
		}
		verify(t, l, c.board, []*gateway{b}, ws, c.resender(t, b), verifyOpts{})
	})
}

// TestSIGTERMDrain sends SIGTERM to a node under load: it must answer every
// request it read (so no applied event is left without its ack: a re-send
// of such an event to the other node would come back duplicate), close
// with 1001 and exit 0 within the drain timeout.
func TestSIGTERMDrain(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	c := newCluster(t, clusterOpts{Nodes: 2, Args: []string{"--drain-timeout", "5s"}})
	a, b := c.nodes[0], c.nodes[1]
	ws := c.watchAll(t, b)
	l := newLedger()
	var closes sync.Map // close reasons seen by the load clients
	clients := make([]*client.Client, 4)
	tok := token(t, auth.Claims{Sub: "loadgen", Role: auth.Server})
	for i := range clients {
		clients[i] = dialer{t}.dial(tok, []string{a.URL(), b.URL()}, &client.Options{
			OnError: func(err error) { closes.Store(err.Error(), true) },
		})
	}
	ld := startLoad(l, clients, c.board, memberIDs(40), 8, 1000, 5000)
	ld.waitSent(t, 1500)
	termed := time.Now()
	took, err := a.Term(10 * time.Second)
	if err != nil {
		t.Errorf("e2e: SIGTERM: %v after %s", err, took)
	}
	t.Logf("SIGTERM to exit: %s", took.Round(time.Millisecond))
	if took > 5*time.Second+time.Second {
		t.Errorf("e2e: exit took %s, drain timeout is 5s", took)
	}
	ld.waitSent(t, ld.Sent()+200)
	t.Logf("first ack %s after SIGTERM", l.firstAckAfter(termed).Round(time.Millisecond))
	ld.Finish(t, 60*time.Second)
	l.mu.Lock()
	dups := l.dups
	l.mu.Unlock()
	if dups != 0 {
		t.Errorf("e2e: %d events were applied by the draining node but their ack never reached the client", dups)
	}
	var reasons []string
	closes.Range(func(k, _ any) bool { reasons = append(reasons, k.(string)); return true })
	going := false
	for _, r := range reasons {
		going = going || strings.Contains(r, "1001") || strings.Contains(strings.ToLower(r), "going away")
	}
	if !going {
		t.Errorf("e2e: no client saw a 1001 close; errors seen: %q", reasons)
	}
	verify(t, l, c.board, []*gateway{b}, ws, c.resender(t, b), verifyOpts{})
}

// TestSameIDTwoNodes sends each id to two nodes at the same instant, once
// with the same payload (applied once: one ack duplicate:false, the other
// duplicate:true with the same result) and once with different payloads
// (one applied, the other idempotency_conflict).
func TestSameIDTwoNodes(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	eachStore(t, func(t *testing.T, o clusterOpts) {
		o.Nodes = 2
		c := newCluster(t, o)
		ca := serverClients(t, 1, c.nodes[0].URL())[0]
		cb := serverClients(t, 1, c.nodes[1].URL())[0]
		const n = 300
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		want := map[string]int64{}
		for i := range n {
			member := fmt.Sprintf("m%02d", i%20)
			id := fmt.Sprintf("twin-%d", i)
			da, db := int64(1+i%7), int64(1+i%7)
			conflict := i%3 == 2
			if conflict {
				db = da + 100
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			var acks [2]proto.Ack
			var errs [2]error
			for k, pair := range []struct {
				cl *client.Client
				d  int64
			}{{ca, da}, {cb, db}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					acks[k], errs[k] = pair.cl.Score(ctx, client.ScoreReq{Board: c.board, Member: member, Delta: client.Int(pair.d), ID: id})
				}()
			}
			close(start)
			wg.Wait()
			switch {
			case conflict:
				ok := 0
				for k := range 2 {
					if errs[k] == nil {
						ok++
						want[member] += []int64{da, db}[k]
						if acks[k].Duplicate {
							t.Errorf("e2e: %s: the applied one says duplicate", id)
						}
					} else if ce, isCE := errs[k].(*client.Error); !isCE || ce.Code != proto.CodeIdempotencyConflict {
						t.Errorf("e2e: %s: %v, want idempotency_conflict", id, errs[k])
					}
				}
				if ok != 1 {
					t.Errorf("e2e: %s with two payloads: %d applied (errors %v)", id, ok, errs)
				}
			default:
				if errs[0] != nil || errs[1] != nil {
					t.Fatalf("e2e: %s: %v", id, errs)
				}
				if acks[0].Duplicate == acks[1].Duplicate || acks[0].Seq != acks[1].Seq || acks[0].Score != acks[1].Score || acks[0].Rank != acks[1].Rank {
					t.Errorf("e2e: %s sent to two nodes at once: %+v and %+v", id, acks[0], acks[1])
				}
				want[member] += da
			}
		}
		truth, _, err := readBoard(ctx, c.nodes[0], adminToken(t), c.board)
		if err != nil {
			t.Fatal(err)
		}
		if len(truth) != len(want) {
			t.Errorf("e2e: %d members, want %d", len(truth), len(want))
		}
		for _, e := range truth {
			if want[e.Member] != e.Score {
				t.Errorf("e2e: %s has %d, want %d", e.Member, e.Score, want[e.Member])
			}
		}
	})
}
