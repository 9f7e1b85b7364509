// Package node builds one gateway node from one Config, serves it on one
// port and carries its event flow. Everything that happens on a node
// reaches the others, and the node's own frames, through here:
//
//	score (hub or api) → rank.Store.Apply ─┬→ done: ack / REST answer
//	                                        └→ Sink: Node.applied ─┬→ live frames (this node), derived boards (derived.go)
//	                                                               └→ bus → the live frames of every other node watching the board
//	board PUT/DELETE (api) → Node.BoardChanged → store cache, hub, live, webhook watcher, bus → the same on every other node
//	profile PUT/DELETE (api) → Node.ProfileChanged → profile cache, live, bus → other nodes' profile cache, live
//
// Entries of every frame and read get their profile fields from the node's
// profile cache (profiles.go), the one rank.Decorator live, hub, api and
// the webhook watcher use.
//
// The store reports every applied change itself, in batches (one per Redis
// pipeline), whatever asked for it, so no caller announces anything and no
// apply path can forget to.
//
// Serve runs the port's one server (api.Serve: the API's routes, the
// WebSocket upgrade, the pages, /metrics), the live frames and the webhooks
// (Run), and drains the WebSockets when its context ends (R14); the
// listener and the process's signals stay with the caller (cmd/wsgateway,
// tests). Close releases the bus and the store.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/wsgateway/wsgateway/api"
	"github.com/wsgateway/wsgateway/bus"
	"github.com/wsgateway/wsgateway/hub"
	"github.com/wsgateway/wsgateway/hub/live"
	"github.com/wsgateway/wsgateway/integrity"
	"github.com/wsgateway/wsgateway/internal/clientaddr"
	"github.com/wsgateway/wsgateway/internal/hijack"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
	"github.com/wsgateway/wsgateway/rank/redisstore"
	"github.com/wsgateway/wsgateway/web"
	"github.com/wsgateway/wsgateway/webhook"
)

// The parts' tuning, as the node's Config holds it: whoever configures a
// node (cmd/wsgateway) needs no import of the parts.
type (
	HubConfig       = hub.Config
	APIConfig       = api.Config
	IntegrityConfig = integrity.Config
	WebConfig       = web.Config
	ViewersConfig   = bus.ViewersConfig
)

// Defaults a caller may want to show (flags' help).
const (
	DefaultMaxConnsPerIP     = hub.DefaultMaxConnsPerIP
	DefaultMaxConnsPerMember = hub.DefaultMaxConnsPerMember
	DefaultRESTRate          = api.DefaultRate
	DefaultListBudget        = live.DefaultListBudget
	DefaultMaxListIDs        = live.DefaultMaxListIDs
	DefaultDevBoards         = rank.DefaultAutoCreateCap
	DefaultRedisLanes        = redisstore.DefaultLanes
	DefaultRedisShardLinger  = redisstore.DefaultShardLinger
	DefaultReadHeaderTimeout = api.DefaultReadHeaderTimeout
	DefaultDrainTimeout      = 10 * time.Second
)

// RedisClient is the client of a Redis URL (--redis-url: one node, a
// cluster or a sentinel's master, redisstore.NewClient) for Config.Redis.
func RedisClient(url string) (redis.UniversalClient, error) { return redisstore.NewClient(url) }

// ParseTrustedProxies reads a comma-separated list of CIDRs or bare
// addresses (--trusted-proxies) for Config.TrustedProxies.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) { return clientaddr.Parse(s) }

// Config is everything a node is built from. Zero values take the
// documented defaults of each part.
type Config struct {
	// ID is this node's name in frames, logs and metrics. Required.
	ID string
	// Dev is the embedded default's behaviour: boards are created on first
	// use (rank.AutoCreate); with DevSecret the API mints dev tokens and
	// the pages fetch them.
	Dev bool
	// DevBoards caps the boards Dev creates on first use; zero =
	// DefaultDevBoards.
	DevBoards int

	// Redis selects the Redis engine (RedisClient builds one from a
	// --redis-url); the node owns it from New on and closes it. nil = the
	// memory engine.
	Redis redis.UniversalClient
	// StoreTimeout bounds each Redis operation; zero = the engine's default.
	StoreTimeout time.Duration
	// RedisLanes is the Redis engine's apply lanes (redisstore.Config.Lanes);
	// zero = DefaultRedisLanes.
	RedisLanes int
	// RedisShardLinger is how long a Redis lane round holding a sharded
	// board's events waits for more (redisstore.Config.ShardLinger); zero
	// = DefaultRedisShardLinger, negative = never.
	RedisShardLinger time.Duration
	// RedisReplicas and RedisReplicaTimeout are the Redis engine's durable
	// acknowledgements (redisstore.Config.Replicas, .ReplicaTimeout).
	RedisReplicas       int
	RedisReplicaTimeout time.Duration
	// Now overrides the store clock (tests of periods and lifecycle only);
	// nil = the store's own (Redis TIME, or time.Now in memory).
	Now func() time.Time
	// WrapStore, when set, wraps the engine before anything uses it (tests
	// inject faults with it). The wrapper must forward Apply's outcomes.
	WrapStore func(rank.Store) rank.Store
	// Boards are applied (PutBoard) at start, before anything is served.
	Boards []rank.Board
	// ProfileCache is how many members' profiles the node caches for
	// decorating entries (R20); zero = DefaultProfileCache.
	ProfileCache int
	// WrapProfiles, when set, wraps the engine's profile store before the
	// API and the cache use it (tests count reads with it).
	WrapProfiles func(rank.Profiles) rank.Profiles

	// NATSURL lists NATS servers; empty = an in-process server.
	NATSURL string
	// Interest names the boards whose changes a local subscription to
	// board needs from the other nodes: the node subscribes to those
	// boards' NATS change subjects while any local connection watches
	// board (interest.go). nil = the board and, when it is derived, its
	// sources (derived.go); SelfInterest is the board alone. Called from the interest goroutine with
	// no lock of the node held; it may read the store, and should be quick.
	Interest func(board string) []string
	// InterestLinger keeps a board's change subscription this long after
	// its last local watcher left; zero = DefaultInterestLinger, negative
	// = unsubscribe at once.
	InterestLinger time.Duration

	// Verifier checks tokens (an *auth.Verifier). Required.
	Verifier hub.Verifier
	// DevSecret enables POST /api/v1/dev/token, minting with this key
	// (--dev only); nil disables it.
	DevSecret []byte

	// Interval is the live frames' interval (--top-interval): the hub's
	// throttle and the engine's read gap. Zero = 100ms.
	Interval time.Duration
	// LiveRefresh is the live frames' backstop against lost change events
	// (live.Config.Refresh): zero = 2s; negative = none, for tests that
	// must tell a frame the change stream brought from the backstop's.
	LiveRefresh time.Duration
	// ListBudget and MaxListIDs bound what members subscriptions cost the
	// store (live.Config): zero = live's defaults; negative = no bound.
	ListBudget, MaxListIDs int
	// Viewers tunes the viewer counts over every node (bus.Viewers).
	Viewers ViewersConfig
	// Webhooks tunes the outbox watcher and delivery (webhooks.go).
	Webhooks WebhooksConfig
	// Integrity tunes the boards' validation hooks (§16). Its
	// AllowPrivate, StoreTimeout, Registry and Logger are the node's
	// (Webhooks.AllowPrivate, StoreTimeout, Registry, Logger): New
	// refuses them set here.
	Integrity IntegrityConfig
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client address of every per-address limit, the WebSocket's and
	// REST's alike (internal/clientaddr); nil = the TCP peer.
	TrustedProxies []netip.Prefix
	// Hub tunes the WebSocket endpoint. Its Node, TopInterval, Logger and
	// TrustedProxies are this Config's ID, Interval, Logger and
	// TrustedProxies: New refuses them set here.
	Hub HubConfig
	// API tunes the REST app. Its DevSecret, Logger and TrustedProxies are
	// this Config's: New refuses them set here.
	API APIConfig
	// Web tunes the pages. Its Dev is DevSecret != nil: New refuses it set
	// here.
	Web WebConfig
	// ReadHeaderTimeout bounds a request's headers on Serve's server, the
	// WebSocket's token included (slowloris, and the authentication
	// deadline). Zero = DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// DrainTimeout bounds Serve's drain after its context ends (R14). Zero
	// = DefaultDrainTimeout.
	DrainTimeout time.Duration

	// Registry receives every part's collectors; nil = a new one. It is
	// served on /metrics unless MetricsElsewhere.
	Registry *prometheus.Registry
	// MetricsElsewhere leaves /metrics out of Serve (the caller serves
	// Registry on a private address).
	MetricsElsewhere bool
	// Logger receives every part's logs; nil = discard.
	Logger *slog.Logger
}

// Node is one running gateway node. Its methods are safe for concurrent use.
type Node struct {
	cfg     Config
	log     *slog.Logger
	store   rank.Store
	engine  rank.Store       // the engine itself, under WrapStore, the hooks, AutoCreate and metered
	integ   *integrity.Store // runs the boards' validation hooks (§16)
	m       *metrics
	live    *live.Engine
	profs   *profileCache
	watch   *interest // the NATS change subscriptions local watchers need
	bus     *bus.Bus
	hub     *hub.Hub
	api     *api.API
	other   fasthttp.RequestHandler // all but the API's routes (api.ServeConfig.Other)
	derived derivedIndex            // derived.go
	viewers *bus.Viewers
	outbox  *webhook.Watcher // webhooks.go
}

// New builds a node: the store (told to report applied changes to the
// node), the live frame engine, the bus, the hub, the REST API and the
// pages. Nothing is served and no frame is computed until Serve. On error
// everything built is released.
func New(ctx context.Context, cfg Config) (n *Node, err error) {
	if cfg.ID == "" || cfg.Verifier == nil {
		return nil, errors.New("node: Config.ID and Config.Verifier are required")
	}
	if cfg.Hub.Node != "" || cfg.Hub.TopInterval != 0 || cfg.Hub.Logger != nil || cfg.Hub.TrustedProxies != nil ||
		cfg.API.DevSecret != nil || cfg.API.Logger != nil || cfg.API.TrustedProxies != nil || cfg.Web.Dev ||
		cfg.Integrity.AllowPrivate || cfg.Integrity.StoreTimeout != 0 || cfg.Integrity.Registry != nil || cfg.Integrity.Logger != nil {
		return nil, errors.New("node: Config.Hub.Node, TopInterval, Logger, TrustedProxies, Config.API.DevSecret, Logger, TrustedProxies, Config.Web.Dev and Config.Integrity.AllowPrivate, StoreTimeout, Registry, Logger are the node's own fields (ID, Interval, Logger, TrustedProxies, DevSecret, Webhooks.AllowPrivate, StoreTimeout, Registry): set those")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = DefaultDrainTimeout
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	n = &Node{cfg: cfg, log: cfg.Logger}
	// Close through a copy: `return nil, err` sets n to nil before this runs.
	built := n
	defer func() {
		if err != nil {
			built.Close()
		}
	}()

	if n.m, err = newMetrics(cfg.Registry); err != nil {
		return nil, fmt.Errorf("node: metrics: %w", err)
	}
	// The store's sink is n.applied, which uses live and bus: both exist
	// before New returns, and nothing can apply an event before that (no
	// route is served yet; Boards only puts configs).
	if err := n.openStore(ctx); err != nil {
		return nil, err
	}
	for _, b := range cfg.Boards {
		if b.Validated() && !cfg.Webhooks.AllowPrivate {
			if err := webhook.CheckURL(ctx, net.DefaultResolver, b.Hook.URL); err != nil {
				return nil, fmt.Errorf("node: board %s: validate: %w", b.ID, err)
			}
		}
		if _, err := n.store.PutBoard(ctx, b); err != nil {
			return nil, fmt.Errorf("node: board %s: %w", b.ID, err)
		}
	}
	if err := n.loadDerived(ctx); err != nil {
		return nil, fmt.Errorf("node: derived boards: %w", err)
	}

	var profiles rank.Profiles = n.store
	if cfg.WrapProfiles != nil {
		profiles = cfg.WrapProfiles(profiles)
	}
	if cfg.ProfileCache < 0 {
		return nil, errors.New("node: Config.ProfileCache must not be negative")
	}
	if cfg.ProfileCache == 0 {
		cfg.ProfileCache = DefaultProfileCache
	}
	fetchTimeout := cfg.StoreTimeout
	if fetchTimeout == 0 {
		fetchTimeout = 2 * time.Second
	}
	n.profs = newProfileCache(profiles, cfg.ProfileCache, fetchTimeout,
		func(members []string) { n.live.ProfilesChanged(members) }, cfg.Logger)
	n.m.profs = n.profs
	// Every apply path goes through here: events on region boards get
	// their member's country (regions.go), and the figures are taken.
	n.store = metered{regioned{n.store, n.profs}, n.m}
	n.outbox = webhook.NewWatcher(n.store, webhook.WatchConfig{Every: cfg.Webhooks.Watch, Decorator: n.profs, Logger: cfg.Logger})

	viewers, err := bus.NewViewers(cfg.Viewers) // n.viewers once started: Close stops it
	if err != nil {
		return nil, err
	}
	if err := cfg.Registry.Register(newViewersCollector(viewers)); err != nil {
		return nil, fmt.Errorf("node: viewers metric: %w", err)
	}
	interest := cfg.Interest
	if interest == nil {
		interest = n.interest // a board and, when derived, its sources (derived.go)
	}
	n.watch = newInterest(interest, cfg.InterestLinger, cfg.Logger)
	n.live, err = live.New(live.Config{Store: n.store, Interval: cfg.Interval, Logger: cfg.Logger, Decorator: n.profs,
		OnWatch: n.watch.watch, Refresh: cfg.LiveRefresh, OtherViewers: viewers.Others,
		ListBudget: cfg.ListBudget, MaxListIDs: cfg.MaxListIDs})
	if err != nil {
		return nil, err
	}
	n.m.live = n.live
	n.bus, err = bus.New(ctx, bus.Config{
		URL:        cfg.NATSURL,
		Node:       cfg.ID,
		Logger:     cfg.Logger,
		PerBoard:   true,
		OnChanges:  n.remoteChanges, // live, and derived boards (derived.go)
		OnResync:   n.resync,
		OnBoard:    n.remoteBoard,
		OnProfiles: n.remoteProfiles,
	})
	if err != nil {
		return nil, err
	}
	n.m.bus = n.bus
	n.watch.start(n.bus, n.live.Missed)
	if err := viewers.Start(n.bus, n.live.Viewers); err != nil {
		return nil, fmt.Errorf("node: viewers: %w", err)
	}
	n.viewers = viewers

	hcfg := cfg.Hub
	hcfg.Node, hcfg.TopInterval, hcfg.Logger, hcfg.TrustedProxies = cfg.ID, cfg.Interval, cfg.Logger, cfg.TrustedProxies
	n.hub, err = hub.New(hub.Deps{
		Store: n.store, Verifier: cfg.Verifier, Live: n.live, Decorator: n.profs,
		Metrics: hub.NewMetrics(cfg.Registry),
	}, hcfg)
	if err != nil {
		return nil, err
	}

	ready := []api.Check{{Name: "store", Ping: n.store.Ping}, {Name: "bus", Ping: n.bus.Ping}, {Name: "drain", Ping: n.notDraining}}
	acfg := cfg.API
	acfg.DevSecret, acfg.Logger, acfg.TrustedProxies = cfg.DevSecret, cfg.Logger, cfg.TrustedProxies
	acfg.WebhookAllowPrivate, acfg.WebhookAllowLoopback = cfg.Webhooks.AllowPrivate, cfg.Webhooks.AllowLoopback
	n.api, err = api.New(api.Deps{
		Store: n.store, Verifier: cfg.Verifier, Ready: ready, Registry: cfg.Registry,
		// Moderation and PATCH change a board's reads: the API tells BoardChanged (R21).
		Boards: n, Viewers: n.viewers, Profiles: profiles, ProfileChanges: n, WebhookChanges: n.outbox, Decorator: n.profs,
	}, acfg)
	if err != nil {
		return nil, err
	}
	if err := cfg.Registry.Register(newOpsCollector(n.bus.Stats, ready, n.api.Failing)); err != nil {
		return nil, fmt.Errorf("node: metrics: %w", err)
	}

	wcfg := cfg.Web
	wcfg.Dev = cfg.DevSecret != nil
	pages, err := web.New(wcfg)
	if err != nil {
		return nil, err
	}
	// The API answers its own routes (api.Owns) on the port's one server;
	// the rest is net/http's: the upgrade through hijack (it takes the
	// connection), the pages and /metrics through fasthttp's adaptor.
	mux := http.NewServeMux()
	mux.Handle("GET /ws", n.hub)
	if !cfg.MetricsElsewhere {
		mux.Handle("GET /metrics", n.api.Metrics())
	}
	mux.Handle("/", pages.Handler())
	upgrade, rest := hijack.Handler(mux, cfg.Logger), fasthttpadaptor.NewFastHTTPHandler(mux)
	n.other = func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/ws" {
			upgrade(ctx)
			return
		}
		rest(ctx)
	}
	return n, nil
}

// openStore builds the engine with n.applied as its sink, and the wrappers.
func (n *Node) openStore(ctx context.Context) error {
	cfg := n.cfg
	hooks := rank.Hooks{Sink: n.applied, Complete: n.completing}
	if cfg.Redis != nil {
		rs, err := redisstore.New(ctx, cfg.Redis, hooks, redisstore.Config{
			Timeout: cfg.StoreTimeout, Lanes: cfg.RedisLanes, ShardLinger: cfg.RedisShardLinger, Now: cfg.Now, Logger: cfg.Logger,
			Replicas: cfg.RedisReplicas, ReplicaTimeout: cfg.RedisReplicaTimeout,
		})
		if err != nil {
			cfg.Redis.Close()
			return err
		}
		n.engine = rs
		n.m.lane = rs.LaneStats
	} else {
		// The memory engine completes each event inline, on the goroutine
		// that applied it (a batch of one): a batch end there would write
		// each ack with a write(2) of its own, where the connection's writer,
		// woken, writes all the acks queued meanwhile in one
		// (docs/performance.md, "The completer writes the acks").
		ms, err := memstore.New(rank.Hooks{Sink: n.applied}, memstore.Config{Now: cfg.Now, Logger: cfg.Logger})
		if err != nil {
			return err
		}
		n.engine = ms
	}
	n.store = n.engine
	if cfg.WrapStore != nil {
		n.store = cfg.WrapStore(n.store)
	}
	icfg := cfg.Integrity
	icfg.AllowPrivate, icfg.StoreTimeout, icfg.Registry, icfg.Logger = cfg.Webhooks.AllowPrivate, cfg.StoreTimeout, cfg.Registry, cfg.Logger
	integ, err := integrity.Wrap(n.store, icfg)
	if err != nil {
		return err
	}
	n.integ, n.store = integ, integ
	if cfg.Dev {
		n.store = rank.AutoCreate(n.store, cfg.DevBoards)
	}
	return nil
}

// applied is the store's sink: every change applied on this node, whoever
// submitted it, goes to this node's frames and to every other node.
func (n *Node) applied(batch []rank.Change) {
	n.live.Changed(batch)
	n.followSources(batch) // derived boards (derived.go)
	n.bus.PublishChanges(batch)
	n.integ.Changed(batch) // member.held (§16)
}

// completing runs a store batch's Done callbacks inside the hub's
// Completing, so the acks they queue are written once per connection per
// batch, by the completer (hub/acks.go). Only the hub and the API apply,
// and both exist before New returns, so n.hub is set by the first batch.
func (n *Node) completing(run func()) { n.hub.Completing(run) }

// BoardChanged is told of a board created, changed or deleted on this node
// (api.BoardListener): the store's cached config is dropped, subscriptions
// the new config closes end (hub), live frames re-read the board, and the
// other nodes are told.
func (n *Node) BoardChanged(board string, deleted bool) {
	e := bus.BoardEvent{Board: board, Deleted: deleted}
	n.remoteBoard(e)
	n.bus.PublishBoard(e)
}

// remoteBoard is another node's BoardChanged, heard over the bus.
func (n *Node) remoteBoard(e bus.BoardEvent) {
	n.store.Forget(e.Board)
	n.boardGone(e.Board, e.Deleted)
	n.hub.BoardChanged(e.Board)
	n.live.Resync(e.Board)
	n.watch.refresh(e.Board)
	n.outbox.BoardChanged(e.Board)
}

// boardGone ends every subscription to a deleted board on this node: its
// subscribers get a board frame with state "deleted" and nothing after it
// (R19).
func (n *Node) boardGone(board string, deleted bool) {
	n.derivedBoard(board, deleted)
	if deleted {
		n.live.BoardDeleted(board)
		n.hub.BoardDeleted(board)
	}
}

// ProfileChanged is told of a profile written or deleted on this node
// (api.ProfileListener): the cached copy is dropped, frames that show the
// member are re-read (R20: a change under R7/R8), and the other nodes are
// told.
func (n *Node) ProfileChanged(ms ...string) {
	n.remoteProfiles(bus.ProfileEvent{Members: ms})
	n.bus.PublishProfiles(ms)
}

// remoteProfiles is another node's ProfileChanged, heard over the bus.
func (n *Node) remoteProfiles(e bus.ProfileEvent) {
	n.profs.Invalidate(e.Members)
	n.live.ProfilesChanged(e.Members)
}

// resync is the bus's OnResync: changes of a board, or of everything, may
// have been missed. A board's are its change events, each with a seq;
// everything includes profile and board events, so the profile cache
// starts over too.
func (n *Node) resync(board string) {
	if board != "" {
		n.live.Missed(board)
		return
	}
	n.profs.Clear()
	n.outbox.BoardChanged("") // board events may be lost too
	n.live.Resync("")
}

// Store is the node's store as the hub and the API use it (for ledger
// checks and tools).
func (n *Node) Store() rank.Store { return n.store }

// Hub is the node's WebSocket endpoint.
func (n *Node) Hub() *hub.Hub { return n.hub }

// Bus is the node's NATS link (its Stats and Ping feed metrics).
func (n *Node) Bus() *bus.Bus { return n.bus }

// Run computes live frames, appends webhook events and delivers them
// (webhooks.go) until ctx ends; it returns ctx's error.
func (n *Node) Run(ctx context.Context) error {
	wait, err := n.runWebhooks(ctx)
	if err != nil {
		return err
	}
	defer wait() // they end with ctx, as live does
	held := make(chan struct{})
	go func() { defer close(held); n.integ.Run(ctx) }()
	defer func() { <-held }()
	return n.live.Run(ctx)
}

// errDraining is the drain's readiness failure.
var errDraining = errors.New("node: draining")

// notDraining is /readyz's drain check: a node that drains takes no new
// connections (§15), so a load balancer should send them elsewhere.
func (n *Node) notDraining(context.Context) error {
	if n.hub.Draining() {
		return errDraining
	}
	return nil
}

// Shutdown drains the WebSocket connections (R14): see hub.Hub.Shutdown.
// The HTTP server is the caller's to shut down.
func (n *Node) Shutdown(ctx context.Context) error { return n.hub.Shutdown(ctx) }

// Close releases the bus and the store; call it after Shutdown and after
// Run has returned. Safe to call more than once.
func (n *Node) Close() error {
	var errs []error
	if n.watch != nil && n.bus != nil {
		n.watch.stop()
	}
	if n.viewers != nil {
		n.viewers.Stop()
	}
	if n.bus != nil {
		errs = append(errs, n.bus.Close())
	}
	if n.engine != nil {
		errs = append(errs, n.engine.Close())
	}
	return errors.Join(errs...)
}
