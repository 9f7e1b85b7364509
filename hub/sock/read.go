package sock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

// Accept upgrades the request with coder/websocket over a Conn wrapping
// the hijacked socket (see New) and returns both. opts.OnPingReceived and
// OnPongReceived are the Conn's: a ping whose pong would be over budget is
// not answered, and a pong is recorded (PongSince).
func Accept(w http.ResponseWriter, r *http.Request, opts websocket.AcceptOptions, timeout time.Duration, bufs *Buffers) (*websocket.Conn, *Conn, error) {
	// The library keeps the callbacks for the connection's life: they must
	// not keep the hijacker, and with it the HTTP server's response,
	// request and buffers.
	p := &pinger{}
	hw := &hijacker{ResponseWriter: w, timeout: timeout, bufs: bufs, ping: p}
	opts.OnPingReceived, opts.OnPongReceived = p.onPing, p.onPong
	ws, err := websocket.Accept(hw, r, &opts)
	if err != nil {
		return nil, nil, err
	}
	// The library puts what the hijacked reader had buffered in front of
	// the socket with an io.MultiReader it keeps for the connection's life;
	// ours buffered nothing (the Conn holds those bytes), so its reader
	// reads the Conn directly again.
	hw.br.Reset(hw.c)
	return ws, hw.c, nil
}

// Sizes of the buffers the library reads and writes through, for the
// connection's whole life. It reads through a Conn, which buffers what the
// socket gives in a borrowed read buffer and hands the library no byte
// past the frame it reads, so its own reader needs bufio's least. It
// writes control frames alone (the hub writes its messages with Text),
// each of which fits libWriteBuf (2 + 125 bytes) and so goes in one Write.
const (
	libReadBuf  = 16
	libWriteBuf = 128
)

// hijacker hands websocket.Accept the hijacked socket wrapped in a Conn.
type hijacker struct {
	http.ResponseWriter
	timeout time.Duration
	bufs    *Buffers
	c       *Conn         // set by Hijack
	br      *bufio.Reader // the library's reader, set by Hijack
	ping    *pinger
}

func (w *hijacker) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// The 101 response is still in the server's writer.
	if err := brw.Writer.Flush(); err != nil {
		nc.Close()
		return nil, nil, err
	}
	// What the server read past the request passes the flood guard too. Its
	// buffers are left behind for smaller ones (a buffer the
	// connection holds for life is paid once per spectator).
	b, _ := brw.Reader.Peek(brw.Reader.Buffered())
	w.c = New(nc, bytes.Clone(b), w.timeout, w.bufs)
	w.ping.c = w.c
	w.br = bufio.NewReaderSize(w.c, libReadBuf)
	return w.c, bufio.NewReadWriter(w.br, bufio.NewWriterSize(w.c, libWriteBuf)), nil
}

// pinger holds the library's OnPingReceived and OnPongReceived.
type pinger struct{ c *Conn }

// onPing is the library's OnPingReceived: false skips the pong a Write
// would drop anyway, sparing the library its framing and locks per ping
// of a flood.
func (p *pinger) onPing(context.Context, []byte) bool {
	if p.c == nil {
		return true
	}
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return p.c.pongs.due(time.Now())
}

// onPong is the library's OnPongReceived: the peer still reads.
func (p *pinger) onPong(context.Context, []byte) {
	if p.c != nil {
		p.c.pongAt.Store(time.Now().UnixNano())
	}
}

// Pongs are written by the library's reader, one per ping read. RFC 6455
// §5.5.3 lets an endpoint answer only the latest of several pings; a Conn
// writes at most pongBurst at once, refilled at pongRate a second, and
// drops the rest. A real client pings every few seconds and never sees a
// pong dropped.
const (
	pongBurst = 32
	pongRate  = 8 // per second
)

// pongBudget is a connection's token bucket of pongs (Conn.mu held).
type pongBudget struct {
	tokens float64
	last   int64 // unix ns of the last refill; 0: none
}

// allow takes a token at now, if there is one.
func (b *pongBudget) allow(now time.Time) bool {
	if !b.due(now) {
		b.refill(now)
		return false
	}
	b.refill(now)
	b.tokens--
	return true
}

func (b *pongBudget) refill(now time.Time) {
	if b.last == 0 {
		b.tokens = pongBurst
	} else {
		b.tokens = min(pongBurst, b.tokens+now.Sub(time.Unix(0, b.last)).Seconds()*pongRate)
	}
	b.last = now.UnixNano()
}

// due reports whether allow would grant a pong at now, taking nothing.
func (b *pongBudget) due(now time.Time) bool {
	return b.last == 0 || b.tokens+now.Sub(time.Unix(0, b.last)).Seconds()*pongRate >= 1
}

// isPong reports whether p is exactly one pong frame as a server writes it
// (unmasked, payload under 126 bytes): how the library writes a pong.
func isPong(p []byte) bool {
	return len(p) >= 2 && p[0] == 0x8A && p[1] < 126 && len(p) == 2+int(p[1])
}

// isClose reports whether p starts a close frame as a server writes it.
func isClose(p []byte) bool { return len(p) >= 2 && p[0] == 0x88 }

// Frames that do not end a message with data (pings, pongs, zero-length
// frames, the fragments before a message's last) never reach the hub's
// reader one by one: the library answers pings and joins fragments itself,
// so the hub's per-message limits never see them. Read therefore follows
// the frame headers of the byte stream and counts those frames against a
// budget per connection; past it the hub is asked to close with 1008
// (SetOnFlood) and nothing more is read: no pong is written for the rest of
// the flood, the client's own socket fills, and what it sent is discarded
// unparsed when the socket is closed.
const (
	floodBurst = 256
	floodRate  = 100 // per second
)

// ErrIdle is what NextMessage returns when the library, having answered
// a control frame, would wait for the client's next frame: the caller
// waits instead (Wait), outside the library.
var ErrIdle = errors.New("sock: no message yet")

// reader is the read side of a Conn. The client's bytes wait in buf (a
// read buffer borrowed from Buffers while it holds any, given back once
// read; first what the HTTP server read past the request); Read hands the
// library no byte past the frame it is in, so the library's own buffer
// never holds a byte of the next frame, and between messages every unread
// byte is here.
//
// Reading the socket (Read's, Fill's or Wait's) is done under fillMu, one
// at a time, and what a read got is put in buf under mu while the
// descriptor is still held, so bytes are buffered in the order read. Lock
// order: fillMu, then the descriptor's read lock, then mu; mu is never held
// while waiting for the socket.
type reader struct {
	fillMu   sync.Mutex // held while reading the socket; guards the fill's arguments and results
	mu       sync.Mutex // guards the buffer and the frame state: all but fillMu's and the atomics
	buf      *[]byte    // (*buf)[off:end] unread; nil: none
	off, end int
	// idle: the hub's reader asks the library for a message (NextMessage):
	// a read at a frame boundary with nothing buffered gets errIdle,
	// unless a close frame was written (the library's close then reads).
	idle      bool
	drained   bool // the last read took less than it could: the socket was empty
	closeSent atomic.Bool
	// rc.Read's callbacks, bound once (readFunc, peekFunc), their mode and
	// result (fillMu held).
	rawRead func(fd uintptr) bool
	peek    func(fd uintptr) bool
	tryOnly bool // readFunc: do not wait for the socket
	rerr    error
	scan    frameScanner
	tokens  float64
	last    int64 // unix ns of the last refill of tokens; 0: none
	stalled bool
	flooded atomic.Bool
	onFlood func()
	// closed is set by Close; a read stalled by the flood guard waits for
	// it on closeWake, made only then (a channel per connection is not
	// paid for one in a thousand).
	closed    atomic.Bool
	closeWake atomic.Pointer[chan struct{}]
	// parked: the hub's poller watches the socket in place of a reader
	// (Park), until bytes come or Close (unpark).
	parked bool
}

// waitClosed returns once Close has been called.
func (r *reader) waitClosed() {
	ch := make(chan struct{})
	if !r.closeWake.CompareAndSwap(nil, &ch) {
		p := r.closeWake.Load()
		if *p == nil {
			return // Close's mark: it came first
		}
		ch = *p // another stalled read's
	}
	if r.closed.Load() {
		return
	}
	<-ch
}

// SetOnFlood sets what asks for the 1008 close when the frame budget is
// spent. Call it before the library reads.
func (c *Conn) SetOnFlood(f func()) { c.in.onFlood = f }

// Flooded reports whether the connection spent its frame budget.
func (c *Conn) Flooded() bool { return c.in.flooded.Load() }

// count spends n frames of the budget at now; false once it is spent.
func (r *reader) count(n int, now func() time.Time) bool {
	if n == 0 {
		return true
	}
	t := now()
	if r.last == 0 {
		r.tokens = floodBurst
	} else {
		r.tokens = min(floodBurst, r.tokens+t.Sub(time.Unix(0, r.last)).Seconds()*floodRate)
	}
	r.last = t.UnixNano()
	r.tokens -= float64(n)
	if r.tokens >= 0 {
		return true
	}
	if r.onFlood != nil && !r.flooded.Swap(true) {
		r.onFlood()
	}
	return false
}

// pending is what is buffered, unread. r.mu held.
func (r *reader) pending() []byte {
	if r.buf != nil {
		return (*r.buf)[r.off:r.end]
	}
	return nil
}

// consume drops n read bytes, giving the read buffer back once empty.
// r.mu held.
func (r *reader) consume(n int, bufs *Buffers) {
	if r.off += n; r.off == r.end {
		bufs.putRead(r.buf)
		r.buf, r.off, r.end = nil, 0, 0
	}
}

// Read reads through the flood guard, handing on at most the rest of the
// frame the library is in.
func (c *Conn) Read(p []byte) (int, error) {
	r := &c.in
	for {
		r.mu.Lock()
		if err := r.usable(); err != nil {
			stalled := r.stalled
			r.mu.Unlock()
			if stalled {
				r.waitClosed() // the flood costs no more reads
			}
			return 0, err
		}
		if len(p) == 0 {
			r.mu.Unlock()
			return 0, nil
		}
		if len(r.pending()) > 0 {
			return c.handOn(p) // unlocks r.mu
		}
		// Between messages, the socket is read without waiting (and not at
		// all when the last read emptied it: Wait reads).
		try := r.idle && !r.closeSent.Load() && r.scan.atBoundary()
		if try && r.drained {
			r.mu.Unlock()
			return 0, errIdle
		}
		r.mu.Unlock()
		if err := c.fill(try); err != nil {
			return 0, err
		}
		if try {
			r.mu.Lock()
			empty := len(r.pending()) == 0
			r.mu.Unlock()
			if empty {
				return 0, errIdle
			}
		}
	}
}

// handOn copies into p what is buffered, at most to the end of the frame
// in progress, through the flood guard. r.mu held; it unlocks it.
func (c *Conn) handOn(p []byte) (int, error) {
	r := &c.in
	avail := r.pending()
	n, frames := r.scan.scanFrame(avail[:min(len(p), len(avail))])
	copy(p, avail[:n])
	r.consume(n, c.bufs)
	if !r.count(frames, time.Now) {
		// Nor is the frame that spent the budget handed on: the library
		// would parse it and answer it if it is a ping.
		r.stalled = true
		if r.buf != nil {
			c.bufs.putRead(r.buf)
			r.buf = nil
		}
		r.mu.Unlock()
		r.waitClosed()
		return 0, net.ErrClosed
	}
	r.mu.Unlock()
	return n, nil
}

// The hub's reader waits for the client's bytes in Wait or Fill, with
// neither the library nor a buffer on the waiting goroutine's stack (a
// goroutine's stack keeps the size its deepest call needed), and asks the
// library for a message (NextMessage) only once bytes are in.

// NextMessage is the hub reader's ws.Reader, called once Wait or Fill
// returned. When the library, having answered a control frame, would wait
// for the client's next frame inside it, it is stopped: NextMessage
// returns ErrIdle, and the caller waits again.
func (c *Conn) NextMessage(ws *websocket.Conn) (websocket.MessageType, io.Reader, error) {
	c.setIdle(true)
	typ, rd, err := ws.Reader(context.Background())
	c.setIdle(false)
	if errors.Is(err, errIdle) {
		return 0, nil, ErrIdle
	}
	return typ, rd, err
}

func (c *Conn) setIdle(idle bool) {
	c.in.mu.Lock()
	c.in.idle = idle
	c.in.mu.Unlock()
}

// SetWake sets what a parked Conn runs, on a fresh goroutine, once the
// client's bytes (or the end) are in its socket or it is closed: the
// hub's reader, which then waits with Wait before it parks again. Call it
// before the first Park.
func (c *Conn) SetWake(f func()) { c.wake = f }

// Park hands the wait for the client's next bytes to the hub's poller, so
// that no goroutine, and no stack, waits for an idle connection. It
// reports false, parking nothing, when bytes are buffered, the Conn is
// closed or closing, or its socket cannot be watched (no descriptor, not
// Linux, no wake); the caller then waits itself (Wait). After true the
// caller must not read: the wake reads.
func (c *Conn) Park() bool {
	if c.fd < 0 || c.wake == nil || c.bufs.poll == nil {
		return false
	}
	r := &c.in
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.parked || r.usable() != nil || len(r.pending()) > 0 || r.closeSent.Load() || !r.scan.atBoundary() {
		return false
	}
	if !c.bufs.poll.add(c) {
		return false
	}
	r.parked = true
	return true
}

// unpark takes a parked Conn off the poller and runs its wake; it does
// nothing to a Conn not parked.
func (c *Conn) unpark() {
	r := &c.in
	r.mu.Lock()
	woke := r.parked
	if woke {
		r.parked = false
		c.bufs.poll.remove(c)
	}
	r.mu.Unlock()
	if woke {
		go c.wake()
	}
}

// Parked reports whether the poller waits for the client in place of a
// reader (Park).
func (c *Conn) Parked() bool {
	c.in.mu.Lock()
	defer c.in.mu.Unlock()
	return c.in.parked
}

// errIdle is ErrIdle as the library's read gets it.
var errIdle = errors.New("sock: no frame yet")

// SkipPongs takes the pongs at the front of what the client sent and
// records them as OnPongReceived does, so the pong to each of the node's
// pings costs no library read (its context, locks and deep stack). Call it
// only between messages. It reports whether it took some and nothing else
// is buffered: the caller then waits again.
func (c *Conn) SkipPongs() bool {
	r := &c.in
	r.mu.Lock()
	defer r.mu.Unlock()
	took := false
	for r.usable() == nil && !r.closeSent.Load() && r.scan.atBoundary() {
		p := r.pending()
		// A client's pong: FIN and opcode 0xA, masked, a payload under 126.
		if len(p) < 6 || p[0] != 0x8A || p[1]&0x80 == 0 || p[1]&0x7F > 125 {
			break
		}
		n := 6 + int(p[1]&0x7F)
		if len(p) < n {
			break
		}
		if !r.count(1, time.Now) {
			// As handOn: nothing more is read until the close.
			r.stalled = true
			if r.buf != nil {
				c.bufs.putRead(r.buf)
				r.buf, r.off, r.end = nil, 0, 0
			}
			return false
		}
		r.consume(n, c.bufs)
		c.pongAt.Store(time.Now().UnixNano())
		took = true
	}
	return took && len(r.pending()) == 0
}

// Buffered reports whether client bytes are buffered, unread by the
// library.
func (c *Conn) Buffered() bool {
	c.in.mu.Lock()
	defer c.in.mu.Unlock()
	return len(c.in.pending()) > 0
}

// ready is nil when bytes are buffered, errNone when none are and reads
// may go on, else the error a read meets.
func (c *Conn) ready() error {
	r := &c.in
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if len(r.pending()) > 0 {
		return nil
	}
	return errNone
}

var errNone = errors.New("sock: nothing buffered")

// Fill returns once the client's bytes are buffered, reading the socket
// (into a borrowed buffer) if none are.
func (c *Conn) Fill() error {
	for {
		if err := c.ready(); err != errNone {
			return err
		}
		if err := c.fill(false); err != nil {
			return err
		}
	}
}

// Wait returns once the client's bytes are in: buffered, or waiting in
// the socket. Unlike Fill, it holds no buffer while it waits and never
// makes one (the allocator can go deep, and a goroutine's stack keeps the
// depth it needed): it reads into a pooled buffer when the pool has one,
// and else only peeks, the library's next Read reading them.
func (c *Conn) Wait() error {
	if c.rc == nil {
		return c.Fill()
	}
	r := &c.in
	r.fillMu.Lock()
	defer r.fillMu.Unlock()
	if err := c.ready(); err != errNone {
		return err
	}
	if r.peek == nil {
		r.peek = c.peekFunc
	}
	if err := c.rc.Read(r.peek); err != nil {
		return &net.OpError{Op: "read", Net: "tcp", Addr: c.nc.RemoteAddr(), Err: err}
	}
	return nil
}

// peekFunc is Wait's rc.Read callback: it reads what the socket has into
// a pooled buffer, or with none in the pool peeks (the socket is then not
// drained: the library's next read takes what is there), and asks to wait
// for the socket when it has nothing.
func (c *Conn) peekFunc(fd uintptr) bool {
	if b := c.bufs.pooledRead(); b != nil {
		n, err := readNonBlocking(fd, *b)
		switch {
		case n > 0:
			c.in.put(b, n, c.bufs)
			return true
		case errors.Is(err, syscall.EAGAIN):
			c.bufs.putRead(b)
			return false
		}
		c.bufs.putRead(b) // the end, or an error: the library's next read meets it
		c.in.setDrained(false)
		return true
	}
	for {
		err := peekNonBlocking(fd)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			return false
		}
		c.in.setDrained(false)
		return true // bytes, the end, or an error the next read meets
	}
}

// put buffers n bytes just read into b, after any still buffered (a read
// made while another waited for the descriptor), and records whether the
// read emptied the socket. The descriptor is held.
func (r *reader) put(b *[]byte, n int, bufs *Buffers) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drained = n < len(*b)
	if p := r.pending(); len(p) > 0 {
		joined := append(append(make([]byte, 0, len(p)+n), p...), (*b)[:n]...)
		bufs.putRead(r.buf)
		bufs.putRead(b)
		bufs.lent.Add(1) // joined is lent as one
		b, n = &joined, len(joined)
	}
	r.buf, r.off, r.end = b, 0, n
}

func (r *reader) setDrained(d bool) {
	r.mu.Lock()
	r.drained = d
	r.mu.Unlock()
}

// usable is the error a read meets now: the flood stopped the reads, or
// the Conn is closed. r.mu held.
func (r *reader) usable() error {
	if r.stalled || r.closed.Load() {
		return net.ErrClosed // a stalled Read waits for the close
	}
	return nil
}

// fill reads what the socket has into a borrowed read buffer, waiting
// until it has some unless tryOnly. It reads nothing if another fill
// buffered bytes meanwhile.
func (c *Conn) fill(tryOnly bool) error {
	r := &c.in
	r.fillMu.Lock()
	defer r.fillMu.Unlock()
	if err := c.ready(); err != errNone {
		return err
	}
	if c.rc == nil {
		b := c.bufs.getRead()
		n, err := c.nc.Read(*b)
		if n > 0 {
			r.put(b, n, c.bufs)
			r.setDrained(false) // unknown: the next read asks
			return nil
		}
		c.bufs.putRead(b)
		if err == nil {
			err = io.ErrNoProgress
		}
		return err
	}
	if r.rawRead == nil {
		r.rawRead = c.readFunc
	}
	r.rerr, r.tryOnly = nil, tryOnly
	if err := c.rc.Read(r.rawRead); err != nil {
		return &net.OpError{Op: "read", Net: "tcp", Addr: c.nc.RemoteAddr(), Err: err}
	}
	return r.rerr
}

// readFunc is rc.Read's callback for fill: one read(2) into a borrowed
// buffer, given back at once when the socket has nothing (the goroutine
// then waits for it without one, unless tryOnly). fillMu held.
func (c *Conn) readFunc(fd uintptr) bool {
	r := &c.in
	b := c.bufs.getRead()
	for {
		n, err := readNonBlocking(fd, *b)
		switch {
		case n > 0:
			r.put(b, n, c.bufs)
			return true
		case err == nil:
			r.rerr = io.EOF
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			c.bufs.putRead(b)
			r.setDrained(true)
			return r.tryOnly
		default:
			r.rerr = &net.OpError{Op: "read", Net: "tcp", Addr: c.nc.RemoteAddr(), Err: err}
		}
		c.bufs.putRead(b)
		return true
	}
}

// frameScanner follows WebSocket frame boundaries through a byte stream
// cut anywhere.
type frameScanner struct {
	hdr  [14]byte // a frame header being collected
	hn   int      // bytes of hdr held
	skip uint64   // payload bytes left of the current frame
}

// atBoundary reports whether the bytes scanned end a frame.
func (s *frameScanner) atBoundary() bool { return s.hn == 0 && s.skip == 0 }

// scanFrame consumes p up to the end of the frame in progress, if it ends
// within p, and returns how many bytes it consumed and whether the frame
// (1) does not end a message with data, once its header is complete.
func (s *frameScanner) scanFrame(p []byte) (consumed, frames int) {
	for len(p) > 0 {
		if s.skip > 0 {
			k := min(uint64(len(p)), s.skip)
			s.skip -= k
			consumed += int(k)
			return consumed, frames // the frame ends here, or p does
		}
		s.hdr[s.hn] = p[0]
		s.hn++
		p = p[1:]
		consumed++
		if s.hn < 2 {
			continue
		}
		need := 2
		switch s.hdr[1] & 0x7F {
		case 126:
			need += 2
		case 127:
			need += 8
		}
		if s.hdr[1]&0x80 != 0 { // masked: every client frame
			need += 4
		}
		if s.hn < need {
			continue
		}
		length := uint64(s.hdr[1] & 0x7F)
		switch length {
		case 126:
			length = uint64(binary.BigEndian.Uint16(s.hdr[2:4]))
		case 127:
			length = binary.BigEndian.Uint64(s.hdr[2:10])
		}
		// Only a data frame that ends a message with bytes in it is left
		// to the per-message limits (1-byte fragments were not, issue 33).
		if op, fin := s.hdr[0]&0x0F, s.hdr[0]&0x80 != 0; op >= 0x8 || length == 0 || !fin {
			frames = 1
		}
		s.skip, s.hn = length, 0
		if length == 0 {
			return consumed, frames
		}
	}
	return consumed, frames
}

// closeLinger bounds how long a closed socket goes on discarding the
// peer's bytes before it is released (Close).
const closeLinger = time.Second

// Close ends a stalled Read and closes the socket gracefully. Closing a TCP
// socket that holds unread bytes makes the kernel send RST and drop what is
// still queued to send, the close frame among it. So Close shuts down the
// write side (FIN after every byte written), and a goroutine discards what
// the peer still sends until it closes too or closeLinger passes.
func (c *Conn) Close() error {
	if c.in.closed.Swap(true) {
		return net.ErrClosed
	}
	c.unpark() // a parked reader wakes to meet the close
	if p := c.in.closeWake.Swap(new(chan struct{})); p != nil && *p != nil {
		close(*p) // a stalled Read waits on it
	}
	hc, ok := c.nc.(interface{ CloseWrite() error })
	if !ok {
		return c.nc.Close()
	}
	c.mu.Lock() // after a write in progress (a blocked one ends at the write timeout)
	err := hc.CloseWrite()
	c.mu.Unlock()
	if err != nil {
		return c.nc.Close()
	}
	go c.linger()
	return nil
}

// linger discards the peer's bytes for at most closeLinger, then closes
// the socket. A flooder's bytes are not read at all: unread, they fill
// the socket buffers and TCP stops the sender, while the close frame,
// written before the FIN, reaches it all the same.
func (c *Conn) linger() {
	defer c.nc.Close()
	if c.in.flooded.Load() {
		t := time.NewTimer(closeLinger)
		defer t.Stop()
		<-t.C
		return
	}
	if c.nc.SetReadDeadline(time.Now().Add(closeLinger)) != nil {
		return
	}
	var buf [4096]byte
	for {
		if _, err := c.nc.Read(buf[:]); err != nil {
			return
		}
	}
}
