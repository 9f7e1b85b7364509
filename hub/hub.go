// Package hub serves the gateway's WebSocket endpoint (docs/protocol.md §3,
// §4): authentication before the upgrade, the strict protocol codec, score
// events, subscriptions through the live frame engine, rate limits, the
// slow-consumer policy and the drain on shutdown.
//
// Each connection is one reader goroutine, and a writer started for work a
// write in its place cannot do (writer.go). Replies go through a bounded
// queue; live frames through a latest-wins live.Outbox. The socket belongs
// to a sock.Conn: the writer holds it except while it waits, and while it
// waits the fan-out (a due frame) and the store's batch end (acks) may
// take it and write in its place, never waiting for it (direct.go). The
// protocol code (handle, window, access) never touches the socket.
//
// Lock order (a lock may be taken while holding those to its left, never
// the other way round):
//
//	conn.gate → live.Engine.mu → live.Outbox.mu  (subscribe puts its first frames under the gate;
//	                                              the writer takes frames under it)
//	conn.gate → conn.mu → replyQueue.mu          (the writer takes replies under the gate; a
//	                                              completed score queues its reply under conn.mu)
//	sock hold → conn.gate                        (the writer holds the socket while it is not waiting)
//
// Taking the socket in the writer's place (direct.go) runs under
// live.Outbox.mu and takes the socket and conn.gate with TryLock only: it
// never waits for them, so taking them "backwards" cannot deadlock, and a
// failure sends the frame the writer's way instead.
//
// registry shards, Metrics and the store's own locks are leaves: nothing
// else is taken while they are held. A store's Done callback runs with no
// hub lock held and takes conn.mu (window.go).
package hub

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub/live"
	"github.com/wsgateway/wsgateway/hub/sock"
	"github.com/wsgateway/wsgateway/internal/clientaddr"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// Verifier checks a token; *auth.Verifier is one.
type Verifier interface {
	Verify(ctx context.Context, token string) (auth.Principal, error)
}

// Store is what the hub asks of the rank store (a rank.Store has it):
// scores, the reads of page and rank, and the board's config, cached.
type Store interface {
	rank.BoardCache
	Board(ctx context.Context, id string) (rank.Board, error)
	Apply(ctx context.Context, e rank.Event, done rank.Done)
	Top(ctx context.Context, board string, period rank.PeriodSel, offset, limit int) (rank.Page, error)
	Ranks(ctx context.Context, board string, period rank.PeriodSel, members []string, around int) (rank.Ranks, error)
	SelfRanks(ctx context.Context, board string, period rank.PeriodSel, members []string, around int) (rank.Ranks, error)
	MemberTier(ctx context.Context, board string, period rank.PeriodSel, member string) (string, error)
}

// Deps are what the hub works with, built by the caller (the node).
type Deps struct {
	// Store applies scores and answers reads; its CachedBoard is the board
	// cache, and its sink (not the hub) tells live frames and the bus of
	// what was applied. Required.
	Store    Store
	Verifier Verifier     // required
	Live     *live.Engine // required, and running (Engine.Run)
	// Decorator gives the entries of page and rank replies their profile
	// fields (R20); frames get theirs from Live. nil: stored names only.
	Decorator rank.Decorator
	Metrics   *Metrics // nil records nothing (NewMetrics)
}

// Config tunes a Hub. Zero values take the documented defaults.
type Config struct {
	Node string // this node's id, shown in welcome

	MaxMessage int // largest client frame in bytes (--max-message); default 4096
	// Rate is messages per second per player or spectator connection
	// (--rate), burst 2×; default 50. Server and admin are not limited.
	Rate        int
	TopInterval time.Duration // min gap between two frames of one key (--top-interval); default 100ms
	// AllowedOrigins are origin host patterns (path.Match, as
	// coder/websocket's OriginPatterns) for browser upgrades; empty = the
	// request's own host only. Requests without Origin (bots) are allowed.
	AllowedOrigins []string
	// PublicRead lets a request without a token in as an anonymous
	// spectator, limited to boards marked public. Such a connection has no
	// token, so no authentication deadline or expiry applies to it: it is
	// bounded like any spectator (rate, subscriptions, pings) and by
	// MaxConnsPerIP.
	PublicRead bool
	// MaxConnsPerIP caps the open connections of one client address on this
	// node (--max-conns-per-ip); IPv6 addresses count by /64, loopback
	// clients are not counted. An upgrade past it gets 429 rate_limited with
	// Retry-After, before the token is verified. Default
	// DefaultMaxConnsPerIP (256); negative = no cap.
	MaxConnsPerIP int
	// MaxConnsPerMember caps the open connections of one member (token sub)
	// with the player or spectator role on this node
	// (--max-conns-per-member); server and admin tokens are exempt, as bots
	// multiplex. Refused like MaxConnsPerIP. Default
	// DefaultMaxConnsPerMember (16); negative = no cap.
	MaxConnsPerMember int
	// MaxConns caps the open connections of this node (--max-conns),
	// counted before any other check; an upgrade past it gets 503
	// unavailable with Retry-After, so a load balancer tries another node.
	// Zero or negative: no cap.
	MaxConns int
	// TrustedProxies are the reverse proxies (CIDRs) whose X-Forwarded-For
	// is believed for the client address (see clientKey). Empty = the TCP
	// peer is the client. Behind a proxy that is not listed, every client
	// shares the proxy's address and its cap.
	TrustedProxies []netip.Prefix
	// ReplyQueue bounds a connection's queued replies; past it the
	// connection is closed as a slow consumer (R12). Default 256.
	ReplyQueue int
	// ReplyQueueBytes bounds the same queue in bytes (a `page` reply of 100
	// entries is ~13 KB); one reply larger than it still goes when the
	// queue is empty. Default 1 MiB.
	ReplyQueueBytes int
	// WriteTimeout bounds every write; a write blocked this long closes the
	// connection (R12). Default 5s.
	WriteTimeout time.Duration
	// MemberScoreRate is score events per second per player member across
	// all its connections on this node, burst 2× (a player may hold
	// several connections); past it a score gets rate_limited. Server and
	// admin tokens are not limited. Default Rate; negative = no limit.
	MemberScoreRate int
	// MaxSubscriptions per connection (distinct boards). Default 64.
	MaxSubscriptions int
	// StoreTimeout bounds each store call and token verification made for a
	// request, so a dead store is reported as unavailable promptly (R13).
	// Default 2s.
	StoreTimeout time.Duration
	// PingInterval is how often the writer pings the peer, busy or not,
	// while it is not draining; a peer that does not pong within
	// WriteTimeout is closed. Default 25s: under the idle timeout of
	// the proxies in front (30 to 60 s on most).
	PingInterval time.Duration
	Logger       *slog.Logger // default: discard
}

// Hub is the WebSocket endpoint. All methods are safe for concurrent use.
type Hub struct {
	cfg  Config
	deps Deps
	log  *slog.Logger
	m    *Metrics
	reg  registry
	// rates are the per-member score budgets (memberrate.go); unused when
	// MemberScoreRate < 0.
	rates memberRates

	// ctx is every connection's parent; cancelled when Shutdown's deadline
	// passes, which tears down whatever has not drained.
	ctx    context.Context
	cancel context.CancelFunc

	closing atomic.Bool
	emptied chan struct{} // capacity 1: the registry became empty
	bufs    sync.Pool     // *bytes.Buffer for reading frames
	// sockBufs are the sockets' write batches and read buffers (hub/sock);
	// replyBufs are *[]byte encoded replies (conn.go).
	sockBufs *sock.Buffers
	wheel    wheel // every connection's timers (wheel.go)
	// directFrames and directReplies count the frames and replies written
	// in an idle writer's place (direct.go), so a test can see the path is
	// taken.
	directFrames  atomic.Uint64
	directReplies atomic.Uint64
	acks          ackBatch
	replyBufs     sync.Pool

	nodeConns atomic.Int64 // MaxConns slots taken (limits.go)
	// submitters numbers the connections for the store (conn.submitter).
	submitters atomic.Uint64
	// testPanic, set by tests only (export_test.go), is called as an
	// upgrade's token is accepted ("upgrade"), and as a connection handles
	// each request ("handle"), writes what its reader queued in the
	// writer's place ("direct") and writes a writer's batch ("write"): a
	// panic from it is one in that upgrade's or connection's handling.
	testPanic func(where, member string)
}

// New validates d and cfg, fills defaults and returns a Hub.
func New(d Deps, cfg Config) (*Hub, error) {
	switch {
	case d.Store == nil:
		return nil, errors.New("hub: Deps.Store is required")
	case d.Verifier == nil:
		return nil, errors.New("hub: Deps.Verifier is required")
	case d.Live == nil:
		return nil, errors.New("hub: Deps.Live is required")
	}
	cfg.MaxMessage = cmp.Or(cfg.MaxMessage, 4096)
	cfg.Rate = cmp.Or(cfg.Rate, 50)
	cfg.ReplyQueue = cmp.Or(cfg.ReplyQueue, 256)
	cfg.ReplyQueueBytes = cmp.Or(cfg.ReplyQueueBytes, 1<<20)
	cfg.MemberScoreRate = cmp.Or(cfg.MemberScoreRate, cfg.Rate)
	cfg.MaxSubscriptions = cmp.Or(cfg.MaxSubscriptions, 64)
	cfg.MaxConnsPerIP = cmp.Or(cfg.MaxConnsPerIP, DefaultMaxConnsPerIP)
	cfg.MaxConnsPerMember = cmp.Or(cfg.MaxConnsPerMember, DefaultMaxConnsPerMember)
	cfg.TrustedProxies = clientaddr.Normalize(cfg.TrustedProxies)
	cfg.TopInterval = cmp.Or(cfg.TopInterval, 100*time.Millisecond)
	cfg.WriteTimeout = cmp.Or(cfg.WriteTimeout, 5*time.Second)
	cfg.StoreTimeout = cmp.Or(cfg.StoreTimeout, 2*time.Second)
	cfg.PingInterval = cmp.Or(cfg.PingInterval, 25*time.Second)
	switch {
	case cfg.MaxMessage < 64:
		return nil, fmt.Errorf("hub: MaxMessage %d is below 64 bytes", cfg.MaxMessage)
	case cfg.Rate < 0, cfg.ReplyQueue < 0, cfg.ReplyQueueBytes < 0, cfg.MaxSubscriptions < 0:
		return nil, errors.New("hub: Rate, ReplyQueue, ReplyQueueBytes and MaxSubscriptions must not be negative")
	case cfg.TopInterval < 0, cfg.WriteTimeout < 0, cfg.StoreTimeout < 0, cfg.PingInterval < 0:
		return nil, errors.New("hub: durations must not be negative")
	}
	for _, p := range cfg.AllowedOrigins {
		if _, err := path.Match(strings.ToLower(p), ""); err != nil {
			return nil, fmt.Errorf("hub: allowed origin pattern %q: %w", p, err)
		}
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	h := &Hub{
		cfg:     cfg,
		log:     cfg.Logger,
		deps:    d,
		m:       d.Metrics,
		emptied: make(chan struct{}, 1),
	}
	h.sockBufs = sock.NewBuffers()
	h.wheel.h = h
	h.replyBufs.New = func() any { b := make([]byte, 0, 256); return &b }
	h.bufs.New = func() any { return new(bytes.Buffer) }
	h.reg.init()
	h.rates.init(cfg.MemberScoreRate)
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h, nil
}

// Conns is the number of open connections.
func (h *Hub) Conns() int { return int(h.reg.n.Load()) }

// Draining reports whether Shutdown has begun: /readyz then says 503, so
// that load balancers send new connections elsewhere.
func (h *Hub) Draining() bool { return h.closing.Load() }

// ServeHTTP authenticates and upgrades GET /ws (R1), then serves the
// connection on a goroutine of its own until it ends.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ws *websocket.Conn
	defer func() {
		if v := recover(); v != nil {
			h.m.panicked("upgrade")
			h.log.Error("hub: panic during an upgrade", "panic", v, "stack", string(debug.Stack()))
			if ws != nil {
				ws.CloseNow() // no longer an HTTP request
			} else { // 500 (once the library hijacked the socket, this fails harmlessly)
				httpError(w, http.StatusInternalServerError, proto.CodeInternal, reasonInternal)
			}
		}
	}()
	if h.closing.Load() {
		httpError(w, http.StatusServiceUnavailable, proto.CodeUnavailable, "the gateway is shutting down")
		return
	}
	if !h.originAllowed(r) {
		httpError(w, http.StatusForbidden, proto.CodeForbidden, "origin not allowed")
		return
	}
	rv := reservation{h: h}
	defer rv.release() // when refused, or when the connection ends
	if !h.reserveNode(&rv) {
		nodeFull(w, h.cfg.MaxConns)
		return
	}
	if !h.reserveIP(&rv, r) {
		capRefused(w, "from this address", h.cfg.MaxConnsPerIP)
		return
	}
	p, anon, err := h.authenticate(r)
	if err != nil {
		// The carrier, never the token (nor the URL: access_token).
		_, carrier := auth.TokenFromRequest(r)
		h.log.Info("hub: upgrade unauthorized", "carrier", carrier.String(), "err", err)
		code := proto.CodeOf(err)
		switch code {
		case proto.CodeTokenExpired:
			httpError(w, http.StatusUnauthorized, code, "token expired")
		case proto.CodeUnavailable:
			httpError(w, http.StatusServiceUnavailable, code, "token keys unavailable")
		default:
			// The contract's words, not the verifier's (the JWT library's are logged above).
			httpError(w, http.StatusUnauthorized, proto.CodeUnauthorized, proto.PublicMessage(err))
		}
		return
	}
	if !h.reserveMember(&rv, p, anon) {
		capRefused(w, "for this member", h.cfg.MaxConnsPerMember)
		return
	}
	if hook := h.testPanic; hook != nil {
		hook("upgrade", p.Member)
	}
	ws, s, err := sock.Accept(w, r, websocket.AcceptOptions{
		Subprotocols:    []string{proto.Subprotocol}, // never the bearer entry
		OriginPatterns:  h.cfg.AllowedOrigins,
		CompressionMode: websocket.CompressionDisabled, // its memory per connection is large; and sock frames are plain
	}, h.cfg.WriteTimeout, h.sockBufs)
	if err != nil {
		h.log.Debug("hub: upgrade failed", "err", err) // Accept answered the request
		return
	}
	c := newConn(h, ws, s, p, anon)
	// The reservation goes with the connection, given back when it ends.
	c.ipKey, c.mKey, c.nodeSlot = rv.ipKey, rv.mKey, rv.node
	rv = reservation{h: h}
	h.reg.add(c)
	h.m.connOpened(c.role, 1)
	// The connection is served on a goroutine of its own (start), so that
	// this handler returns and the HTTP server lets go of the request and
	// its read and write buffers, which it would otherwise hold for the
	// connection's whole life.
	c.start()
	// Registered after Shutdown copied the registry: drain at once.
	if h.closing.Load() {
		c.hintDrain(0)
		c.drain()
	}
}

// authenticate finds and verifies the token (R1). With PublicRead, a request
// without any token becomes an anonymous spectator.
func (h *Hub) authenticate(r *http.Request) (p auth.Principal, anon bool, err error) {
	tok, _ := auth.TokenFromRequest(r)
	if tok == "" {
		if h.cfg.PublicRead {
			var b [8]byte
			rand.Read(b[:])
			return auth.Principal{Member: "anon-" + hex.EncodeToString(b[:]), Role: auth.Spectator, Boards: nil}, true, nil
		}
		return auth.Principal{}, false, fmt.Errorf("hub: %w", auth.ErrMissingToken)
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.StoreTimeout)
	defer cancel()
	p, err = h.deps.Verifier.Verify(ctx, tok)
	return p, false, err
}

// originAllowed mirrors coder/websocket's origin check so that a refusal is
// a JSON 403 before any token work: no Origin (a bot) or the request's own
// host pass, else a pattern must match the origin host (or scheme://host
// when the pattern has a scheme).
func (h *Hub) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	if strings.EqualFold(r.Host, u.Host) {
		return true
	}
	for _, p := range h.cfg.AllowedOrigins {
		target := u.Host
		if strings.Contains(p, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(target)); ok {
			return true
		}
	}
	return false
}

func httpError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := proto.Marshal(proto.ErrorBody{Error: proto.ErrorDetail{Code: code, Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// Shutdown is R14 with §15's hints: new upgrades get 503; every connection
// is told at once when to reconnect ({"type":"draining",
// "reconnect_after_ms":N}, N spread evenly over the first half of the time
// ctx leaves, or over DefaultDrainWindow without a deadline), goes on being
// served until then, and is then closed with 1001 once it has answered the
// requests it read. So the other nodes see the connections arrive as a
// ramp, not a wall. It returns when every connection is gone, or with ctx's
// error when ctx ends first (remaining connections are then torn down).
// Safe to call more than once.
func (h *Hub) Shutdown(ctx context.Context) error {
	h.closing.Store(true)
	conns := h.reg.all()
	window := DefaultDrainWindow
	if dl, ok := ctx.Deadline(); ok {
		window = max(time.Until(dl)/2, 0)
	}
	plan := drainPlan(len(conns), window)
	start := time.Now()
	for i, c := range conns {
		c.hintDrain(plan[i])
	}
	const step = 10 * time.Millisecond
	tick := time.NewTicker(step)
	defer tick.Stop()
	for i := 0; i < len(conns); {
		for ; i < len(conns) && plan[i] <= time.Since(start); i++ {
			conns[i].drain()
		}
		if i == len(conns) {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			h.tearDown()
			return ctx.Err()
		}
	}
	for h.reg.n.Load() > 0 {
		select {
		case <-h.emptied:
		case <-ctx.Done():
			h.tearDown()
			return ctx.Err()
		}
	}
	h.cancel()
	return nil
}

// DefaultDrainWindow spreads the hints of a Shutdown whose context has no
// deadline.
const DefaultDrainWindow = time.Second

// drainPlan is when each of n connections is told to reconnect, and closed:
// evenly over [0, window), in order.
func drainPlan(n int, window time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = (window * time.Duration(i) / time.Duration(n)).Truncate(time.Millisecond)
	}
	return out
}

// tearDown ends what has not drained by Shutdown's deadline: the store
// calls in flight (h.ctx), and every connection, without a handshake.
func (h *Hub) tearDown() {
	h.cancel()
	for _, c := range h.reg.all() {
		go c.abort() // it may wait for a write in progress
	}
}

// registry holds the open connections and the per-address and per-member
// counts of the caps, sharded so that connects and disconnects on many
// cores do not contend on one lock.
type registry struct {
	shards [32]regShard
	n      atomic.Int64
	next   atomic.Uint64
	seed   maphash.Seed // picks a count key's shard
}

type regShard struct {
	mu    sync.Mutex // guards conns and slots
	conns map[*conn]struct{}
	// slots[kind][key] is the open connections of a key whose hash picks
	// this shard; keys at zero are deleted.
	slots [slotKinds]map[string]int
}

func (r *registry) init() {
	r.seed = maphash.MakeSeed()
	for i := range r.shards {
		r.shards[i].conns = make(map[*conn]struct{})
		for k := range r.shards[i].slots {
			r.shards[i].slots[k] = make(map[string]int)
		}
	}
}

func (r *registry) add(c *conn) {
	c.shard = int32(r.next.Add(1) % uint64(len(r.shards)))
	s := &r.shards[c.shard]
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	r.n.Add(1)
}

// remove returns how many connections remain.
func (r *registry) remove(c *conn) int64 {
	s := &r.shards[c.shard]
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	return r.n.Add(-1)
}

// all copies the connections out; locks are held only to copy.
func (r *registry) all() []*conn {
	out := make([]*conn, 0, r.n.Load())
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		for c := range s.conns {
			out = append(out, c)
		}
		s.mu.Unlock()
	}
	return out
}

// boardConf is what the hub reads of a board's config: a few fields of a
// struct of about 1 KB, copied out once.
type boardConf struct {
	public       bool
	clientWrites bool
	leagued      bool // §12: a member not on the board still has a tier
	top          int
	validated    bool // §16: a hook may answer its events late
	holds        bool // §16: a held member reads itself
}

func confOf(b *rank.Board) boardConf {
	return boardConf{public: b.Public, clientWrites: b.ClientWrites, leagued: b.Leagued(), top: b.Top,
		validated: b.Validated(), holds: b.Holds()}
}

// board returns the config of board id, an id the caller has checked (R15):
// ErrUnknownBoard for a board that does not exist. Every score asks, so the
// store's cache is asked first, with no context to build.
func (h *Hub) board(ctx context.Context, id string) (boardConf, error) {
	if b, ok := h.deps.Store.CachedBoard(id); ok {
		return confOf(b), nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.StoreTimeout)
	defer cancel()
	b, err := h.deps.Store.Board(ctx, id)
	if err != nil {
		return boardConf{}, err
	}
	return confOf(&b), nil
}
