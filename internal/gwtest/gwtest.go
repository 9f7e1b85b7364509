// Package gwtest runs a gateway inside a test process: the node package's
// gateway, wired by node.New as cmd/wsgateway wires it, served by
// node.Serve on a loopback port. It is the one test entry point of the packages that talk to a
// gateway over real sockets (client, loadgen, api, node, hub): the memory
// engine and an in-process NATS by default, or whatever Options.Config
// selects (a Redis engine, a nats-server, a fault-injecting store wrapper,
// hub limits). Tests of cmd/wsgateway and e2e run the binary instead.
package gwtest

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub"
	"github.com/wsgateway/wsgateway/node"
	"github.com/wsgateway/wsgateway/rank"
)

// Options configure a test gateway.
type Options struct {
	Secret []byte // HS256 key every token is signed with
	// Interval is the live frames' interval (TopInterval and the engine's
	// read interval); default 20ms, so tests see frames quickly.
	Interval time.Duration
	// AutoCreate creates a board on its first score, as --dev does;
	// otherwise a board must be created (PUT /api/v1/boards/{board}).
	AutoCreate bool
	// Config, when set, edits the node's config once the fields above are
	// in it and before node.New: ID (default "test"), Redis, NATSURL,
	// StoreTimeout, Now, WrapStore, Hub, Logger (default: discard)… The
	// Verifier and the Registry are the gateway's own.
	Config func(*node.Config)
}

// Gateway is a running test gateway.
type Gateway struct {
	URL   string     // ws://…/ws
	HTTP  string     // http://host:port
	Store rank.Store // the store as the hub and the API use it, for ledger checks
	Hub   *hub.Hub
	Node  *node.Node
	// Registry holds every part's metrics (also served on /metrics).
	Registry *prometheus.Registry
}

// Start starts a gateway; stop shuts it down (connections first) and
// releases everything it holds. On error nothing is left running.
func Start(opts Options) (g *Gateway, stop func(), err error) {
	g, closeAll, err := start(opts)
	if err != nil {
		return nil, nil, err
	}
	return g, func() { closeAll() }, nil
}

// Run starts a gateway for the life of t: its cleanup shuts the gateway
// down, and an error releasing the node fails the test.
func Run(t testing.TB, opts Options) *Gateway {
	t.Helper()
	g, closeAll, err := start(opts)
	if err != nil {
		t.Fatalf("gwtest: %v", err)
	}
	t.Cleanup(func() {
		if err := closeAll(); err != nil {
			t.Errorf("gwtest: close: %v", err)
		}
	})
	return g
}

func start(opts Options) (g *Gateway, closeAll func() error, err error) {
	if opts.Interval == 0 {
		opts.Interval = 20 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	cfg := node.Config{
		ID:       "test",
		Dev:      opts.AutoCreate,
		Interval: opts.Interval,
		Logger:   slog.New(slog.DiscardHandler),
		Registry: prometheus.NewRegistry(),
		// stop waits for the drain; a client that never answers the close
		// holds it this long.
		DrainTimeout: 2 * time.Second,
	}
	if opts.Config != nil {
		opts.Config(&cfg)
	}
	if cfg.Verifier, err = auth.New(ctx, auth.Config{Secret: opts.Secret, Logger: cfg.Logger}); err != nil {
		if cfg.Redis != nil {
			cfg.Redis.Close() // node.New owns it, and was not called
		}
		return nil, nil, err
	}
	n, err := node.New(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		n.Close()
		return nil, nil, err
	}
	served := make(chan error, 1)
	go func() { served <- n.Serve(ctx, ln) }()
	closeAll = func() error {
		cancel() // Serve drains: connections closed with 1001, the server stopped
		err := <-served
		return errors.Join(err, n.Close())
	}
	url := "http://" + ln.Addr().String()
	return &Gateway{
		URL:      "ws" + strings.TrimPrefix(url, "http") + "/ws",
		HTTP:     url,
		Store:    n.Store(),
		Hub:      n.Hub(),
		Node:     n,
		Registry: cfg.Registry,
	}, closeAll, nil
}
