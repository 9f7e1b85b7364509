// Package sock owns the socket under one of the hub's WebSocket
// connections: every byte written to a client goes through its Conn, which
// holds the framing of the hub's messages, the write deadline, the bytes a
// write that never waits left owed, and the pong budget.
//
// coder/websocket runs on top of a Conn (Accept): it reads through it and
// writes its control frames (pings, pongs, close) through Write. The hub
// writes its own messages (replies and live frames) as ready text frames
// with Text, batched into one write(2): a server frame is the header and
// the payload as they are (RFC 6455 §5.2: no mask from a server;
// compression is disabled), so a live frame encoded once per board is
// written to every spectator without the library's per-message work.
package sock

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Conn is the socket under one WebSocket connection.
//
// The rule: whoever holds the socket writes the hub's frames. The
// connection's writer holds it except while it waits for work (Hold,
// Unhold); while it waits, anyone else may take it without waiting
// (TryTake), write in its place and give it back (Give). A taker's write
// never parks: what the socket does not take at once is owed, goes to the
// socket before any later byte, and Give reports that the writer must be
// woken to write it under the deadline. A writer that has ended keeps the
// socket, so nothing is written after its close.
//
// All methods may be called concurrently except Read, which the library's
// reader alone calls, and Text, Flush, Unhold and Give, which only the
// holder of the socket calls (the writer between Hold and Unhold, a taker
// between TryTake and Give). The library's Write and Close may come at any
// time from any goroutine; every write to the socket is made under one
// mutex, so frames never interleave.
type Conn struct {
	nc      net.Conn      // the socket: written only under mu (unexported: nobody writes around the Conn)
	timeout time.Duration // bound of each blocking write
	pool    *sync.Pool    // *[]byte batches, shared by every Conn of a hub
	rc      syscall.RawConn

	hold  sync.Mutex // the socket's holder: the writer or a taker
	taken bool       // held by a taker (guarded by hold)
	batch *[]byte    // the holder's frames not yet written; nil: none (guarded by hold)

	mu       sync.Mutex // held while bytes go to the socket; guards what follows
	deadline time.Time  // the write deadline last set on the socket
	owed     *[]byte    // bytes a taker's write left, owed[owedOff:]; nil: none
	owedOff  int
	werr     error // a taker's write error, returned by the next write
	owes     atomic.Bool
	pongs    pongBudget
	// rc.Write's callback and its arguments and results, kept here so that
	// a taker's write allocates nothing (a closure per write escaped).
	rawWrite func(fd uintptr) bool
	rawBuf   []byte
	rawN     int
	rawErr   error

	in reader // the read side (read.go)
}

// maxBatch is how much the writer collects before it writes through, so a
// batch stays bounded whatever its replies and frames add up to.
const maxBatch = 64 << 10

// maxHeader is the longest header of a server frame.
const maxHeader = 10

// New wraps nc, which already read pre past the HTTP request. Blocking
// writes are bounded by timeout; pool holds *[]byte buffers.
func New(nc net.Conn, pre []byte, timeout time.Duration, pool *sync.Pool) *Conn {
	c := &Conn{nc: nc, timeout: timeout, pool: pool}
	c.in.pre = pre
	c.in.closed = make(chan struct{})
	if sc, ok := nc.(syscall.Conn); ok && nonBlockingWrites {
		c.rc, _ = sc.SyscallConn()
	}
	return c
}

// Hold takes the socket for the connection's writer, waiting for a taker
// to give it back.
func (c *Conn) Hold() { c.hold.Lock() }

// Unhold lets the socket go while the writer waits for work. The writer
// has flushed what it wrote.
func (c *Conn) Unhold() { c.hold.Unlock() }

// TryTake takes the socket in the idle writer's place, never waiting: it
// fails when the writer (or another taker) holds it, a write is under way,
// bytes are owed or the socket cannot be written without parking (no
// RawConn: TLS, net.Pipe). On success the taker writes with Text and must
// Give.
func (c *Conn) TryTake() bool {
	if c.rc == nil || c.owes.Load() || !c.hold.TryLock() {
		return false
	}
	if !c.mu.TryLock() {
		c.hold.Unlock()
		return false
	}
	if c.owed != nil || c.werr != nil {
		c.mu.Unlock()
		c.hold.Unlock()
		return false
	}
	c.taken = true
	return true
}

// Give writes the taker's frames in one write(2) that never parks and
// lets the socket go. It reports whether the writer must be woken: bytes
// are owed, or the write failed and the writer must meet the error.
func (c *Conn) Give() (wake bool) {
	b := c.batch
	c.batch, c.taken = nil, false
	if b != nil {
		wake = c.writeRawLocked(b)
	}
	c.mu.Unlock()
	c.hold.Unlock()
	return wake
}

// Text adds p as one text frame to the holder's batch. The writer's batch
// is written through once it passes maxBatch; a taker's is written by Give.
func (c *Conn) Text(p []byte) error {
	if c.batch == nil {
		c.batch = c.pool.Get().(*[]byte)
		*c.batch = (*c.batch)[:0]
	} else if !c.taken && len(*c.batch)+maxHeader+len(p) > maxBatch {
		if err := c.Flush(); err != nil {
			return err
		}
		return c.Text(p)
	}
	*c.batch = append(appendTextHeader(*c.batch, len(p)), p...)
	return nil
}

// Flush writes, for the writer, what is owed and then the batch, under the
// write deadline: a socket that takes none of it for the timeout fails
// with os.ErrDeadlineExceeded (R12's slow consumer).
func (c *Conn) Flush() error {
	b := c.batch
	c.batch = nil
	c.mu.Lock()
	defer c.mu.Unlock()
	if b == nil {
		if c.owed == nil && c.werr == nil {
			return nil
		}
		_, err := c.writeLocked(nil)
		return err
	}
	_, err := c.writeLocked(*b)
	c.put(b)
	return err
}

// Owes reports whether a taker's write left bytes or an error for the
// writer (Flush writes or returns them).
func (c *Conn) Owes() bool { return c.owes.Load() }

// Write is the library's: its control frames, each in one Write. Pongs
// over the budget are dropped (read.go).
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if isPong(p) && !c.pongs.allow(time.Now()) {
		return len(p), nil
	}
	return c.writeLocked(p)
}

// LocalAddr and RemoteAddr are the socket's.
func (c *Conn) LocalAddr() net.Addr  { return c.nc.LocalAddr() }
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// errOwnDeadline refuses a write deadline set from outside: the Conn
// keeps its own (writeLocked).
var errOwnDeadline = errors.New("sock: the write deadline is the Conn's own")

// SetReadDeadline is the socket's.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.nc.SetReadDeadline(t) }

// SetWriteDeadline and SetDeadline are refused with an error: every write
// is bounded by the Conn's timeout already, and a deadline set from
// outside would outlast or cut its own.
func (c *Conn) SetWriteDeadline(time.Time) error { return errOwnDeadline }
func (c *Conn) SetDeadline(time.Time) error      { return errOwnDeadline }

// writeLocked writes what is owed, then p, under the write deadline, which
// is moved only when less than timeout of it is left: a blocked write is
// closed after between timeout and timeout + 1/8 of it, and a busy socket
// moves its deadline (the runtime's timer work) about once per timeout/8
// instead of once per write.
func (c *Conn) writeLocked(p []byte) (int, error) {
	if now := time.Now(); c.deadline.Sub(now) < c.timeout {
		d := now.Add(c.timeout + c.timeout/8)
		if err := c.nc.SetWriteDeadline(d); err != nil {
			return 0, err
		}
		c.deadline = d
	}
	if c.werr != nil {
		return 0, c.werr
	}
	if c.owed != nil {
		n, err := c.nc.Write((*c.owed)[c.owedOff:])
		c.owedOff += n
		if err != nil {
			return 0, err
		}
		c.put(c.owed)
		c.owed, c.owedOff = nil, 0
		c.owes.Store(false)
	}
	if len(p) == 0 {
		return 0, nil
	}
	return c.nc.Write(p)
}

// writeRawLocked writes b (a pool buffer, which it keeps) in one write(2)
// that never parks; what the socket did not take becomes owed. It reports
// whether the writer must act.
func (c *Conn) writeRawLocked(b *[]byte) bool {
	if c.rawWrite == nil {
		c.rawWrite = c.rawWriteFunc
	}
	c.rawBuf = *b
	err := c.rc.Write(c.rawWrite)
	n, werr := c.rawN, c.rawErr
	c.rawBuf, c.rawErr = nil, nil
	switch {
	case err == nil && werr == nil && n == len(*b):
		c.put(b)
		return false
	case errors.Is(err, os.ErrDeadlineExceeded):
		// Only blocking writes move the deadline: after a timeout of
		// takers' writes alone it has passed and RawConn refuses to start.
		// Nothing was written; the writer moves it and writes.
		n = 0
	case err != nil:
		c.werr = err
	case werr != nil && !errors.Is(werr, syscall.EAGAIN) && !errors.Is(werr, syscall.EINTR):
		c.werr = werr
	}
	c.owes.Store(true)
	if c.werr != nil {
		c.put(b)
		return true
	}
	c.owed, c.owedOff = b, max(n, 0)
	return true
}

// rawWriteFunc is rc.Write's callback: one write(2) of rawBuf, never asking
// to wait for the socket (the writer does that for what is left).
func (c *Conn) rawWriteFunc(fd uintptr) bool {
	c.rawN, c.rawErr = writeNonBlocking(fd, c.rawBuf)
	return true
}

// put gives b back to the pool unless a large batch made it large.
func (c *Conn) put(b *[]byte) {
	if cap(*b) <= maxBatch+maxHeader+4096 {
		*b = (*b)[:0]
		c.pool.Put(b)
	}
}

// appendTextHeader appends the header of an unmasked, final text frame
// with an n-byte payload.
func appendTextHeader(b []byte, n int) []byte {
	switch {
	case n < 126:
		return append(b, 0x81, byte(n))
	case n <= 0xffff:
		return append(b, 0x81, 126, byte(n>>8), byte(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, 0x81, 127), uint64(n))
	}
}
