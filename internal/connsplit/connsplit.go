// Package connsplit shares one TCP listener between two HTTP servers: each
// connection goes to one of them by the path of its first request, and a
// connection can later be handed from the first server to the second with
// the bytes it already read.
//
// The gateway serves REST from fasthttp (fiber's own server, no net/http
// conversion per request) and WebSockets and pages from net/http, which can
// hijack connections for coder/websocket. A REST client's keep-alive
// connection starts with an /api/ request and stays on fasthttp; a browser's
// or a WebSocket client's starts elsewhere and goes to net/http, which still
// serves REST through fiber's adaptor. A fasthttp connection whose client
// later asks for something else (a page, the upgrade) is handed over with
// Hand.
package connsplit

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// maxPeek is the most bytes read to find the first request's path: the
// method and the start of the path are in the first few bytes; a client
// that sends this many without a space goes to the second server, which
// answers 400.
const maxPeek = 1024

// Config configures a Splitter.
type Config struct {
	// First reports whether a connection whose first request has this
	// request-target (path and query, as sent) goes to the first server.
	// Required.
	First func(target []byte) bool
	// Timeout is how long a new connection has to send its request line;
	// one that does not is closed (slowloris). Zero: 10s.
	Timeout time.Duration
	// Refused is called once for each failed accept that the splitter
	// survives (out of descriptors, a connection aborted before it was
	// taken), e.g. to count them. nil: not counted.
	Refused func(err error)
	// Logger receives a warning about failed accepts, at most one a second
	// (with the count since the last). nil: discard.
	Logger *slog.Logger
}

// Accept back-off after a failure that is not the listener's end: like
// net/http, 5 ms doubling to 1 s, so a node out of descriptors waits for
// some to be freed instead of spinning or exiting (docs/protocol.md R32).
const (
	minBackoff = 5 * time.Millisecond
	maxBackoff = time.Second
	logEvery   = time.Second
)

// Splitter accepts from one listener and hands each connection to the
// listener of one of two servers. Its methods are safe for concurrent use.
type Splitter struct {
	ln      net.Listener
	cfg     Config
	first   *side
	second  *side
	start   sync.Once
	closeMu sync.Once
	done    chan struct{} // closed when the raw listener is

	mu     sync.Mutex // guards closed
	closed int        // sides closed
}

// New splits ln. Accepting starts at the first Accept of either side.
func New(ln net.Listener, cfg Config) (*Splitter, error) {
	if cfg.First == nil {
		return nil, errors.New("connsplit: Config.First is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Refused == nil {
		cfg.Refused = func(error) {}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Splitter{ln: ln, cfg: cfg, done: make(chan struct{})}
	s.first = &side{s: s, conns: make(chan net.Conn), done: make(chan struct{})}
	s.second = &side{s: s, conns: make(chan net.Conn), done: make(chan struct{})}
	return s, nil
}

// First is the listener of connections whose first request cfg.First chose.
func (s *Splitter) First() net.Listener { return s.first }

// Second is the listener of every other connection and of those handed over.
func (s *Splitter) Second() net.Listener { return s.second }

// Close closes the raw listener and both sides; connections already
// accepted are the servers'.
func (s *Splitter) Close() error {
	s.first.Close()
	s.second.Close()
	return s.closeRaw()
}

func (s *Splitter) closeRaw() error {
	var err error
	s.closeMu.Do(func() {
		err = s.ln.Close()
		close(s.done)
	})
	return err
}

// Hand gives c to the second server as if it had just been accepted, with
// read replayed before whatever c still holds. The first server must have
// let go of c (hijacked it) and must not touch it again.
func (s *Splitter) Hand(c net.Conn, read []byte) {
	raw := c
	if pc, ok := c.(*Conn); ok {
		raw = pc.Conn
		read = append(read, pc.pre...)
	}
	go s.second.push(&Conn{Conn: raw, pre: read}) // when the second server next accepts
}

// run accepts until the raw listener is closed. Any other accept error
// (EMFILE, ENFILE, ENOBUFS, ECONNABORTED, a timeout) leaves the
// connection in the kernel's queue or drops it, and run tries again after
// a back-off: the connections already served are not the listener's.
func (s *Splitter) run() {
	var backoff time.Duration
	var lastLog time.Time
	var unlogged int
	for {
		c, err := s.ln.Accept()
		if err == nil {
			backoff = 0
			go s.route(c)
			continue
		}
		if errors.Is(err, net.ErrClosed) {
			s.closeRaw()
			return
		}
		s.cfg.Refused(err)
		unlogged++
		if now := time.Now(); now.Sub(lastLog) >= logEvery {
			s.cfg.Logger.Warn("connsplit: accept failed; retrying", "err", err, "failures", unlogged)
			lastLog, unlogged = now, 0
		}
		backoff = min(max(2*backoff, minBackoff), maxBackoff)
		select {
		case <-time.After(backoff):
		case <-s.done:
			return
		}
	}
}

// route reads c's request line far enough to see its target, then hands c
// with those bytes to its side.
func (s *Splitter) route(c net.Conn) {
	if err := c.SetReadDeadline(time.Now().Add(s.cfg.Timeout)); err != nil {
		c.Close()
		return
	}
	buf := make([]byte, 0, 512)
	var target []byte
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		var ok bool
		if target, ok = requestTarget(buf); ok || len(buf) >= maxPeek {
			break
		}
		if err != nil {
			c.Close() // gone or too slow before a request line
			return
		}
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		c.Close()
		return
	}
	pc := &Conn{Conn: c, pre: buf}
	if target != nil && s.cfg.First(target) {
		s.first.push(pc)
		return
	}
	s.second.push(pc)
}

// requestTarget finds the request-target of a request line's start,
// "METHOD SP target SP": ok once the target is complete (or the line is
// long enough to say no more), with target nil when it cannot be one.
func requestTarget(b []byte) (target []byte, ok bool) {
	sp := bytes.IndexByte(b, ' ')
	if sp < 0 {
		return nil, bytes.IndexByte(b, '\n') >= 0
	}
	rest := b[sp+1:]
	if end := bytes.IndexAny(rest, " \r\n"); end >= 0 {
		return rest[:end], true
	}
	return nil, false
}

// side is one server's listener. Closing it stops its server's accepts
// and closes the connections routed to it later; closing both closes the
// raw listener. Each server shuts its own side down, in any order, and
// neither sees the other's close as an accept error.
type side struct {
	s     *Splitter
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func (l *side) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	case <-l.s.done:
		c.Close()
	}
}

func (l *side) Accept() (net.Conn, error) {
	l.s.start.Do(func() { go l.s.run() })
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-l.s.done:
		return nil, net.ErrClosed
	}
}

func (l *side) Close() error {
	both := false
	l.once.Do(func() {
		close(l.done)
		l.s.mu.Lock()
		l.s.closed++
		both = l.s.closed == 2
		l.s.mu.Unlock()
	})
	if both {
		return l.s.closeRaw()
	}
	return nil
}

func (l *side) Addr() net.Addr { return l.s.ln.Addr() }

// Conn is an accepted connection that replays the bytes read to route it.
type Conn struct {
	net.Conn
	pre []byte
}

func (c *Conn) Read(p []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(p, c.pre)
		c.pre = c.pre[n:]
		if len(c.pre) == 0 {
			c.pre = nil // let the routing buffer go
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// NetConn is the TCP connection under c.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// SyscallConn lets callers that tune sockets reach the TCP connection's.
func (c *Conn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("connsplit: the connection has no file descriptor")
}
