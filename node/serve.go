package node

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/wsgateway/wsgateway/api"
)

// Serve serves the node on ln and computes its live frames until ctx ends,
// then drains (R14) within DrainTimeout and returns. It closes ln.
//
// The port has one server, fiber's fasthttp server (api.Serve): the API's
// routes natively, the WebSocket upgrade, the pages and /metrics through
// n.other.
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
	rl := &retryListener{Listener: ln, refused: func(error) { refused.Inc() }, log: n.log, done: make(chan struct{})}
	g, gctx := errgroup.WithContext(ctx)
	// Live frames go on through the drain: a connection told to reconnect
	// later (§15) is served until then.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	g.Go(func() error {
		if err := n.Run(runCtx); !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		return n.api.Serve(rl, api.ServeConfig{
			Other: n.other,
			// Slowloris, and the authentication deadline: the token travels
			// in the headers and is verified before the upgrade, so a client
			// that has not authenticated within this time is cut off. The
			// other timeouts are the API's defaults.
			ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		})
	})
	g.Go(func() error {
		<-gctx.Done()
		err := n.drain()
		stopRun()
		rl.Close() // Serve returns even if it had not started when the drain began
		return err
	})
	return g.Wait()
}

// drain is R14: stop accepting, answer what was received, close every
// WebSocket with 1001 (the server leaves hijacked connections alone, so
// the hub drains its own), all within the drain timeout.
func (n *Node) drain() error {
	timeout := n.cfg.DrainTimeout
	n.log.Info("draining", "timeout", timeout.String(), "connections", n.hub.Conns())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	g := new(errgroup.Group)
	g.Go(func() error { return n.Shutdown(ctx) })
	g.Go(func() error { return n.api.Shutdown(ctx) })
	err := g.Wait()
	n.log.Info("drained", "err", err)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil // the deadline is the contract's bound, not a failure
	}
	return err
}

// Accept back-off after a failure that is not the listener's end: like
// net/http, 5 ms doubling to 1 s, so a node out of descriptors waits for
// some to be freed instead of spinning or exiting (docs/protocol.md R32).
// fasthttp would end Serve on such an error.
const (
	minBackoff = 5 * time.Millisecond
	maxBackoff = time.Second
	logEvery   = time.Second
)

// retryListener survives failed accepts (EMFILE, ENFILE, ENOBUFS,
// ECONNABORTED, a timeout): the connection stays in the kernel's queue or
// is dropped, and Accept tries again after a back-off. Only the server's
// goroutine calls Accept.
type retryListener struct {
	net.Listener
	refused  func(error) // counts each failure
	log      *slog.Logger
	done     chan struct{} // closed by Close
	closing  sync.Once
	lastLog  time.Time
	unlogged int
}

func (l *retryListener) Accept() (net.Conn, error) {
	var backoff time.Duration
	for {
		c, err := l.Listener.Accept()
		if err == nil || errors.Is(err, net.ErrClosed) {
			return c, err
		}
		l.refused(err)
		l.unlogged++
		if now := time.Now(); now.Sub(l.lastLog) >= logEvery {
			l.log.Warn("accept failed; retrying", "err", err, "failures", l.unlogged)
			l.lastLog, l.unlogged = now, 0
		}
		backoff = min(max(2*backoff, minBackoff), maxBackoff)
		select {
		case <-time.After(backoff):
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
}

func (l *retryListener) Close() error {
	l.closing.Do(func() { close(l.done) })
	return l.Listener.Close()
}
