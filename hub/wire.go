package hub

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The socket under a connection. coder/websocket flushes every message with
// its own write(2), and bounds each write with a context whose timeout
// costs a timer and several allocations; at ingest rates those were the
// largest items of the gateway's profile. So the hub hands the library a
// wrapped net.Conn (corkConn) that
//
//   - bounds every socket write with the connection's write deadline
//     (WriteTimeout to WriteTimeout + 1/8 from now, see writeLocked), which
//     is free of allocations, instead of a context per write; and
//   - while the writer holds it corked, collects the messages of one batch
//     (queued replies, then frames) and sends them in one write(2).
//
// The bytes on the wire are the same; only how they are split into writes
// changes.

// maxCork is how much a corked connection collects before writing through:
// the batch stays bounded whatever the replies and frames add up to.
const maxCork = 64 << 10

// corkConn is the net.Conn under one WebSocket. Writes come from the hub's
// writer and, for control frames (pong, close), from the library's reader,
// so its state is guarded by mu; writes to the socket happen under mu too,
// keeping their order.
type corkConn struct {
	net.Conn
	timeout time.Duration // write deadline of each socket write
	pool    *sync.Pool    // *[]byte cork buffers, shared by the hub

	mu       sync.Mutex
	corked   bool
	buf      *[]byte   // while corked and non-empty: the collected bytes
	deadline time.Time // the write deadline last set on the socket
	pongs    pongBudget

	// The direct path (direct.go): rc writes without ever parking; what a
	// direct write left unwritten is owed (owed[owedOff:]) and goes to the
	// socket before any other byte. rc is nil when the socket is not a
	// syscall.Conn (TLS, net.Pipe in tests): no direct writes then.
	rc      syscall.RawConn
	owed    *[]byte // guarded by mu; nil: nothing owed
	owedOff int
	owes    atomic.Bool // owed != nil or werr != nil, for the writer's check on each wake
	werr    error       // a direct write's error, returned by the next write (guarded by mu)
	// rc.Write's callback and its arguments and results, kept here so a
	// direct write allocates nothing (guarded by mu).
	rawWrite func(fd uintptr) bool
	rawBuf   []byte
	rawN     int
	rawErr   error

	// Reads (flood.go), by the library's reader alone: pre is what net/http
	// had read past the request before the hijack; flood counts frames.
	pre       []byte
	flood     floodGuard
	stalled   bool
	closed    chan struct{} // closed by Close
	closeOnce sync.Once
}

// Write writes p, or collects it while corked.
func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if isPong(p) && !c.pongs.allow(time.Now()) {
		return len(p), nil // over the pong budget (pong.go): dropped
	}
	if !c.corked {
		return c.writeLocked(p)
	}
	if c.buf == nil {
		c.buf = c.pool.Get().(*[]byte)
	}
	if len(*c.buf)+len(p) > maxCork {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) > maxCork {
			return c.writeLocked(p)
		}
		c.buf = c.pool.Get().(*[]byte)
	}
	*c.buf = append(*c.buf, p...)
	return len(p), nil
}

// writeLocked writes p to the socket, at most timeout + timeout/8 after its
// start: the deadline is moved only when less than timeout of it is left,
// so a blocked write is closed after between timeout and timeout + 1/8 of it
// (R12's 5 s). Moving it on every write was the runtime's timer work
// (pollSetDeadline) once per frame per connection, 4-7% of the fan-out
// profiles; now a spectator's socket moves it about once per
// timeout/8 (every 6th frame at 100 ms frames and a 5 s timeout).
//
// Bytes a direct write owes go first, under the same deadline, so that no
// write (a frame, a reply, the library's pong or close) lands inside a
// frame the socket took only part of.
func (c *corkConn) writeLocked(p []byte) (int, error) {
	if err := c.deadlineLocked(); err != nil {
		return 0, err
	}
	if err := c.writeOwedLocked(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// deadlineLocked moves the write deadline when less than timeout of it is
// left (see writeLocked).
func (c *corkConn) deadlineLocked() error {
	now := time.Now()
	if c.deadline.Sub(now) < c.timeout {
		d := now.Add(c.timeout + c.timeout/8)
		if err := c.Conn.SetWriteDeadline(d); err != nil {
			return err
		}
		c.deadline = d
	}
	return nil
}

// writeOwedLocked writes the bytes owed by direct writes (blocking, under
// the deadline deadlineLocked set), or returns a direct write's error.
func (c *corkConn) writeOwedLocked() error {
	if c.werr != nil {
		return c.werr
	}
	if c.owed == nil {
		return nil
	}
	n, err := c.Conn.Write((*c.owed)[c.owedOff:])
	c.owedOff += n
	if err != nil {
		return err
	}
	c.putOwedLocked()
	return nil
}

// putOwedLocked drops the owed buffer (all of it written).
func (c *corkConn) putOwedLocked() {
	b := c.owed
	c.owed, c.owedOff = nil, 0
	c.owes.Store(false)
	*b = (*b)[:0]
	if cap(*b) <= maxCork {
		c.pool.Put(b)
	}
}

// flushOwed writes what direct writes owe, for the writer (R12: a socket
// that takes none of it within the deadline ends the connection).
func (c *corkConn) flushOwed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owed == nil && c.werr == nil {
		return nil
	}
	if err := c.deadlineLocked(); err != nil {
		return err
	}
	return c.writeOwedLocked()
}

// flushLocked writes what was collected and gives the buffer back.
func (c *corkConn) flushLocked() error {
	b := c.buf
	if b == nil {
		return nil
	}
	c.buf = nil
	var err error
	if len(*b) > 0 {
		_, err = c.writeLocked(*b)
	}
	*b = (*b)[:0]
	if cap(*b) <= maxCork {
		c.pool.Put(b)
	}
	return err
}

// cork starts collecting writes.
func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork writes what was collected in one write and stops collecting.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	return c.flushLocked()
}

// corkWriter hands websocket.Accept a hijacked connection wrapped in a
// corkConn.
type corkWriter struct {
	http.ResponseWriter
	h  *Hub
	cc *corkConn // set by Hijack
}

func (w *corkWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *corkWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.cc = &corkConn{Conn: nc, timeout: w.h.cfg.WriteTimeout, pool: &w.h.corkBufs, closed: make(chan struct{})}
	w.cc.rc = rawConnOf(nc)
	// Point the hijacked writer (empty: the 101 response is flushed before
	// hijacking) at the corkConn, keeping its buffer.
	if err := brw.Writer.Flush(); err != nil {
		nc.Close()
		return nil, nil, err
	}
	brw.Writer.Reset(w.cc)
	// Every byte read from the client, those net/http already buffered
	// included, passes the corkConn's flood guard (flood.go).
	b, _ := brw.Reader.Peek(brw.Reader.Buffered())
	w.cc.pre = bytes.Clone(b)
	brw.Reader.Reset(w.cc)
	return w.cc, brw, nil
}
