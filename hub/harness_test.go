package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub"
	"github.com/wsgateway/wsgateway/internal/gwtest"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/node"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/redisstore"
)

// The two setups every rule test runs against.
const (
	memoryKind = "memory" // memory engine + in-process NATS
	redisKind  = "redis"  // Redis engine + a real nats-server
)

// forEachSetup runs fn once per setup, in parallel.
func forEachSetup(t *testing.T, fn func(t *testing.T, kind string)) {
	t.Helper()
	for _, kind := range []string{memoryKind, redisKind} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			fn(t, kind)
		})
	}
}

// infra is the shared servers of one test: the secret, and for the Redis
// setup one redis-server and one nats-server (shared by every node).
type infra struct {
	kind   string
	secret []byte
	redis  *testenv.Redis
	nats   *testenv.NATS
}

// newInfra starts the servers of kind; redisArgs go to redis-server.
func newInfra(t testing.TB, kind string, redisArgs ...string) *infra {
	t.Helper()
	in := &infra{kind: kind, secret: []byte("test-secret-test-secret-test-secret!")}
	if kind == redisKind {
		in.redis = testenv.StartRedis(t, redisArgs...)
		in.nats = testenv.StartNATS(t)
	}
	return in
}

// gwOptions tweak one gateway node.
type gwOptions struct {
	node     string
	cfg      func(*hub.Config)
	nodeCfg  func(*node.Config)
	proxies  []netip.Prefix              // node.Config.TrustedProxies
	wrap     func(rank.Store) rank.Store // a fault-injecting or slowing wrapper (node.Config.WrapStore)
	dev      bool                        // boards are created on first use (--dev)
	interval time.Duration
	now      func() time.Time // the store's clock; nil = real time
	// storeTimeout bounds each store operation (the Redis engine's and
	// the hub's); zero = 10s: a guard against a hang, long enough that a
	// loaded machine's slowness is not taken for an unavailable store
	// (500ms failed whole tests under CPU load).
	storeTimeout time.Duration
	// noBackstop turns off the live frames' backstop re-reads, so a frame
	// can only come from the path under test.
	noBackstop bool
	// log, when set, also gets the node's log lines (warnings and errors).
	log io.Writer
	// allowPrivate lets webhooks and validation hooks reach loopback
	// (--webhook-allow-private): test hooks listen there.
	allowPrivate bool
}

// gateway is one node as cmd/wsgateway wires it (node.New, through
// gwtest) behind a real HTTP server: the hub's tests run the paths
// production runs, the apply path included.
type gateway struct {
	t  testing.TB
	in *infra
	*gwtest.Gateway
	clients atomic.Int64
}

func (in *infra) gateway(t testing.TB, o gwOptions) *gateway {
	t.Helper()
	if o.node == "" {
		o.node = "n1"
	}
	if o.interval == 0 {
		o.interval = 50 * time.Millisecond
	}
	opts := gwtest.Options{Secret: in.secret, Interval: o.interval, AutoCreate: o.dev, Config: func(c *node.Config) {
		c.ID, c.Logger, c.Now, c.WrapStore, c.TrustedProxies = o.node, testLogger(t), o.now, o.wrap, o.proxies
		if o.log != nil {
			c.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(o.log, tWriter{t}), &slog.HandlerOptions{Level: slog.LevelWarn}))
		}
		if o.storeTimeout == 0 {
			o.storeTimeout = 10 * time.Second
		}
		c.StoreTimeout, c.Hub.StoreTimeout = o.storeTimeout, o.storeTimeout
		if o.noBackstop {
			c.LiveRefresh = -1
		}
		c.Webhooks.AllowPrivate = o.allowPrivate
		if in.kind == redisKind {
			client, err := redisstore.NewClient(in.redis.URL())
			if err != nil {
				t.Fatal(err)
			}
			c.Redis, c.NATSURL = client, in.nats.URL()
		}
		if o.cfg != nil {
			o.cfg(&c.Hub)
		}
		if o.nodeCfg != nil {
			o.nodeCfg(c)
		}
	}}
	return &gateway{t: t, in: in, Gateway: gwtest.Run(t, opts)}
}

// metric sums the samples of one of the node's metrics (every label).
func (g *gateway) metric(name string) float64 {
	g.t.Helper()
	families, err := g.Registry.Gather()
	if err != nil {
		g.t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// token mints a token for sub with role (and an optional boards claim).
func (in *infra) token(t testing.TB, sub string, role auth.Role, boards ...string) string {
	t.Helper()
	return in.tokenTTL(t, sub, role, time.Hour, boards...)
}

func (in *infra) tokenTTL(t testing.TB, sub string, role auth.Role, ttl time.Duration, boards ...string) string {
	t.Helper()
	c := auth.Claims{Sub: sub, Role: role, TTL: ttl, Name: strings.ToUpper(sub[:1]) + sub[1:]}
	if boards != nil {
		c.Boards = boards
	}
	tok, err := auth.MintHS256(in.secret, c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// board creates a board with the defaults changed by edit, as a PUT
// through the API does: the store, then the node's BoardChanged.
func (g *gateway) board(id string, edit func(*rank.Board)) rank.Board {
	g.t.Helper()
	b := rank.DefaultBoard(id)
	if edit != nil {
		edit(&b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := g.Store.PutBoard(ctx, b)
	if err != nil {
		g.t.Fatalf("put board %s: %v", id, err)
	}
	g.Node.BoardChanged(id, false)
	return got
}

func (g *gateway) top(board string, n int) rank.Page {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := g.Store.Top(ctx, board, "", 0, n)
	if err != nil {
		g.t.Fatalf("top %s: %v", board, err)
	}
	return p
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ---- the test client: raw coder/websocket ----

// msg is one server message: its type and id, and the raw JSON.
type msg struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Code string `json:"code"`
	raw  []byte
}

func (m msg) String() string { return string(m.raw) }

// as decodes the message into v's type.
func as[T any](t testing.TB, m msg) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(m.raw, &v); err != nil {
		t.Fatalf("decode %s: %v", m.raw, err)
	}
	return v
}

type wsClient struct {
	t       testing.TB
	prefix  string // makes request ids unique across clients (R4 keys by board and id)
	ws      *websocket.Conn
	welcome proto.Welcome
	frames  []msg // top/view frames met while waiting for a reply
	seq     atomic.Int64
}

type dialOptions struct {
	carrier string // "header" (default), "subprotocol", "query", "none"
	origin  string
	header  http.Header
	// noWelcome skips reading the welcome frame.
	noWelcome bool
	// rcvBuf, when set, shrinks the client socket's receive buffer so that
	// a client that does not read blocks the server's writes quickly.
	rcvBuf int
}

// dialErr dials and returns the HTTP response on failure.
func (g *gateway) dialErr(token string, o dialOptions) (*wsClient, *http.Response, error) {
	u := g.URL
	opts := &websocket.DialOptions{HTTPHeader: http.Header{}, Subprotocols: []string{proto.Subprotocol}}
	for k, v := range o.header {
		opts.HTTPHeader[k] = v
	}
	switch o.carrier {
	case "", "header":
		if token != "" {
			opts.HTTPHeader.Set("Authorization", "Bearer "+token)
		}
	case "subprotocol":
		opts.Subprotocols = []string{proto.Subprotocol, proto.BearerPrefix + token}
	case "query":
		u += "?access_token=" + token
	}
	if o.origin != "" {
		opts.HTTPHeader.Set("Origin", o.origin)
	}
	if o.rcvBuf > 0 {
		d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, o.rcvBuf)
			})
			return errors.Join(err, serr)
		}}
		opts.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, u, opts)
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(1 << 20)
	c := &wsClient{t: g.t, ws: ws, prefix: fmt.Sprintf("c%d-", g.clients.Add(1))}
	g.t.Cleanup(func() { ws.CloseNow() })
	if !o.noWelcome {
		m := c.next()
		if m.Type != proto.TypeWelcome {
			g.t.Fatalf("first frame %s, want welcome", m)
		}
		c.welcome = as[proto.Welcome](g.t, m)
	}
	return c, resp, nil
}

func (g *gateway) dial(token string) *wsClient {
	g.t.Helper()
	c, _, err := g.dialErr(token, dialOptions{})
	if err != nil {
		g.t.Fatalf("dial: %v", err)
	}
	return c
}

// id returns a fresh request id.
func (c *wsClient) id() string { return fmt.Sprintf("%sr%d", c.prefix, c.seq.Add(1)) }

// send writes one request; fields are added to type and id.
func (c *wsClient) send(typ, id string, fields map[string]any) {
	c.t.Helper()
	m := map[string]any{"type": typ, "id": id}
	for k, v := range fields {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(string(b))
}

func (c *wsClient) sendRaw(s string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// read reads one message within d.
func (c *wsClient) read(d time.Duration) (msg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	typ, b, err := c.ws.Read(ctx)
	if err != nil {
		return msg{}, err
	}
	if typ != websocket.MessageText {
		return msg{}, fmt.Errorf("binary frame from the server")
	}
	var m msg
	if err := json.Unmarshal(b, &m); err != nil {
		return msg{}, fmt.Errorf("bad JSON from the server: %s", b)
	}
	m.raw = b
	return m, nil
}

func (c *wsClient) next() msg {
	c.t.Helper()
	m, err := c.read(10 * time.Second)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return m
}

func isFrame(m msg) bool {
	return m.Type == proto.TypeTop || m.Type == proto.TypeView || m.Type == proto.TypeMembers
}

// reply reads until the reply to id, keeping frames met on the way; any
// other reply first is a failure (R2).
func (c *wsClient) reply(id string) msg {
	c.t.Helper()
	for {
		m := c.next()
		if isFrame(m) {
			c.frames = append(c.frames, m)
			continue
		}
		if m.ID != id {
			c.t.Fatalf("got %s while waiting for the reply to %s", m, id)
		}
		return m
	}
}

// call sends a request and returns its reply.
func (c *wsClient) call(typ string, fields map[string]any) msg {
	c.t.Helper()
	id := c.id()
	c.send(typ, id, fields)
	return c.reply(id)
}

// expectError calls and checks the reply is an error with code.
func (c *wsClient) expectError(code, typ string, fields map[string]any) msg {
	c.t.Helper()
	m := c.call(typ, fields)
	if m.Type != proto.TypeError || m.Code != code {
		c.t.Fatalf("%s %v: got %s, want error %s", typ, fields, m, code)
	}
	return m
}

// expectOK calls and checks the reply has type want.
func (c *wsClient) expectOK(want, typ string, fields map[string]any) msg {
	c.t.Helper()
	m := c.call(typ, fields)
	if m.Type != want {
		c.t.Fatalf("%s %v: got %s, want %s", typ, fields, m, want)
	}
	return m
}

func (c *wsClient) score(board, member string, delta int64) proto.Ack {
	c.t.Helper()
	f := map[string]any{"board": board, "delta": delta}
	if member != "" {
		f["member"] = member
	}
	return as[proto.Ack](c.t, c.expectOK(proto.TypeAck, proto.TypeScore, f))
}

// closeStatus reads (discarding messages) until the connection ends and
// returns the close code the server sent (-1: none).
func (c *wsClient) closeStatus(d time.Duration) websocket.StatusCode {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		_, err := c.read(time.Until(deadline))
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				c.t.Fatalf("connection still open after %s", d)
			}
			return websocket.CloseStatus(err)
		}
	}
}

// nextFrame reads until a frame of typ (frames kept earlier are used first).
func (c *wsClient) nextFrame(typ string, d time.Duration) (msg, bool) {
	c.t.Helper()
	for i, m := range c.frames {
		if m.Type == typ {
			c.frames = append(c.frames[:i:i], c.frames[i+1:]...)
			return m, true
		}
	}
	deadline := time.Now().Add(d)
	for {
		m, err := c.read(time.Until(deadline))
		if err != nil {
			return msg{}, false
		}
		if m.Type == typ {
			return m, true
		}
	}
}

// startShutdown runs Shutdown, bounded by d, in the background and waits
// until new upgrades are refused with 503; the channel gets its result.
func (g *gateway) startShutdown(d time.Duration) <-chan error {
	g.t.Helper()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		done <- g.Hub.Shutdown(ctx)
	}()
	testenv.Until(g.t, 5*time.Second, "new upgrades to be refused", func() bool {
		_, resp, err := g.dialErr(g.in.token(g.t, "late", auth.Player), dialOptions{})
		return err != nil && resp != nil && resp.StatusCode == http.StatusServiceUnavailable
	})
	return done
}

// readUntilGoingAway reads until the server ends the connection, which must
// be with 1001 (R14), handing check each message and its index; it returns
// how many messages came.
func (c *wsClient) readUntilGoingAway(check func(i int, m msg)) int {
	c.t.Helper()
	hinted := false
	for i := 0; ; {
		m, err := c.read(10 * time.Second)
		if err != nil {
			if code := websocket.CloseStatus(err); code != websocket.StatusGoingAway {
				c.t.Fatalf("%s: ended with %v, want close 1001", c.prefix, err)
			}
			if !hinted {
				c.t.Fatalf("%s: closed with 1001 without a draining hint (§15)", c.prefix)
			}
			return i
		}
		if m.Type == proto.TypeDraining {
			hinted = true
			continue
		}
		check(i, m)
		i++
	}
}

// faultStore wraps a real store (node.Config.WrapStore): while down, every
// call fails with rank.ErrUnavailable (the memory setup's stand-in for a
// stopped Redis); applyDelay slows Apply down (requests in flight for the
// drain test; unlike the Redis engine it holds the caller meanwhile). Up,
// Apply goes to the engine's one apply path, whose sink is the node's
// (TestWrappedStoreApplyPath).
type faultStore struct {
	rank.Store
	down       atomic.Bool
	applyDelay time.Duration
	applies    atomic.Int64 // Apply calls started
}

func (f *faultStore) fail() error {
	if f.down.Load() {
		return fmt.Errorf("test: %w", rank.ErrUnavailable)
	}
	return nil
}

func (f *faultStore) GetBoard(ctx context.Context, id string) (rank.Board, error) {
	if err := f.fail(); err != nil {
		return rank.Board{}, err
	}
	return f.Store.GetBoard(ctx, id)
}

func (f *faultStore) Board(ctx context.Context, id string) (rank.Board, error) {
	if err := f.fail(); err != nil {
		return rank.Board{}, err
	}
	return f.Store.Board(ctx, id)
}

func (f *faultStore) Apply(ctx context.Context, e rank.Event, done rank.Done) {
	f.applies.Add(1)
	if err := f.fail(); err != nil {
		done(rank.Result{}, err)
		return
	}
	if f.applyDelay > 0 {
		select {
		case <-time.After(f.applyDelay):
		case <-ctx.Done():
			done(rank.Result{}, ctx.Err())
			return
		}
	}
	f.Store.Apply(ctx, e, done)
}

func (f *faultStore) Top(ctx context.Context, board string, p rank.PeriodSel, offset, limit int) (rank.Page, error) {
	if err := f.fail(); err != nil {
		return rank.Page{}, err
	}
	return f.Store.Top(ctx, board, p, offset, limit)
}

func (f *faultStore) Ranks(ctx context.Context, board string, p rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	if err := f.fail(); err != nil {
		return rank.Ranks{}, err
	}
	return f.Store.Ranks(ctx, board, p, members, around)
}
