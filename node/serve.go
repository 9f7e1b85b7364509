package node

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/wsgateway/wsgateway/api"
	"github.com/wsgateway/wsgateway/internal/connsplit"
)

// Serve serves the node on ln and computes its live frames until ctx ends,
// then drains (R14) within DrainTimeout and returns. It closes ln.
//
// One port, two servers: a connection whose first request is for the API
// is served by fiber's own fasthttp server (no net/http conversion per
// request); every other (the WebSocket, pages, /metrics) by net/http,
// which also answers API requests that follow on its connections. fasthttp
// hands a connection over when it asks for something else. Both doors call
// the same gates (api/gate.go).
func (n *Node) Serve(ctx context.Context, ln net.Listener) error {
	cfg := n.cfg
	if msg := n.hub.ExposureWarning(ln.Addr().String()); msg != "" {
		n.log.Warn(msg)
	}
	refused := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wsgateway_accept_errors_total",
		Help: "Connections the listener failed to accept (out of file descriptors and the like) and retried after a back-off.",
	})
	if err := cfg.Registry.Register(refused); err != nil {
		return err
	}
	split, err := connsplit.New(ln, connsplit.Config{
		First:   api.Owns,
		Timeout: cfg.ReadHeaderTimeout,
		Refused: func(error) { refused.Inc() },
		Logger:  n.log,
	})
	if err != nil {
		return err
	}
	fast := api.FastConfig{
		Hand:              split.Hand,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	srv := &http.Server{
		Handler: n.handler,
		// Slowloris, and the authentication deadline: the token travels in
		// the headers and is verified before the upgrade, so a client that
		// has not authenticated within this time is cut off.
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(n.log.Handler(), slog.LevelWarn),
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ignoreCancel(n.Run(gctx)) })
	g.Go(func() error {
		if err := srv.Serve(split.Second()); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error { return n.api.ServeFast(split.First(), fast) })
	g.Go(func() error {
		<-gctx.Done()
		err := n.drain(srv)
		split.Close() // ServeFast returns even if it had not started when the drain began
		return err
	})
	return g.Wait()
}

// drain is R14: stop accepting, answer what was received, close every
// WebSocket with 1001 (http.Server.Shutdown does not close hijacked
// connections, so the hub drains its own), all within the drain timeout.
func (n *Node) drain(srv *http.Server) error {
	timeout := n.cfg.DrainTimeout
	n.log.Info("draining", "timeout", timeout.String(), "connections", n.hub.Conns())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	g := new(errgroup.Group)
	g.Go(func() error { return n.Shutdown(ctx) })
	g.Go(func() error { return srv.Shutdown(ctx) })
	g.Go(func() error { return n.api.ShutdownFast(ctx) })
	err := g.Wait()
	n.log.Info("drained", "err", err)
	if errors.Is(err, context.DeadlineExceeded) {
		srv.Close()
		return nil // the deadline is the contract's bound, not a failure
	}
	return err
}

func ignoreCancel(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
