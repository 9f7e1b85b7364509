// Package gwtest runs a gateway inside a test process, for the tests of
// the packages that talk to one over real sockets (client, loadgen): the
// node package's gateway (memory engine, in-process NATS) on a loopback
// HTTP server, as cmd/wsgateway runs it. Tests of cmd/wsgateway and e2e run
// the binary instead.
package gwtest

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"time"

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
}

// Gateway is a running test gateway.
type Gateway struct {
	URL   string     // ws://…/ws
	Store rank.Store // the engine behind it, for ledger checks
	Hub   *hub.Hub
}

// Start starts a gateway; stop shuts it down (connections first) and
// releases everything it holds. On error nothing is left running.
func Start(opts Options) (g *Gateway, stop func(), err error) {
	if opts.Interval == 0 {
		opts.Interval = 20 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	var undo []func()
	defer func() {
		if err != nil {
			cancel()
			for _, f := range undo {
				f()
			}
		}
	}()
	log := slog.New(slog.DiscardHandler)
	v, err := auth.New(ctx, auth.Config{Secret: opts.Secret, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	n, err := node.New(ctx, node.Config{ID: "test", Dev: opts.AutoCreate, Verifier: v, Interval: opts.Interval, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	undo = append(undo, func() { n.Close() })
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	srv := httptest.NewServer(n.Handler())
	stop = func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		n.Shutdown(sctx)
		scancel()
		srv.Close()
		cancel()
		<-done
		n.Close()
	}
	return &Gateway{URL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws", Store: n.Store(), Hub: n.Hub()}, stop, nil
}
