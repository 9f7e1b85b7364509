package sock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Accept upgrades the request with coder/websocket over a Conn wrapping
// the hijacked socket (see New) and returns both. opts.OnPingReceived is
// the Conn's: a ping whose pong would be over budget is not answered.
func Accept(w http.ResponseWriter, r *http.Request, opts websocket.AcceptOptions, timeout time.Duration, pool *sync.Pool) (*websocket.Conn, *Conn, error) {
	// The library keeps OnPingReceived for the connection's life: it must
	// not keep the hijacker, and with it the HTTP server's response, request
	// and buffers.
	p := &pinger{}
	hw := &hijacker{ResponseWriter: w, timeout: timeout, pool: pool, ping: p}
	opts.OnPingReceived = p.onPing
	ws, err := websocket.Accept(hw, r, &opts)
	if err != nil {
		return nil, nil, err
	}
	return ws, hw.c, nil
}

// Sizes of the buffers the library reads and writes through, for the
// connection's whole life. It writes control frames alone (the hub writes
// its messages with Text), each of which fits libWriteBuf (2 + 125 bytes).
// It reads the client's frames, a few hundred bytes each.
const (
	libReadBuf  = 1024
	libWriteBuf = 256
)

// hijacker hands websocket.Accept the hijacked socket wrapped in a Conn.
type hijacker struct {
	http.ResponseWriter
	timeout time.Duration
	pool    *sync.Pool
	c       *Conn // set by Hijack
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
	w.c = New(nc, bytes.Clone(b), w.timeout, w.pool)
	w.ping.c = w.c
	return w.c, bufio.NewReadWriter(bufio.NewReaderSize(w.c, libReadBuf), bufio.NewWriterSize(w.c, libWriteBuf)), nil
}

// pinger holds the library's OnPingReceived.
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
	last   time.Time
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
	if b.last.IsZero() {
		b.tokens = pongBurst
	} else {
		b.tokens = min(pongBurst, b.tokens+now.Sub(b.last).Seconds()*pongRate)
	}
	b.last = now
}

// due reports whether allow would grant a pong at now, taking nothing.
func (b *pongBudget) due(now time.Time) bool {
	return b.last.IsZero() || b.tokens+now.Sub(b.last).Seconds()*pongRate >= 1
}

// isPong reports whether p is exactly one pong frame as a server writes it
// (unmasked, payload under 126 bytes): how the library writes a pong.
func isPong(p []byte) bool {
	return len(p) >= 2 && p[0] == 0x8A && p[1] < 126 && len(p) == 2+int(p[1])
}

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

// reader is the read side of a Conn, the library's reader's alone but for
// closed, flooded and onFlood (set before reads begin).
type reader struct {
	pre       []byte // what the HTTP server read past the request
	scan      frameScanner
	tokens    float64
	last      time.Time
	stalled   bool
	flooded   atomic.Bool
	onFlood   func()
	closed    chan struct{} // closed by Close
	closeOnce sync.Once
}

// SetOnFlood sets what asks for the 1008 close when the frame budget is
// spent. Call it before the library reads.
func (c *Conn) SetOnFlood(f func()) { c.in.onFlood = f }

// Flooded reports whether the connection spent its frame budget.
func (c *Conn) Flooded() bool { return c.in.flooded.Load() }

// observe accounts for the bytes p just read at now; false once the budget
// is spent: reads stop.
func (r *reader) observe(p []byte, now func() time.Time) bool {
	n := r.scan.scan(p)
	if n == 0 {
		return true
	}
	t := now()
	if r.last.IsZero() {
		r.tokens = floodBurst
	} else {
		r.tokens = min(floodBurst, r.tokens+t.Sub(r.last).Seconds()*floodRate)
	}
	r.last = t
	r.tokens -= float64(n)
	if r.tokens >= 0 {
		return true
	}
	if r.onFlood != nil && !r.flooded.Swap(true) {
		r.onFlood()
	}
	return false
}

// Read reads through the flood guard: first what the server had read, then
// the socket.
func (c *Conn) Read(p []byte) (int, error) {
	r := &c.in
	if r.stalled {
		<-r.closed // until the connection is closed: the flood costs no more reads
		return 0, net.ErrClosed
	}
	select {
	case <-r.closed: // lingering (Close): its bytes are discarded
		return 0, net.ErrClosed
	default:
	}
	var n int
	var err error
	if len(r.pre) > 0 {
		n = copy(p, r.pre)
		r.pre = r.pre[n:]
	} else {
		n, err = c.nc.Read(p)
	}
	if !r.observe(p[:n], time.Now) {
		// Nor is the chunk that spent the budget handed on: the library
		// would parse every frame of it and answer every ping.
		r.stalled = true
		<-r.closed
		return 0, net.ErrClosed
	}
	return n, err
}

// frameScanner follows WebSocket frame boundaries through a byte stream
// cut anywhere.
type frameScanner struct {
	hdr  [14]byte // a frame header being collected
	hn   int      // bytes of hdr held
	skip uint64   // payload bytes left of the current frame
}

// scan consumes p and returns how many frames that do not end a message
// with data it completed the header of.
func (s *frameScanner) scan(p []byte) (n int) {
	for len(p) > 0 {
		if s.skip > 0 {
			k := min(uint64(len(p)), s.skip)
			s.skip -= k
			p = p[k:]
			continue
		}
		s.hdr[s.hn] = p[0]
		s.hn++
		p = p[1:]
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
			n++
		}
		s.skip, s.hn = length, 0
	}
	return n
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
	first := false
	c.in.closeOnce.Do(func() { close(c.in.closed); first = true })
	if !first {
		return net.ErrClosed
	}
	hc, ok := c.nc.(interface{ CloseWrite() error })
	if !ok {
		return c.nc.Close()
	}
	c.mu.Lock() // after a write in progress
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
