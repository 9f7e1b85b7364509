// Package bus carries change events between gateway nodes over NATS.
//
// Every node publishes the changes it applied, one subject per board. With
// Config.PerBoard a node hears only the boards it Watches (interest: the
// boards it has local watchers for); without it, every board's changes (one
// wildcard, as v1 did). Board, resync and profile events go to every node
// on node-wide subjects whatever it watches: each node needs them for its
// caches and access checks. NATS
// is at-most-once, so the stream is a hint and Redis is the truth: whenever
// the bus knows messages may have been lost — a reconnect, a slow-consumer
// drop on our side, or a change the sender had to drop — it calls OnResync
// and the consumer re-reads the store. Per-board seq gaps are detected by the
// consumer (hub/live), not here.
//
// Subjects (prefix "lb" by default):
//
//	<prefix>.changes.<board token>  one board's changes, seq ascending (codec.go: compact binary, or a JSON array)
//	<prefix>.boards                 JSON BoardEvent
//	<prefix>.resync                 raw board id; empty = every board
//	<prefix>.profiles               JSON ProfileEvent: members whose profiles changed
//
// A board token is the board id with every byte outside [A-Za-z0-9_-]
// percent-encoded (see subject.go): a "." would otherwise split the token.
//
// With an empty Config.URL the bus starts an in-process nats-server with no
// listener at all and connects to it in memory, so a single node needs
// nothing installed.
package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/wsgateway/wsgateway/rank"
)

// BoardEvent says a board's config changed or the board was deleted.
type BoardEvent struct {
	Board   string `json:"board"`
	Deleted bool   `json:"deleted"`
}

// Stats are cumulative counters, for metrics.
type Stats struct {
	Published  int64 // changes handed to NATS
	Messages   int64 // NATS messages that carried those changes (batching makes it smaller)
	Received   int64 // remote changes delivered to OnChanges
	Dropped    int64 // changes and board events not published: queue overflow, publish error, after Close
	Reconnects int64 // NATS reconnects
	Resyncs    int64 // OnResync calls made
	// In counts the NATS messages received, by kind: what interest saves
	// shows in In.Changes.
	In MessagesIn
	// Watched is how many boards' change subjects the bus subscribes to
	// (PerBoard; 0 without it, where one wildcard covers every board).
	Watched int
}

// MessagesIn counts received NATS messages by subject kind.
type MessagesIn struct {
	Changes  int64 // <prefix>.changes.<board>: one board's batch
	Boards   int64 // <prefix>.boards
	Resync   int64 // <prefix>.resync
	Profiles int64 // <prefix>.profiles
}

// ErrDisconnected is returned by Ping while the bus is not connected to NATS.
var ErrDisconnected = errors.New("bus: not connected to NATS")

// Config configures a Bus. The zero value of every field is usable.
type Config struct {
	// URL lists NATS servers, comma-separated. Empty starts an in-process
	// server (no TCP listener) owned by the Bus.
	URL string
	// Node is this node's name, sent as the NATS client name. Our own
	// messages are never echoed back to us (NATS NoEcho). Default: hostname-pid.
	Node string
	// Subject is the subject prefix, dot-separated tokens of
	// [A-Za-z0-9_-]. Default "lb".
	Subject string
	// FlushInterval is the batching window while busy: the first change
	// after an idle spell is published at once, later ones are collected for
	// FlushInterval and sent as one message per board. Zero means 5ms; a
	// negative value disables the window (every wake-up flushes at once).
	FlushInterval time.Duration
	// MaxPending bounds the publish queue (changes). Past it the oldest
	// change is dropped, counted, and a resync of its board is published so
	// every other node re-reads it. Zero means 65536.
	MaxPending int
	// ReconnectMax caps the reconnect backoff (exponential from 50ms, with
	// jitter, forever). Zero means 2s.
	ReconnectMax time.Duration
	// WriteTimeout bounds one socket write to NATS; a server that stops
	// reading (but keeps the connection) is treated as gone after it. Zero
	// means 2s.
	WriteTimeout time.Duration
	// ReconnectBuffer is how many bytes of publishes nats.go keeps while
	// reconnecting. Zero means 8 MiB; negative disables the buffer (publishes
	// while disconnected are dropped, counted, and answered by a resync).
	ReconnectBuffer int
	// Logger receives connection events. Nil means slog.Default().
	Logger *slog.Logger
	// PerBoard makes the bus receive the changes of the boards passed to
	// Watch only (until Unwatch); false receives every board's changes.
	PerBoard bool

	// Handlers, each optional. OnChanges, OnBoard and OnResync for a board
	// named in a resync message are called from the bus's one receiving
	// goroutine, in arrival order (every subscription feeds one channel, so
	// the order across subjects is the server's). OnResync("") after a
	// reconnect or a slow-consumer drop comes from the NATS callback
	// goroutine. Handlers
	// must not block long: while they run, messages queue in nats.go (up to
	// its pending limits, past which they are dropped and OnResync("") follows).

	// OnChanges receives one message's remote changes: one board, seq
	// ascending. The slice is the handler's to keep.
	OnChanges func(batch []rank.Change)
	// OnResync says changes of a board ("" = every board) may have been
	// missed: re-read the store.
	OnResync func(board string)
	// OnBoard receives remote board config changes and deletions.
	OnBoard func(BoardEvent)
	// OnProfiles receives remote profile changes. A lost one is reported
	// as OnResync(""), which must then also drop every cached profile.
	OnProfiles func(ProfileEvent)
}

const (
	defaultSubject       = "lb"
	defaultFlushInterval = 5 * time.Millisecond
	defaultMaxPending    = 65536
	defaultReconnectMax  = 2 * time.Second
	defaultWriteTimeout  = 2 * time.Second
	reconnectMin         = 50 * time.Millisecond
	// maxEventsPending bounds queued board events; they are rare.
	maxEventsPending = 1024
	// maxResyncBoards bounds the set of boards awaiting a resync message;
	// past it one "every board" resync replaces them.
	maxResyncBoards = 1024
	// maxBatch bounds the changes in one message: a rank.Change encodes to at
	// most ~130 bytes (ids ≤ 64, names ≤ 32 characters), so a message stays
	// well under NATS's 1 MB max_payload.
	maxBatch = 1024
	// subPendingMsgs bounds the messages nats.go queues for the receiving
	// goroutine (the channel every subscription feeds); past it nats.go
	// drops and reports a slow consumer, which we turn into a resync. A
	// channel has no byte bound: a message is at most maxBatch changes
	// (~130 KB), most carry a few.
	subPendingMsgs = 65536
	pingInterval   = 5 * time.Second
	maxPingsOut    = 2
	drainTimeout   = 5 * time.Second
	startTimeout   = 10 * time.Second
)

var prefixRe = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// Bus publishes this node's changes and delivers other nodes' changes.
// All methods may be called concurrently.
type Bus struct {
	cfg Config
	log *slog.Logger
	ns  *server.Server // the in-process server; nil with an external URL
	nc  *nats.Conn

	subjChanges string // "<prefix>.changes."
	subjBoards  string
	subjResync  string
	subjProfs   string

	// mu guards the publish queues, the resync set and closed.
	mu        sync.Mutex
	changes   ring[rank.Change]
	events    ring[BoardEvent]
	profiles  ring[string] // member ids whose profiles changed
	resync    map[string]struct{}
	resyncAll bool
	closed    bool

	wake    chan struct{} // capacity 1: "something to publish"
	quit    chan struct{} // closed by Close
	runDone chan struct{} // closed when the publisher has flushed and exited
	ncDone  chan struct{} // closed by the NATS closed handler

	// started is closed when New has set connectedAtStart (whether the
	// first connect succeeded at once); read only after it is closed.
	started          chan struct{}
	connectedAtStart bool

	// msgs is fed by every subscription and read by the receiving
	// goroutine (receive.go), which ends when stopRecv closes.
	msgs     chan *nats.Msg
	stopRecv chan struct{}
	recvDone chan struct{}

	// subMu guards watched: the per-board change subscriptions (PerBoard).
	subMu   sync.Mutex
	watched map[string]*nats.Subscription

	published, messages, received, dropped, reconnects, resyncs atomic.Int64
	inChanges, inBoards, inResync, inProfiles                   atomic.Int64

	// reconnLog throttles the "NATS still unreachable" warnings.
	reconnLog logLimiter

	closeOnce sync.Once
	closeErr  error
}

// New connects to NATS (or starts the in-process server), subscribes and
// starts the publisher. ctx bounds start-up only; the Bus lives until Close.
// With an external URL, New succeeds even while the servers are down: the
// bus logs a warning at once and every few seconds while it keeps trying to
// connect, Ping reports the failure, and OnResync("") is called once
// connected. It does not wait for NATS: the store is the truth, so a node
// without the bus still applies and acknowledges correctly (only other
// nodes' live frames lag until the resync), and in a cluster started all at
// once (compose, Kubernetes) failing would turn NATS's start order into a
// crash loop; readiness keeps the load balancer away meanwhile.
func New(ctx context.Context, cfg Config) (*Bus, error) {
	if cfg.Node == "" {
		host, _ := os.Hostname()
		cfg.Node = host + "-" + strconv.Itoa(os.Getpid())
	}
	if cfg.Subject == "" {
		cfg.Subject = defaultSubject
	}
	if !prefixRe.MatchString(cfg.Subject) {
		return nil, fmt.Errorf("bus: invalid subject prefix %q", cfg.Subject)
	}
	if cfg.FlushInterval == 0 {
		cfg.FlushInterval = defaultFlushInterval
	}
	if cfg.MaxPending < 0 {
		return nil, fmt.Errorf("bus: negative MaxPending %d", cfg.MaxPending)
	}
	if cfg.MaxPending == 0 {
		cfg.MaxPending = defaultMaxPending
	}
	if cfg.ReconnectMax <= 0 {
		cfg.ReconnectMax = defaultReconnectMax
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = defaultWriteTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	b := &Bus{
		cfg:         cfg,
		log:         cfg.Logger.With("component", "bus"), // the process's logger already names the node
		subjChanges: cfg.Subject + ".changes.",
		subjBoards:  cfg.Subject + ".boards",
		subjResync:  cfg.Subject + ".resync",
		subjProfs:   cfg.Subject + ".profiles",
		changes:     newRing[rank.Change](cfg.MaxPending),
		events:      newRing[BoardEvent](maxEventsPending),
		profiles:    newRing[string](maxProfilesPending),
		resync:      make(map[string]struct{}),
		wake:        make(chan struct{}, 1),
		quit:        make(chan struct{}),
		runDone:     make(chan struct{}),
		ncDone:      make(chan struct{}),
		started:     make(chan struct{}),
		msgs:        make(chan *nats.Msg, subPendingMsgs),
		stopRecv:    make(chan struct{}),
		recvDone:    make(chan struct{}),
		watched:     make(map[string]*nats.Subscription),
	}
	defer close(b.started)

	opts := b.natsOptions()
	url := cfg.URL
	if url == "" {
		ns, err := startServer(ctx, cfg.Node)
		if err != nil {
			return nil, err
		}
		b.ns = ns
		opts = append(opts, nats.InProcessServer(ns))
	} else {
		// A gateway may start before NATS does; readiness reports it meanwhile.
		opts = append(opts, nats.RetryOnFailedConnect(true))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		b.stopServer()
		return nil, fmt.Errorf("bus: connect %s: %w", redactURL(url), err)
	}
	b.nc = nc
	b.connectedAtStart = nc.IsConnected()
	if !b.connectedAtStart {
		// Start-up does not wait for NATS (see New's comment), so say
		// loudly that this node runs without it for now.
		b.reconnLog.allow(time.Now(), reconnectLogEvery)
		b.log.Warn("bus: NATS unreachable at start; serving without it and retrying (readiness fails until connected)",
			"servers", redactURL(url))
	}
	subjects := []string{cfg.Subject + ".>"}
	if cfg.PerBoard {
		subjects = []string{b.subjBoards, b.subjResync, b.subjProfs}
	}
	for _, subj := range subjects {
		if _, err := nc.ChanSubscribe(subj, b.msgs); err != nil {
			nc.Close()
			b.stopServer()
			return nil, fmt.Errorf("bus: subscribe %s: %w", subj, err)
		}
	}
	go b.deliver()
	go b.run()
	return b, nil
}

func (b *Bus) natsOptions() []nats.Option {
	opts := []nats.Option{
		nats.Name(b.cfg.Node),
		nats.NoEcho(),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(b.reconnectDelay),
		nats.FlusherTimeout(b.cfg.WriteTimeout),
		nats.PingInterval(pingInterval),
		nats.MaxPingsOutstanding(maxPingsOut),
		nats.DrainTimeout(drainTimeout),
		nats.ConnectHandler(func(nc *nats.Conn) {
			<-b.started
			if b.connectedAtStart {
				return
			}
			// The first connect succeeded only after retries: anything
			// published before then was missed.
			b.reconnLog.reset()
			b.log.Info("bus: connected to NATS", "server", nc.ConnectedUrlRedacted())
			b.callResync("")
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				b.log.Warn("bus: disconnected from NATS", "err", err)
			}
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			if ok, n := b.reconnLog.allow(time.Now(), reconnectLogEvery); ok {
				b.log.Warn("bus: NATS still unreachable, retrying", "attempts", n, "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			b.reconnLog.reset()
			b.reconnects.Add(1)
			b.log.Info("bus: reconnected to NATS", "server", nc.ConnectedUrlRedacted())
			b.callResync("")
			b.poke() // retry resync messages that failed while disconnected
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(b.ncDone) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrSlowConsumer) {
				b.log.Warn("bus: slow consumer, messages dropped; resyncing every board")
				b.callResync("")
				return
			}
			b.log.Warn("bus: NATS error", "err", err)
		}),
	}
	if b.cfg.ReconnectBuffer != 0 {
		opts = append(opts, nats.ReconnectBufSize(b.cfg.ReconnectBuffer))
	}
	return opts
}

// reconnectDelay is called by nats.go after each pass over the server list:
// exponential backoff with full jitter, so a restarted server is not hit by
// every node at once.
func (b *Bus) reconnectDelay(attempts int) time.Duration {
	d := b.cfg.ReconnectMax
	if attempts < 16 {
		d = min(reconnectMin<<attempts, b.cfg.ReconnectMax)
	}
	return d/2 + rand.N(d/2+1)
}

// Ping reports whether the bus is connected and NATS answers a round trip.
// Without a deadline on ctx it waits at most 2s.
func (b *Bus) Ping(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
	}
	if !b.nc.IsConnected() {
		return ErrDisconnected
	}
	if err := b.nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("bus: ping: %w", err)
	}
	return nil
}

// Stats returns the counters so far.
func (b *Bus) Stats() Stats {
	return Stats{
		Published:  b.published.Load(),
		Messages:   b.messages.Load(),
		Received:   b.received.Load(),
		Dropped:    b.dropped.Load(),
		Reconnects: b.reconnects.Load(),
		Resyncs:    b.resyncs.Load(),
		In: MessagesIn{
			Changes:  b.inChanges.Load(),
			Boards:   b.inBoards.Load(),
			Resync:   b.inResync.Load(),
			Profiles: b.inProfiles.Load(),
		},
		Watched: b.watchedCount(),
	}
}

// Close publishes what is queued, drains the NATS connection and stops the
// in-process server. It is safe to call more than once; later calls return
// the first call's result. Publish after Close drops (and counts).
func (b *Bus) Close() error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		close(b.quit)
		<-b.runDone

		err := b.nc.Drain()
		switch {
		case err == nil:
			select {
			case <-b.ncDone:
			case <-time.After(drainTimeout + time.Second):
				b.nc.Close()
			}
		case errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrConnectionClosed):
			// Not connected: nats.go closed it; nothing could be flushed.
		default:
			b.nc.Close()
			b.closeErr = fmt.Errorf("bus: close: %w", err)
		}
		close(b.stopRecv)
		<-b.recvDone
		b.stopServer()
	})
	return b.closeErr
}

func (b *Bus) stopServer() {
	if b.ns != nil {
		b.ns.Shutdown()
		b.ns.WaitForShutdown()
	}
}

// callResync counts and forwards a resync.
func (b *Bus) callResync(board string) {
	b.resyncs.Add(1)
	if b.cfg.OnResync != nil {
		b.cfg.OnResync(board)
	}
}

// startServer runs an embedded nats-server that accepts in-process
// connections only.
func startServer(ctx context.Context, node string) (*server.Server, error) {
	ns, err := server.NewServer(&server.Options{
		ServerName: "wsgateway-" + node,
		DontListen: true,
		NoSigs:     true,
		NoLog:      true,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: in-process server: %w", err)
	}
	ns.Start()
	wait := startTimeout
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	if !ns.ReadyForConnections(wait) {
		ns.Shutdown()
		return nil, fmt.Errorf("bus: in-process server not ready after %s", wait)
	}
	return ns, nil
}

// redactURL hides passwords in a comma-separated server list for errors.
func redactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if at := strings.LastIndex(p, "@"); at >= 0 {
			if s := strings.Index(p, "://"); s >= 0 && s < at {
				parts[i] = p[:s+3] + "***" + p[at:]
			} else {
				parts[i] = "***" + p[at:]
			}
		}
	}
	return strings.Join(parts, ",")
}
