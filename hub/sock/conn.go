// Package sock owns the socket under one of the hub's WebSocket
// connections: every byte written to a client goes through its Conn, which
// holds the framing of the hub's messages, the write timeout, the bytes a
// write that never waits left owed, the pong budget, and on the read side
// the flood guard and a read buffer borrowed only while bytes wait in it.
//
// coder/websocket runs on top of a Conn (Accept): it reads through it and
// writes its control frames (pongs, close) through Write. The hub writes
// its own messages (replies, live frames, pings) as ready frames with Text
// and Ping, batched into one write(2): a server frame is the header and
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
// connection's writer holds it while it works (Hold, Unhold); while no
// writer does, anyone else may take it without waiting (TryTake), write in
// its place and give it back (Give). A taker's write never parks: what the
// socket does not take at once is owed, goes to the socket before any
// later byte, and Give reports that a writer must come to write it. A
// writer that has ended keeps the socket, so nothing is written after its
// close.
//
// All methods may be called concurrently except Read, which the library's
// reader alone calls, NextMessage, which the hub's reader alone calls, and
// Text, Ping, Flush, Unhold and Give, which only the holder of the socket
// calls (the writer between Hold and Unhold, a taker between TryTake and
// Give). The library's Write and Close may come at any time from any
// goroutine; every write to the socket is made under one mutex, so frames
// never interleave.
type Conn struct {
	nc      net.Conn        // the socket: written only under mu (unexported: nobody writes around the Conn)
	rc      syscall.RawConn // nil: no descriptor (TLS, a pipe): writes block with a deadline, TryTake fails
	timeout time.Duration   // bound of each blocking write
	bufs    *Buffers
	fd      int32  // rc's descriptor, for the hub's poller (Park); -1: none
	wake    func() // what Park's waker runs, on a goroutine of its own (SetWake)

	hold  sync.Mutex // the socket's holder: the writer or a taker
	batch *[]byte    // the holder's frames not yet written; nil: none (guarded by hold)

	mu       sync.Mutex    // held while bytes go to the socket; guards what follows
	owes     atomic.Bool   // owed or werr is set (read without mu)
	blocked  atomic.Uint32 // a blocking write's timeout: 1 armed, 2 fired (block)
	taken    bool          // held by a taker (guarded by hold)
	rawFull  bool          // rawWrite writes all of rawBuf, waiting for the socket; else one write(2) (a taker's)
	deadline int64         // without rc: the write deadline last set on the socket, unix ns
	owed     *[]byte       // bytes a taker's write left, owed[owedOff:]; nil: none
	owedOff  int
	werr     error // a taker's write error, returned by the next write
	pongs    pongBudget
	// rc.Write's callback (writeFunc), bound once, its arguments and
	// results, kept here so that a write allocates nothing (a closure per
	// write escaped).
	rawWrite func(fd uintptr) bool
	rawBuf   []byte
	rawN     int
	rawErr   error
	// A blocking write that finds the socket full arms expiry, which
	// closes the socket once the write timeout passes; no timer runs for a
	// write that does not wait.
	expiry *time.Timer

	pongAt atomic.Int64 // unix ns of the last pong read; 0: none

	in reader // the read side (read.go)
}

// Buffers are the buffers the Conns of one hub borrow while they use them:
// write batches, and read buffers for the bytes the library has not read
// yet. The zero value is not usable; NewBuffers makes one.
type Buffers struct {
	batches sync.Pool // *[]byte, cap batchBuf
	reads   sync.Pool // *[]byte, len readBuf
	lent    atomic.Int64
	poll    *poller // the parked Conns' sockets (Park); nil: none parks
}

// getRead borrows a read buffer; putRead gives it back.
func (b *Buffers) getRead() *[]byte {
	if p := b.pooledRead(); p != nil {
		return p
	}
	b.lent.Add(1)
	s := make([]byte, readBuf)
	return &s
}

// pooledRead borrows a read buffer if the pool has one, allocating
// nothing (nil: none).
func (b *Buffers) pooledRead() *[]byte {
	p, _ := b.reads.Get().(*[]byte)
	if p != nil {
		b.lent.Add(1)
	}
	return p
}

func (b *Buffers) putRead(p *[]byte) {
	b.lent.Add(-1)
	if cap(*p) == readBuf { // not a Conn's first bytes (New)
		b.reads.Put(p)
	}
}

// ReadsLent is how many read buffers are borrowed now: connections with
// bytes the library has not read yet.
func (b *Buffers) ReadsLent() int64 { return b.lent.Load() }

// NewBuffers returns the pools of one hub's Conns.
func NewBuffers() *Buffers {
	b := &Buffers{poll: newPoller()}
	b.batches.New = func() any { s := make([]byte, 0, batchBuf); return &s }
	return b
}

// Buffer sizes. A read buffer is sized to the protocol's messages (a few
// hundred bytes each): one read(2) takes a client's pipelined requests
// together, and it is borrowed only while bytes wait in it, so an idle
// connection holds none. A batch grows as the frames it collects need.
const (
	readBuf  = 2048
	batchBuf = 4096
)

// maxBatch is how much the writer collects before it writes through, so a
// batch stays bounded whatever its replies and frames add up to.
const maxBatch = 64 << 10

// maxHeader is the longest header of a server frame.
const maxHeader = 10

// New wraps nc, which already read pre past the HTTP request. Blocking
// writes are bounded by timeout; bufs are the hub's pools.
func New(nc net.Conn, pre []byte, timeout time.Duration, bufs *Buffers) *Conn {
	c := &Conn{nc: nc, timeout: timeout, bufs: bufs, fd: -1}
	if len(pre) > 0 {
		c.in.buf, c.in.end = &pre, len(pre)
		bufs.lent.Add(1) // given back as a read buffer once read
	}
	if sc, ok := nc.(syscall.Conn); ok && nonBlocking {
		c.rc, _ = sc.SyscallConn()
	}
	if c.rc != nil {
		c.rc.Control(func(fd uintptr) { c.fd = int32(fd) })
	}
	return c
}

// Hold takes the socket for the connection's writer, waiting for a taker
// to give it back.
func (c *Conn) Hold() { c.hold.Lock() }

// Unhold lets the socket go: the writer has flushed what it wrote and
// stops or waits for work.
func (c *Conn) Unhold() { c.hold.Unlock() }

// TryTake takes the socket in the writer's place, never waiting: it fails
// when the writer (or another taker) holds it, a write is under way, bytes
// are owed or the socket cannot be written without parking (no RawConn:
// TLS, net.Pipe). On success the taker writes with Text and Ping and must
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
// lets the socket go. It reports whether a writer must come: bytes are
// owed, or the write failed and the writer must meet the error.
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
func (c *Conn) Text(p []byte) error { return c.frame(0x81, p) }

// Ping adds a ping with no payload to the holder's batch: the peer's pong
// (PongSince) says it still reads.
func (c *Conn) Ping() error { return c.frame(0x89, nil) }

// frame adds one final frame of opcode byte b0 (FIN set) with payload p
// to the batch.
func (c *Conn) frame(b0 byte, p []byte) error {
	if c.batch == nil {
		c.batch = c.bufs.batches.Get().(*[]byte)
		*c.batch = (*c.batch)[:0]
	} else if !c.taken && len(*c.batch)+maxHeader+len(p) > maxBatch {
		if err := c.Flush(); err != nil {
			return err
		}
		return c.frame(b0, p)
	}
	*c.batch = append(appendHeader(*c.batch, b0, len(p)), p...)
	return nil
}

// Flush writes, for the writer, what is owed and then the batch, waiting
// for the socket at most the write timeout: a socket that takes none of
// it for that long fails with os.ErrDeadlineExceeded (R12's slow
// consumer).
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

// PongSince reports whether a pong was read at t or later.
func (c *Conn) PongSince(t time.Time) bool { return c.pongAt.Load() >= t.UnixNano() }

// Write is the library's: its control frames, each in one Write. Pongs
// over the budget are dropped (read.go).
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if isPong(p) && !c.pongs.allow(time.Now()) {
		return len(p), nil
	}
	if isClose(p) {
		c.in.closeSent.Store(true) // the library's close reads for the answer now (read.go)
	}
	return c.writeLocked(p)
}

// LocalAddr and RemoteAddr are the socket's.
func (c *Conn) LocalAddr() net.Addr  { return c.nc.LocalAddr() }
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// errOwnDeadline refuses a write deadline set from outside: the Conn
// bounds its writes itself (writeLocked).
var errOwnDeadline = errors.New("sock: the write deadline is the Conn's own")

// SetReadDeadline is the socket's.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.nc.SetReadDeadline(t) }

// SetWriteDeadline and SetDeadline are refused with an error: every write
// is bounded by the Conn's timeout already, and a deadline set from
// outside would outlast or cut its own.
func (c *Conn) SetWriteDeadline(time.Time) error { return errOwnDeadline }
func (c *Conn) SetDeadline(time.Time) error      { return errOwnDeadline }

// writeLocked writes what is owed, then p, waiting for the socket as long
// as the write timeout allows.
func (c *Conn) writeLocked(p []byte) (int, error) {
	if c.werr != nil {
		return 0, c.werr
	}
	if c.rc == nil {
		if err := c.moveDeadline(); err != nil {
			return 0, err
		}
	}
	if c.owed != nil {
		_, err := c.writeAll((*c.owed)[c.owedOff:])
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
	return c.writeAll(p)
}

// moveDeadline, for a socket without a RawConn, moves the write deadline
// only when less than timeout of it is left: a blocked write is closed
// after between timeout and timeout + 1/8 of it, and a busy socket moves
// its deadline (the runtime's timer work) about once per timeout/8.
func (c *Conn) moveDeadline() error {
	if now := time.Now(); time.Unix(0, c.deadline).Sub(now) < c.timeout {
		d := now.Add(c.timeout + c.timeout/8)
		if err := c.nc.SetWriteDeadline(d); err != nil {
			return err
		}
		c.deadline = d.UnixNano()
	}
	return nil
}

// writeAll writes p whole. Through the RawConn it sets no deadline on the
// socket (a deadline left set would refuse a taker's later write, and its
// timer would run for an idle connection): only once the socket is full
// does it arm expiry, which closes the socket when the write timeout
// passes; the write then fails with os.ErrDeadlineExceeded.
func (c *Conn) writeAll(p []byte) (int, error) {
	if c.rc == nil {
		n, err := c.nc.Write(p)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.blocked.Store(2) // TimedOut
		}
		return n, err
	}
	c.rawBuf, c.rawN, c.rawErr, c.rawFull = p, 0, nil, true
	err := c.rc.Write(c.writer())
	n, werr := c.rawN, c.rawErr
	c.rawBuf, c.rawErr = nil, nil
	if fired := c.unblock(); fired {
		return n, os.ErrDeadlineExceeded
	}
	if err == nil {
		err = werr
	}
	if err != nil {
		return n, &net.OpError{Op: "write", Net: "tcp", Addr: c.nc.RemoteAddr(), Err: err}
	}
	return n, nil
}

// writer is rc.Write's callback, bound once.
func (c *Conn) writer() func(fd uintptr) bool {
	if c.rawWrite == nil {
		c.rawWrite = c.writeFunc
	}
	return c.rawWrite
}

// writeFunc is rc.Write's callback. For writeAll (rawFull) it write(2)s
// until rawBuf is written, asking to wait for the socket when it is full;
// for a taker it makes one write(2) of rawBuf, never asking to wait (the
// writer does that for what is left).
func (c *Conn) writeFunc(fd uintptr) bool {
	if !c.rawFull {
		c.rawN, c.rawErr = writeNonBlocking(fd, c.rawBuf)
		return true
	}
	for c.rawN < len(c.rawBuf) {
		n, err := writeNonBlocking(fd, c.rawBuf[c.rawN:])
		if n > 0 {
			c.rawN += n
		}
		switch {
		case err == nil:
		case errors.Is(err, syscall.EINTR):
		case errors.Is(err, syscall.EAGAIN):
			c.block()
			return false
		default:
			c.rawErr = err
			return true
		}
	}
	return true
}

// block arms the write timeout for a write the full socket holds up.
func (c *Conn) block() {
	if !c.blocked.CompareAndSwap(0, 1) {
		return
	}
	if c.expiry == nil {
		c.expiry = time.AfterFunc(c.timeout, c.expire)
		return
	}
	c.expiry.Reset(c.timeout)
}

// expire is the write timeout of a blocked write: the socket is closed,
// which ends the write (R12's slow consumer).
func (c *Conn) expire() {
	if c.blocked.CompareAndSwap(1, 2) {
		c.nc.Close()
	}
}

// TimedOut reports whether a write waited for the socket for the write
// timeout (the socket was then closed).
func (c *Conn) TimedOut() bool { return c.blocked.Load() == 2 }

// unblock ends a write's timeout; fired reports that it had expired.
func (c *Conn) unblock() (fired bool) {
	switch c.blocked.Load() {
	case 0:
		return false
	case 1:
		if c.blocked.CompareAndSwap(1, 0) {
			c.expiry.Stop()
			return false
		}
	}
	c.werr = os.ErrDeadlineExceeded // the socket is closed: every later write fails
	return true
}

// writeRawLocked writes b (a pool buffer, which it keeps) in one write(2)
// that never parks; what the socket did not take becomes owed. It reports
// whether the writer must act.
func (c *Conn) writeRawLocked(b *[]byte) bool {
	c.rawBuf, c.rawFull = *b, false
	err := c.rc.Write(c.writer())
	n, werr := c.rawN, c.rawErr
	c.rawBuf, c.rawErr = nil, nil
	switch {
	case err == nil && werr == nil && n == len(*b):
		c.put(b)
		return false
	case errors.Is(err, os.ErrDeadlineExceeded):
		// A write deadline on the socket refused to start: nothing was
		// written; the writer writes it.
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

// put gives b back to the pool unless a large batch made it large.
func (c *Conn) put(b *[]byte) {
	if cap(*b) <= maxBatch+maxHeader+4096 {
		*b = (*b)[:0]
		c.bufs.batches.Put(b)
	}
}

// appendHeader appends the header of an unmasked frame whose first byte
// is b0, with an n-byte payload.
func appendHeader(b []byte, b0 byte, n int) []byte {
	switch {
	case n < 126:
		return append(b, b0, byte(n))
	case n <= 0xffff:
		return append(b, b0, 126, byte(n>>8), byte(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, b0, 127), uint64(n))
	}
}
