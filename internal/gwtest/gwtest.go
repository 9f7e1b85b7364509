// Package gwtest runs a gateway inside a test process, for the tests of
// the packages that talk to one over real sockets (client, loadgen): the
// memory engine, in-process NATS, live frames, and the hub (/ws) and the
// REST API (/api/) on one loopback HTTP server, wired as cmd/wsgateway
// wires --dev. Tests of cmd/wsgateway and e2e run the binary instead.
package gwtest

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/wsgateway/wsgateway/api"
	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/bus"
	"github.com/wsgateway/wsgateway/hub"
	"github.com/wsgateway/wsgateway/hub/live"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
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
	ms, err := memstore.New(memstore.Config{Logger: log})
	if err != nil {
		return nil, nil, err
	}
	undo = append(undo, func() { ms.Close() })
	var store rank.Store = ms
	if opts.AutoCreate {
		store = rank.AutoCreate(ms)
	}
	v, err := auth.New(ctx, auth.Config{Secret: opts.Secret, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	engine, err := live.New(live.Config{Store: store, Interval: opts.Interval, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	var b *bus.Bus
	h, err := hub.New(hub.Config{
		Store: store, Verifier: v, Live: engine, Node: "test",
		Publish:     func(c bus.Change) { b.Publish(c) },
		TopInterval: opts.Interval, Logger: log,
	})
	if err != nil {
		return nil, nil, err
	}
	b, err = bus.New(ctx, bus.Config{Node: "test", Logger: log, OnChanges: engine.Changed, OnResync: engine.Resync})
	if err != nil {
		return nil, nil, err
	}
	undo = append(undo, func() { b.Close() })
	a, err := api.New(api.Config{Store: store, Verifier: v, OnApplied: h.Applied, Logger: log,
		OnBoard: func(board string, _ bool) { h.BoardChanged(board); engine.Resync(board) }})
	if err != nil {
		return nil, nil, err
	}
	done := make(chan struct{})
	go func() { engine.Run(ctx); close(done) }()
	mux := http.NewServeMux()
	mux.Handle("GET /ws", h)
	mux.Handle("/api/", a.Handler())
	srv := httptest.NewServer(mux)
	stop = func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		h.Shutdown(sctx)
		scancel()
		srv.Close()
		cancel()
		<-done
		b.Close()
		ms.Close()
	}
	return &Gateway{URL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws", Store: store, Hub: h}, stop, nil
}
