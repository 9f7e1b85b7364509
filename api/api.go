// Package api is the REST side of the gateway (docs/protocol.md §2): a fiber app
// for /api/v1/..., /healthz and /readyz, served by fiber's own fasthttp
// server (Serve, fast.go), which is the gateway's one server: it hands the
// other paths (the WebSocket, the pages, /metrics) to the node. The gates
// run before fiber (gate.go): the token before the body, the body limit,
// body slots and the minimum upload rate.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/clientaddr"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/webhook"
)

// Check is one dependency /readyz asks, e.g. {"store", store.Ping}.
type Check struct {
	Name string
	Ping func(ctx context.Context) error
}

// Verifier turns a bearer token into its holder (auth.Verifier implements it).
// Errors carry a contract code (unauthorized, token_expired) via Code().
type Verifier interface {
	Verify(ctx context.Context, token string) (auth.Principal, error)
}

// BoardListener hears of board changes made through the API.
type BoardListener interface {
	BoardChanged(board string, deleted bool)
}

// WebhookListener hears of webhooks stored through the API.
type WebhookListener interface {
	WebhookChanged()
}

// Deps are what the REST app works with: built by the caller (the node) and
// handed to New. Store and Verifier are required.
type Deps struct {
	// Store is the rank engine every endpoint reads and writes. Required.
	Store rank.Store
	// Verifier checks the `Authorization: Bearer` token of /api/v1 requests. Required.
	Verifier Verifier
	// Ready lists what /readyz asks, each with a 1s deadline. Empty: /readyz
	// answers ready whenever the process runs.
	Ready []Check
	// Registry is served on /metrics; New registers the API's own collectors
	// on it (so New fails if they are already registered). nil: a new registry.
	Registry *prometheus.Registry
	// Boards hears of every board created, changed or deleted through the
	// API (the node refreshes caches and live frames and tells the other
	// nodes). nil: nobody is told.
	Boards BoardListener
	// Viewers counts a board's subscriptions for GET …/boards/{board}
	// (§14). nil: the answer has no viewers.
	Viewers ViewerCounter
	// Profiles stores members' profiles (§7). nil: the Store's.
	Profiles rank.Profiles
	// ProfileChanges hears of every profile written or deleted through the
	// API. nil: nobody is told.
	ProfileChanges ProfileListener
	// WebhookChanges hears of every webhook stored through the API (the
	// node's outbox watcher looks again at once). nil: nobody is told.
	WebhookChanges WebhookListener
	// Decorator gives the entries of top and member reads their profile
	// fields (R20). nil: entries carry the stored names only.
	Decorator rank.Decorator
	// Resolver resolves webhook hosts to refuse private targets (nil:
	// net.DefaultResolver).
	Resolver webhook.Resolver
}

// Config tunes the REST app; every zero value is documented on its field.
type Config struct {
	// DevSecret, when non-nil, enables POST /api/v1/dev/token (--dev only),
	// which mints HS256 tokens with it. nil: that route is a 404.
	DevSecret []byte
	// DevTTL is the lifetime of a dev token whose request names none. Zero: 24h.
	DevTTL time.Duration
	// MaxBody is the largest request body in bytes; a larger one is a 413.
	// Zero: 1 MiB, which holds a scores array of 1000 events.
	MaxBody int64
	// Timeout bounds each store call of a request, a whole scores array
	// included. A store that does not answer in time is a 503 (unavailable
	// for an array's elements). Zero: 5s.
	Timeout time.Duration
	// CORSOrigins lists the origins whose scripts may call /api/v1 (an
	// embedding tournament site reading top): "https://a.example", or "*"
	// for any. Bearer tokens travel in a header, so no credentials (cookies)
	// are allowed. Empty: no CORS headers, browsers keep other origins out.
	CORSOrigins []string
	// MaxImport is the largest import body in bytes (§18); a larger one
	// is a 413. An import streams its body, so this bounds work, not
	// memory. Zero: DefaultMaxImport (256 MiB).
	MaxImport int64
	// MaxBodyReads bounds the request bodies read at once (gate.go);
	// others wait. A quarter is kept for server and admin tokens; one
	// member or address holds at most an eighth (more is a 429). Zero:
	// DefaultMaxBodyReads.
	MaxBodyReads int
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client address of the per-address limits (--trusted-proxies).
	// Empty: the TCP peer is the client.
	TrustedProxies []netip.Prefix
	// Rate is REST requests per second, burst 2×, per player or spectator
	// member and per client address without a valid token (ratelimit.go);
	// server and admin tokens are not limited. Zero: DefaultRate (50, the
	// WebSocket's --rate); negative: no limit.
	Rate int
	// WebhookAllowPrivate lets webhook URLs name loopback, private and
	// link-local targets (--webhook-allow-private).
	WebhookAllowPrivate bool
	// WebhookAllowLoopback lets them name loopback targets only (--dev:
	// webhook.Guard.Loopback).
	WebhookAllowLoopback bool
	// EraseBudget bounds how long one DELETE /api/v1/members/{member}
	// works before it answers 202 with what it did (each store call within
	// it stays short; the next DELETE goes on). Zero: DefaultEraseBudget.
	EraseBudget time.Duration
	// Logger receives one line per request (method, route, status, duration)
	// and internal errors; never a token. nil: discard.
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultDevTTL  = 24 * time.Hour
	DefaultMaxBody = 1 << 20
	DefaultTimeout = 5 * time.Second
	// DefaultEraseBudget is Config.EraseBudget's default, well inside a
	// proxy's usual 60 s.
	DefaultEraseBudget = 20 * time.Second
	// MaxScores is the most events one scores request may carry.
	MaxScores = 1000
	// readyTimeout is the deadline of each /readyz check.
	readyTimeout = time.Second
)

// API is the REST app. Its methods are safe for concurrent use.
type API struct {
	cfg  Config
	deps Deps
	log  *slog.Logger
	m    *metrics
	app  *fiber.App
	// Rate limiters (ratelimit.go); nil when Config.Rate is negative.
	members, anon *keyedLimiter
	slots         *bodySlots             // Config.MaxBodyReads (gate.go)
	proxies       clientaddr.Proxies     // Config.TrustedProxies
	ready         readyCache             // /readyz's last round (health.go)
	modActions    *prometheus.CounterVec // moderation actions by action
	bodies        sync.Pool              // *[]byte request bodies (fast.go)
	deadlines     *deadlines             // the store calls' contexts
	submitters    atomic.Uint64          // numbers the scores requests for the store (applyAll)
	public        *renderCache           // the public /metrics (Metrics)
}

// New validates cfg, fills defaults, registers the API's collectors on the
// registry and builds the routes.
func New(d Deps, cfg Config) (*API, error) {
	if d.Store == nil {
		return nil, errors.New("api: Deps.Store is required")
	}
	if d.Verifier == nil {
		return nil, errors.New("api: Deps.Verifier is required")
	}
	if d.Profiles == nil {
		d.Profiles = d.Store
	}
	for _, o := range cfg.CORSOrigins {
		if err := checkOrigin(o); err != nil {
			return nil, err
		}
	}
	for i, c := range d.Ready {
		if c.Name == "" || c.Ping == nil {
			return nil, fmt.Errorf("api: Deps.Ready[%d] needs a Name and a Ping", i)
		}
	}
	if cfg.DevTTL < 0 || cfg.MaxBody < 0 || cfg.Timeout < 0 || cfg.MaxImport < 0 {
		return nil, errors.New("api: DevTTL, MaxBody, MaxImport and Timeout must not be negative")
	}
	if cfg.DevSecret != nil && len(cfg.DevSecret) == 0 {
		return nil, errors.New("api: Config.DevSecret is empty; leave it nil to disable dev tokens")
	}
	if cfg.DevTTL == 0 {
		cfg.DevTTL = DefaultDevTTL
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxImport == 0 {
		cfg.MaxImport = DefaultMaxImport
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.EraseBudget <= 0 {
		cfg.EraseBudget = DefaultEraseBudget
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(d.Registry)
	if err != nil {
		return nil, err
	}
	a := &API{cfg: cfg, deps: d, log: cfg.Logger, m: m, deadlines: newDeadlines(cfg.Timeout)}
	if a.modActions, err = newModerationMetric(d.Registry); err != nil {
		return nil, err
	}
	if cfg.Rate == 0 {
		cfg.Rate, a.cfg.Rate = DefaultRate, DefaultRate
	}
	if cfg.MaxBodyReads <= 0 {
		cfg.MaxBodyReads, a.cfg.MaxBodyReads = DefaultMaxBodyReads, DefaultMaxBodyReads
	}
	a.slots = newBodySlots(cfg.MaxBodyReads)
	if err := d.Registry.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "wsgateway_api_body_reads",
		Help: "Request bodies being read now; a quarter of the slots is kept for server and admin tokens.",
	}, a.slots.inUse)); err != nil {
		return nil, fmt.Errorf("api: register metrics: %w", err)
	}
	a.proxies = clientaddr.Normalize(cfg.TrustedProxies)
	a.public = &renderCache{g: foldBoards{d.Registry}, every: publicRender, log: a.log.Warn}
	if cfg.Rate > 0 {
		a.members, a.anon = newKeyedLimiter(cfg.Rate), newKeyedLimiter(cfg.Rate)
	}
	a.app = fiber.New(fiber.Config{
		// Params, queries and headers outlive the request in the store (board
		// ids, member ids); fasthttp reuses its buffers after it.
		Immutable:             true,
		CaseSensitive:         true,
		DisableStartupMessage: true,
		ErrorHandler:          a.errorHandler,
		// Messages say <, > and & as they are (proto.Marshal).
		JSONEncoder: proto.Marshal,
		// Serve reads bodies itself (readBody, after the token); this one
		// documents the intent.
		BodyLimit: int(cfg.MaxBody),
	})
	a.routes()
	return a, nil
}

// routeKey holds the matched route's pattern, the label of logs and metrics.
const routeKey = "route"

func (a *API) routes() {
	a.app.Use(a.observe)
	// A panic in a handler becomes an internal error, answered and logged
	// like any other, instead of a dropped connection (crash.go).
	a.app.Use(a.recoverHandlers())
	if len(a.cfg.CORSOrigins) > 0 {
		a.app.Use("/api/v1", cors.New(cors.Config{
			AllowOrigins:  strings.Join(a.cfg.CORSOrigins, ","),
			AllowMethods:  "GET,HEAD,POST,PUT,PATCH,DELETE",
			AllowHeaders:  "Authorization,Content-Type",
			ExposeHeaders: "Retry-After",
			MaxAge:        600,
		}))
	}
	a.app.Use(a.limitAnon)
	add := func(method, path string, hs ...fiber.Handler) {
		rt := a.m.route(method + " " + path)
		mark := func(c *fiber.Ctx) error {
			c.Locals(routeKey, rt)
			return c.Next()
		}
		handlers := append([]fiber.Handler{mark}, hs...)
		a.app.Add(method, path, handlers...)
		if method == fiber.MethodGet {
			a.app.Add(fiber.MethodHead, path, handlers...) // load balancers probe with HEAD
		}
	}
	add(fiber.MethodGet, "/healthz", a.healthz)
	add(fiber.MethodGet, "/readyz", a.readyz)
	if a.cfg.DevSecret != nil {
		add(fiber.MethodPost, "/api/v1/dev/token", a.devToken)
	}
	const b = "/api/v1/boards"
	add(fiber.MethodGet, b, a.authenticate, a.listBoards)
	add(fiber.MethodPut, b+"/:board", a.authenticate, a.putBoard)
	add(fiber.MethodPatch, b+"/:board", a.authenticate, a.patchBoard)
	add(fiber.MethodGet, b+"/:board", a.authenticate, a.getBoard)
	add(fiber.MethodDelete, b+"/:board", a.authenticate, a.deleteBoard)
	add(fiber.MethodGet, b+"/:board/top", a.authenticate, a.top)
	add(fiber.MethodGet, b+"/:board/cohorts/:cohort/top", a.authenticate, a.top)
	add(fiber.MethodGet, b+"/:board/regions", a.authenticate, a.regions)
	add(fiber.MethodGet, b+"/:board/regions/:region/top", a.authenticate, a.top)
	add(fiber.MethodGet, b+"/:board/members", a.authenticate, a.memberList)
	add(fiber.MethodGet, b+"/:board/members/:member", a.authenticate, a.member)
	add(fiber.MethodGet, b+"/:board/members/:member/history", a.authenticate, a.history)
	add(fiber.MethodPost, b+"/:board/scores", a.authenticate, a.scores)
	add(fiber.MethodGet, b+"/:board/export", a.authenticate, a.export)
	add(fiber.MethodPost, b+"/:board/import", a.authenticate, a.importScores)
	a.profileRoutes(add)
	a.moderationRoutes(add)
	a.webhookRoutes(add)
	a.eraseRoutes(add)
	a.app.Use(a.notFound)
}

// Metrics serves /metrics: per board to a client on this machine or at a
// trusted proxy's address (--trusted-proxies), with the board label summed
// under board="all" for everyone else (foldBoards), so that nobody else
// reads board ids, private ones included. A private address is no proof:
// behind an Ingress every pod and node has one. The client address is the
// one --trusted-proxies defines; a Prometheus elsewhere scrapes
// --metrics-addr. Everyone else's answer is rendered at most once a second
// (renderCache).
func (a *API) Metrics() http.Handler {
	full := promhttp.HandlerFor(a.deps.Registry, promhttp.HandlerOpts{})
	folded := a.public
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client, _ := a.proxies.Client(r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
		if client.IsLoopback() || a.proxies.Trusts(client) {
			full.ServeHTTP(w, r)
			return
		}
		folded.ServeHTTP(w, r)
	})
}

// account counts and logs a gate's answer.
func (a *API) account(method string, start time.Time, v verdict) {
	d := time.Since(start)
	a.m.errors.WithLabelValues(v.code).Inc()
	a.m.done(v.route, v.status, d)
	a.log.Info("api request", "method", method, "route", v.route, "status", v.status, "duration", d)
}

// checkOrigin accepts "*" or a bare origin: scheme, host and port, nothing
// else (a path or a comma would widen or break the list).
func checkOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.ContainsAny(o, ", ") {
		return fmt.Errorf("api: CORS origin %q is not an origin like https://a.example", o)
	}
	return nil
}

func tooLargeMessage(max int64) string {
	return fmt.Sprintf("request body larger than %d bytes", max)
}

func knownMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// observe logs and counts every request that reaches fiber. It runs the
// error handler itself so that the status it records is the one sent.
func (a *API) observe(c *fiber.Ctx) error {
	start := time.Now()
	if err := c.Next(); err != nil {
		if herr := a.errorHandler(c, err); herr != nil {
			c.Status(http.StatusInternalServerError)
		}
	}
	route := "unmatched" // a 404 or 405: raw paths would be unbounded labels
	rt, _ := c.Locals(routeKey).(*routeMetrics)
	if rt != nil {
		route = rt.label
	}
	status := c.Response().StatusCode()
	d := time.Since(start)
	if rt != nil && status == http.StatusOK {
		rt.ok.Inc()
		rt.latency.Observe(d.Seconds())
	} else {
		a.m.done(route, status, d)
	}
	if a.log.Enabled(context.Background(), slog.LevelInfo) { // the arguments cost allocations even when dropped
		a.log.Info("api request", "method", c.Method(), "route", route, "status", status, "duration", d)
	}
	return nil
}

// ctx is the deadline of one store call: a timeout shared by the calls
// that start within a few milliseconds (deadline.go), no timer per call.
func (a *API) ctx() context.Context { return a.deadlines.get() }
