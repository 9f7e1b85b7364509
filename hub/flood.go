package hub

import (
	"encoding/binary"
	"net"
	"sync/atomic"
	"time"
)

// Frames that do not end a message with data — pings, pongs, zero-length
// frames, the fragments before a message's last — never reach the hub's
// reader one by one: coder/websocket answers pings and joins
// fragments inside its own reader, so the per-message rate and size limits
// never see them, and a client sending 50,000 empty pings a second held a
// core. The hub therefore scans the frame headers of the byte stream under
// the library (corkConn.Read) and counts those frames against a token
// bucket per connection. Over it, the connection is asked to close with
// 1008 and nothing more is read from it: no pong is written for the rest
// of the flood (each was a write), the client's own socket fills, and
// whatever it sent is discarded unparsed when the socket is closed
// (corkConn.Close). Measured in e2e.TestHostileSoak: a flooder that redials
// at once went from ~9 closes a second to ~1, and the normal load's events
// per second from half to all of its quiet rate.

// Budget of message-less frames per connection: a burst a real client never
// needs (it pings every few seconds), refilled at a rate no flood reaches.
// Every frame of the burst is parsed by the library and every ping
// answered (pong.go); with a flooder dialling again at once, 4096 frames a
// connection were a quarter of a core of the gateway in
// e2e.TestHostileSoak, so the burst is 256.
const (
	floodBurst = 256
	floodRate  = 100 // per second
)

// frameScanner follows WebSocket frame boundaries through a byte stream
// cut anywhere. Owned by the connection's reading goroutine.
type frameScanner struct {
	hdr  [14]byte // a frame header being collected
	hn   int      // bytes of hdr held
	skip uint64   // payload bytes left of the current frame
}

// scan consumes p and returns how many frames that do not end a message
// with data (control frames, zero-length frames, fragments before a
// message's last) it completed the header of.
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
		// Only a data frame that ends a message with bytes in it is left to
		// the per-message limits; each fragment before it is a frame the
		// library parses too (issue 33 B5: 1-byte fragments).
		if op, fin := s.hdr[0]&0x0F, s.hdr[0]&0x80 != 0; op >= 0x8 || length == 0 || !fin {
			n++
		}
		s.skip, s.hn = length, 0
	}
	return n
}

// floodGuard is a connection's budget of message-less frames. Owned by the
// reading goroutine, but for onFlood, which is set before reads begin.
type floodGuard struct {
	scan    frameScanner
	tokens  float64
	last    time.Time
	flooded atomic.Bool // onFlood was called; read by linger too
	onFlood func()      // asks for the 1008 close; nil: nothing to ask yet
}

// observe accounts for the bytes p just read at now. It reports false
// once the budget is spent (onFlood has asked for the close): reads should
// stop.
func (g *floodGuard) observe(p []byte, now func() time.Time) bool {
	n := g.scan.scan(p)
	if n == 0 {
		return true
	}
	t := now()
	if g.last.IsZero() {
		g.tokens = floodBurst
	} else {
		g.tokens = min(floodBurst, g.tokens+t.Sub(g.last).Seconds()*floodRate)
	}
	g.last = t
	g.tokens -= float64(n)
	if g.tokens >= 0 {
		return true
	}
	if g.onFlood != nil && !g.flooded.Swap(true) {
		g.onFlood()
	}
	return false
}

// Read reads through the flood guard: first what net/http had buffered
// before the hijack, then the socket.
func (c *corkConn) Read(p []byte) (int, error) {
	if c.stalled {
		<-c.closed // until the connection is closed: the flood costs no more reads
		return 0, net.ErrClosed
	}
	select {
	case <-c.closed: // the socket is lingering (Close): its bytes are discarded
		return 0, net.ErrClosed
	default:
	}
	var n int
	var err error
	if len(c.pre) > 0 {
		n = copy(p, c.pre)
		c.pre = c.pre[n:]
	} else {
		n, err = c.Conn.Read(p)
	}
	if !c.flood.observe(p[:n], time.Now) {
		// Nor is the chunk that spent the budget handed on: the library
		// would parse every frame of it and answer every ping (up to 4 KiB
		// of pings, 682 more frames than the budget).
		c.stalled = true
		<-c.closed
		return 0, net.ErrClosed
	}
	return n, err
}

// closeLinger bounds how long a closed socket goes on discarding the
// peer's bytes before it is released (Close).
const closeLinger = time.Second

// Close ends a stalled Read and closes the socket gracefully. Closing a TCP
// socket that holds unread bytes (a flood the guard stopped reading, the
// rest of a message over the read limit) makes the kernel send RST and drop
// what is still queued to send: the close frame just written, stuck behind
// the pongs of the flood, was lost and the client saw EOF or a reset
// instead of 1008. So Close shuts down the write side, which sends FIN
// after every byte written, and a goroutine discards what the peer still
// sends until it closes too or closeLinger passes, then releases the socket.
func (c *corkConn) Close() error {
	first := false
	c.closeOnce.Do(func() { close(c.closed); first = true })
	if !first {
		return net.ErrClosed
	}
	hc, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok {
		return c.Conn.Close()
	}
	c.mu.Lock() // after a write in progress
	err := hc.CloseWrite()
	c.mu.Unlock()
	if err != nil {
		return c.Conn.Close()
	}
	go c.linger()
	return nil
}

// linger discards the peer's bytes for at most closeLinger, then closes
// the socket. A Read of the library blocked on the socket meanwhile ends
// with the peer's close or the deadline. A flooder's bytes are not read
// at all: it goes on sending for the whole linger, and reading that (4 KiB
// a syscall) was a third of the gateway's CPU in e2e.TestHostileSoak.
// Unread, the flood fills the socket buffers and TCP stops the sender; the
// close frame, written before the FIN, reaches it all the same.
func (c *corkConn) linger() {
	defer c.Conn.Close()
	if c.flood.flooded.Load() {
		t := time.NewTimer(closeLinger)
		defer t.Stop()
		<-t.C
		return
	}
	if c.Conn.SetReadDeadline(time.Now().Add(closeLinger)) != nil {
		return
	}
	var buf [4096]byte
	for {
		if _, err := c.Conn.Read(buf[:]); err != nil {
			return
		}
	}
}

// floodHold is how long a connection closed for flooding keeps its address
// and member slots (Config.MaxConnsPerIP, MaxConnsPerMember) after it
// ends. A flooder that dials again at once gets a fresh budget per
// connection, so the caps bound its connections at once but not per
// second; held, the slots bound it to MaxConnsPerMember connections (16 by
// default) per floodHold per member, and MaxConnsPerIP per address, after
// which its upgrades are refused (429) before a token is even read for
// the address cap. A real client never floods, so it never waits.
const floodHold = 10 * time.Second

// holdAfterFlood reports whether rv's connection was closed for flooding;
// if so, its address and member slots are given back after floodHold
// instead of now.
func (rv *reservation) holdAfterFlood() bool {
	if rv.cc == nil || !rv.cc.flood.flooded.Load() || (rv.ipKey == "" && rv.mKey == "") {
		return false
	}
	time.AfterFunc(floodHold, rv.releaseSlots)
	return true
}
