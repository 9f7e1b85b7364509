package node_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/gwtest"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/node"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/redisstore"
)

var secret = []byte("node-tests-node-tests-node-tests-0123")

// running is one node behind a real HTTP server.
type running struct {
	n    *node.Node
	http string // http://host:port
	ws   string // ws://host:port/ws
}

// start runs a node for the test's life through gwtest (node.New as
// cmd/wsgateway calls it, on a loopback server); cfg gets ID, Verifier and
// a short interval when it lacks them.
func start(t testing.TB, cfg node.Config) *running {
	t.Helper()
	if cfg.ID == "" {
		cfg.ID = "n1"
	}
	g := gwtest.Run(t, gwtest.Options{Secret: secret, Config: func(c *node.Config) {
		reg, log, interval := c.Registry, c.Logger, c.Interval
		*c = cfg
		if c.Registry == nil {
			c.Registry = reg
		}
		if c.Logger == nil {
			c.Logger = log
		}
		if c.Interval == 0 {
			c.Interval = interval
		}
	}})
	return &running{n: g.Node, http: g.HTTP, ws: g.URL}
}

func token(t testing.TB, sub string, role auth.Role) string {
	t.Helper()
	tok, err := auth.MintHS256(secret, auth.Claims{Sub: sub, Role: role})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// rest sends one REST request and returns the status and body.
func (r *running) rest(t testing.TB, method, path, tok, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, r.http+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func subscribe(t *testing.T, r *running, board string, top int) *client.Subscription {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, r.ws, token(t, "watcher", auth.Spectator), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	sub, err := c.Subscribe(ctx, board, client.SubOpts{Top: top})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// waitTop reads top frames until one satisfies ok.
func waitTop(t *testing.T, sub *client.Subscription, what string, ok func(total int64, scores []int64) bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case f := <-sub.Top():
			var scores []int64
			for _, e := range f.Entries {
				scores = append(scores, e.Score)
			}
			if ok(f.Total, scores) {
				return
			}
		case <-deadline:
			t.Fatalf("no top frame with %s within 5s", what)
		}
	}
}

// TestRESTScoreReachesFrames: an event applied through REST reaches this
// node's frames through the store's sink (the API announces nothing), and a
// duplicate of it changes nothing.
func TestRESTScoreReachesFrames(t *testing.T) {
	t.Parallel()
	r := start(t, node.Config{Dev: true})
	adm := token(t, "root", auth.Admin)
	if st, body := r.rest(t, "PUT", "/api/v1/boards/flow", adm, `{}`); st != 200 {
		t.Fatalf("PUT board: %d %s", st, body)
	}
	sub := subscribe(t, r, "flow", 10)
	waitTop(t, sub, "an empty board", func(total int64, _ []int64) bool { return total == 0 })
	for range 2 { // the second is a duplicate
		if st, body := r.rest(t, "POST", "/api/v1/boards/flow/scores", adm, `[{"id":"e1","member":"ann","delta":7}]`); st != 200 || !strings.Contains(body, `"score":7`) {
			t.Fatalf("POST scores: %d %s", st, body)
		}
	}
	waitTop(t, sub, "ann's 7", func(total int64, s []int64) bool { return total == 1 && len(s) == 1 && s[0] == 7 })
}

// TestEveryApplyReachesFrames: events applied on a node from the WebSocket
// and from REST, with repeats and a refused event among them, all reach the
// frames (through the store's sink), and the store applied each fresh event
// once (the wrapper counts fresh outcomes). That the sink hears each change
// exactly once is the engines' contract (rank/ranktest).
func TestEveryApplyReachesFrames(t *testing.T) {
	t.Parallel()
	var applied atomic.Int64
	r := start(t, node.Config{Dev: true, WrapStore: func(s rank.Store) rank.Store { return counting{s, &applied} }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, r.ws, token(t, "bot", auth.Server), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 50 {
		if _, err := c.Score(ctx, client.ScoreReq{ID: fmt.Sprintf("w%d", i), Board: "sink", Member: "m", Delta: client.Int(1)}); err != nil {
			t.Fatal(err)
		}
	}
	// Repeats and a refused event: no change.
	if a, err := c.Score(ctx, client.ScoreReq{ID: "w0", Board: "sink", Member: "m", Delta: client.Int(1)}); err != nil || !a.Duplicate {
		t.Fatalf("repeat: %+v %v", a, err)
	}
	if _, err := c.Score(ctx, client.ScoreReq{ID: "big", Board: "sink", Member: "m", Delta: client.Int(1 << 53)}); err == nil {
		t.Fatal("an out-of-range delta was accepted")
	}
	adm := token(t, "root", auth.Admin)
	if st, body := r.rest(t, "POST", "/api/v1/boards/sink/scores", adm, `[{"id":"r1","member":"m","delta":1},{"id":"w1","member":"m","delta":1}]`); st != 200 {
		t.Fatalf("POST: %d %s", st, body)
	}
	sub := subscribe(t, r, "sink", 1)
	waitTop(t, sub, "m at 51", func(_ int64, s []int64) bool { return len(s) == 1 && s[0] == 51 })
	if n := applied.Load(); n != 51 {
		t.Fatalf("the node's store applied %d fresh events, want 51", n)
	}
}

// counting counts the fresh events a store applied, through Apply's Done.
type counting struct {
	rank.Store
	n *atomic.Int64
}

func (c counting) Apply(ctx context.Context, e rank.Event, done rank.Done) {
	c.Store.Apply(ctx, e, func(r rank.Result, err error) {
		if err == nil && !r.Duplicate {
			c.n.Add(1)
		}
		done(r, err)
	})
}

// twoNodes starts nodes "a" and "b" on one Redis and one NATS server of
// their own, at interval (0: start's default). Their live frames have no
// backstop re-reads: what one node's frames show of the other's changes
// came over the bus.
func twoNodes(t *testing.T, interval time.Duration) (a, b *running) {
	t.Helper()
	nodes, _ := cluster(t, interval, []string{"a", "b"}, func(c *node.Config) { c.LiveRefresh = -1 })
	return nodes[0], nodes[1]
}

// cluster starts nodes of the given ids on one Redis and one NATS server
// of their own, at interval (0: start's default); tweak, when set, adjusts
// each node's config. It returns the nodes and the NATS server's URL.
func cluster(t testing.TB, interval time.Duration, ids []string, tweak func(*node.Config)) ([]*running, string) {
	t.Helper()
	rd := testenv.StartRedis(t)
	nats := testenv.StartNATS(t)
	var nodes []*running
	for _, id := range ids {
		rc, err := redisstore.NewClient(rd.URL())
		if err != nil {
			t.Fatal(err)
		}
		cfg := node.Config{ID: id, Redis: rc, NATSURL: nats.URL(), Interval: interval}
		if tweak != nil {
			tweak(&cfg)
		}
		nodes = append(nodes, start(t, cfg))
	}
	return nodes, nats.URL()
}

// TestTwoNodes: two nodes on one Redis and one NATS. A score on one reaches
// the other's frames over the bus, and a board config changed on one is
// seen at once by the other (its cached config is dropped), not after the
// cache's lifetime.
func TestTwoNodes(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	a, b := twoNodes(t, 0)
	adm := token(t, "root", auth.Admin)
	if st, body := a.rest(t, "PUT", "/api/v1/boards/two", adm, `{"top":3}`); st != 200 {
		t.Fatalf("PUT: %d %s", st, body)
	}
	sub := subscribe(t, b, "two", 0) // 0: the board's default top
	if st, body := a.rest(t, "POST", "/api/v1/boards/two/scores", adm,
		`[{"id":"1","member":"a","delta":1},{"id":"2","member":"b","delta":2},{"id":"3","member":"c","delta":3},{"id":"4","member":"d","delta":4}]`); st != 200 {
		t.Fatalf("POST: %d %s", st, body)
	}
	waitTop(t, sub, "node a's events on node b, 3 rows", func(total int64, s []int64) bool { return total == 4 && len(s) == 3 && s[0] == 4 })

	// Node b has read the config (top 3); node a makes the board refuse
	// client writes. Node b must refuse a player's score at once.
	if st, body := a.rest(t, "PUT", "/api/v1/boards/two", adm, `{"top":3,"client_writes":false}`); st != 200 {
		t.Fatalf("PUT: %d %s", st, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := client.Dial(ctx, b.ws, token(t, "pat", auth.Player), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	testenv.Eventually(t, time.Second, "node b to refuse client writes", func() error {
		_, err := p.Score(ctx, client.ScoreReq{ID: fmt.Sprintf("p%d", time.Now().UnixNano()), Board: "two", Delta: client.Int(1)})
		if ce, ok := err.(*client.Error); ok && ce.Code == "forbidden" {
			return nil
		}
		return fmt.Errorf("score: %v", err)
	})
}

// TestSubmitters: the store hears who submitted each event
// (rank.Event.Submitter), so it keeps one submitter's events in order and
// may spread submitters over its Redis lanes. Each WebSocket connection is
// one submitter, distinct from the others, and so is each REST scores
// request. (The hub and the API number theirs apart: a connection and a
// request that share a number are only kept in order together.)
func TestSubmitters(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]uint64{} // event id -> submitter
	r := start(t, node.Config{Dev: true, WrapStore: func(s rank.Store) rank.Store {
		return submitters{s, func(e rank.Event) {
			mu.Lock()
			seen[e.ID] = e.Submitter
			mu.Unlock()
		}}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, conn := range []string{"a", "b"} {
		c, err := client.Dial(ctx, r.ws, token(t, "bot-"+conn, auth.Server), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := c.Score(ctx, client.ScoreReq{ID: fmt.Sprintf("%s%d", conn, i), Board: "subs", Member: fmt.Sprintf("m%d", i), Delta: client.Int(1)}); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
	}
	adm := token(t, "root", auth.Admin)
	for _, req := range []string{"p", "q"} {
		body := fmt.Sprintf(`[{"id":"%s0","member":"x","delta":1},{"id":"%s1","member":"y","delta":1}]`, req, req)
		if st, out := r.rest(t, "POST", "/api/v1/boards/subs/scores", adm, body); st != 200 {
			t.Fatalf("POST: %d %s", st, out)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	of := map[uint64]string{} // submitter -> the connection or request that had it
	for i, who := range []string{"a", "b", "p", "q"} {
		if i == 2 {
			clear(of) // the API's numbers
		}
		sub, ok := seen[who+"0"]
		if !ok || sub == 0 {
			t.Fatalf("%s's first event: submitter %d (seen %v)", who, sub, ok)
		}
		for id, s := range seen {
			if strings.HasPrefix(id, who) && s != sub {
				t.Errorf("event %s has submitter %d, its first %d: one connection or request is one submitter", id, s, sub)
			}
		}
		if other, dup := of[sub]; dup {
			t.Errorf("%s and %s share submitter %d", other, who, sub)
		}
		of[sub] = who
	}
	if len(seen) != 10 {
		t.Errorf("the store saw %d events, want 10", len(seen))
	}
}

// submitters hands every event to saw before applying it.
type submitters struct {
	rank.Store
	saw func(rank.Event)
}

func (s submitters) Apply(ctx context.Context, e rank.Event, done rank.Done) {
	s.saw(e)
	s.Store.Apply(ctx, e, done)
}

// TestOwnFieldsRefused: a part's field that is the node's own, one value
// for every part (the trusted proxies of the WebSocket's limits and
// REST's), is refused in that part's config.
func TestOwnFieldsRefused(t *testing.T) {
	t.Parallel()
	v, err := auth.New(context.Background(), auth.Config{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for name, set := range map[string]func(*node.Config){
		"Hub.TrustedProxies": func(c *node.Config) { c.Hub.TrustedProxies = proxies },
		"API.TrustedProxies": func(c *node.Config) { c.API.TrustedProxies = proxies },
	} {
		cfg := node.Config{ID: "n1", Verifier: v}
		set(&cfg)
		if n, err := node.New(context.Background(), cfg); err == nil {
			n.Close()
			t.Errorf("%s set: accepted", name)
		}
	}
}
