package client

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"
)

// The library writes every message with a flush of its own, one write(2)
// per message: with many calls in flight that syscall was half of the
// client's CPU per Score (BenchmarkScore, `wsgateway load`). A Client that
// dials with its own transport (Options.HTTPClient nil) therefore puts a
// batchConn under each connection: the library's flushes only append to a
// buffer, and one flusher goroutine per connection writes whatever has
// gathered meanwhile in one write(2). An idle connection costs a wake-up
// of the flusher per message instead of the syscall in the caller; a busy
// one, one syscall per batch.
//
// The library's own write timeout (a context per write) is then moot, since
// its writes do not block on the socket; the flusher bounds each socket
// write with WriteTimeout instead, and a write that fails or times out
// closes the socket, which ends the library's reader and so the connection
// (a reconnect resends what was unanswered, as for any lost connection).

// maxBatch bounds the bytes a batchConn holds unwritten: a writer beyond it
// waits for the flusher, as it would wait for a full socket buffer.
const maxBatch = 256 << 10

// batchConn is the net.Conn under one WebSocket of a Client.
type batchConn struct {
	net.Conn
	timeout time.Duration // bounds each socket write
	wake    chan struct{} // capacity 1: the flusher has work, or the conn closed

	// mu guards the fields below.
	mu       sync.Mutex
	room     sync.Cond // signalled when buf shrinks or err is set
	buf      []byte    // bytes written but not yet sent
	spare    []byte    // the flusher's previous buffer, reused
	flushing bool      // the flusher has been woken and has not yet emptied buf
	err      error     // sticky: the first write error, or net.ErrClosed
}

func newBatchConn(nc net.Conn, timeout time.Duration) *batchConn {
	c := &batchConn{Conn: nc, timeout: timeout, wake: make(chan struct{}, 1)}
	c.room.L = &c.mu
	go c.flusher()
	return c
}

// Write queues p for the flusher. It blocks only while maxBatch bytes are
// already waiting; it fails once a socket write has failed or the conn is
// closed.
func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.err == nil && len(c.buf) >= maxBatch {
		c.room.Wait()
	}
	if c.err != nil {
		return 0, c.err
	}
	c.buf = append(c.buf, p...)
	if !c.flushing {
		c.flushing = true
		c.wake <- struct{}{} // cannot block: only a writer that sets flushing sends
	}
	return len(p), nil
}

// flusher writes what gathers until the conn fails or closes.
func (c *batchConn) flusher() {
	for range c.wake {
		// The writer that woke us made us its P's next goroutine, ahead of
		// the callers woken with it by one read of acks: yielding once lets
		// them add their frames to this write first.
		runtime.Gosched()
		c.mu.Lock()
		for len(c.buf) > 0 && c.err == nil {
			out := c.buf
			c.buf, c.spare = c.spare[:0], nil
			c.mu.Unlock()
			err := c.send(out)
			c.mu.Lock()
			c.spare = out[:0]
			if err != nil && c.err == nil {
				c.err = err
				c.Conn.Close() // the reader then sees the connection die
			}
			c.room.Broadcast()
		}
		c.flushing = false
		stop := c.err != nil
		c.mu.Unlock()
		if stop {
			return
		}
	}
}

func (c *batchConn) send(b []byte) error {
	if c.timeout > 0 {
		if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
			return err
		}
	}
	_, err := c.Conn.Write(b)
	return err
}

// Close drops what was not yet sent (the library closes the socket after
// its close handshake, by when nothing is left, or to abandon it) and
// closes the socket, which also ends a socket write in progress.
func (c *batchConn) Close() error {
	c.mu.Lock()
	first := c.err == nil
	if first {
		c.err = net.ErrClosed
		c.buf = nil
		if !c.flushing {
			c.flushing = true
			c.wake <- struct{}{} // the flusher sees err and returns
		}
	}
	c.room.Broadcast()
	c.mu.Unlock()
	err := c.Conn.Close()
	if !first && errors.Is(err, net.ErrClosed) {
		err = nil // closed by the flusher after a failed write
	}
	return err
}

// batchingClient is the HTTP client of a Client without Options.HTTPClient:
// http.DefaultTransport's settings, every connection a batchConn. Keep-alive
// is off so that every dial is a fresh connection of our own (an upgrade
// takes the connection over; a refused one is not reused). tlsConfig, when
// set, replaces the transport's TLS configuration (Options.TLSConfig).
func batchingClient(timeout time.Duration, tlsConfig *tls.Config) *http.Client {
	var t *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		t = dt.Clone()
	} else {
		t = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	dial := t.DialContext // DefaultTransport's own dialer settings
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return newBatchConn(nc, timeout), nil
	}
	// The transport puts TLS over what DialContext returns: the batchConn
	// gathers whole TLS records.
	if tlsConfig != nil {
		t.TLSClientConfig = tlsConfig.Clone()
	}
	t.DisableKeepAlives = true
	return &http.Client{Transport: t}
}
