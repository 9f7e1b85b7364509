package hub

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub/live"
	"github.com/wsgateway/wsgateway/hub/sock"
	"github.com/wsgateway/wsgateway/proto"
)

// Close reasons (at most 123 bytes, fixed text).
const (
	reasonSlow      = "slow consumer"
	reasonGoingAway = "going away"
)

// closeRequest asks the writer to end the connection with a close frame.
type closeRequest struct {
	code   websocket.StatusCode
	reason string
	flush  bool // write the queued replies first (the error that explains the close)
}

// conn is one WebSocket connection. The reader (the handler goroutine) owns
// the fields marked "reader"; whoever holds the socket (the writer, or a
// write in its place: direct.go) owns those marked "writer".
type conn struct {
	h     *Hub
	ws    *websocket.Conn
	s     *sock.Conn // the socket under ws: every write goes through it
	out   *live.Outbox
	shard int // registry shard, set by registry.add
	// sub is the token's sub, fixed for the connection's life (auth
	// accepts only a token for the same member), so the writer may read it
	// while the reader replaces p.
	sub string
	// submitter is the store's order key for this connection's scores
	// (rank.Event.Submitter): its events keep their order, other
	// connections' may overtake them. Fixed.
	submitter uint64

	replies  replyQueue        // bounded (R12); the writer drains it
	closeReq chan closeRequest // capacity 1: the first request wins
	drainCh  chan struct{}     // closed by drain: R14 has begun
	drainOne sync.Once
	// notify (capacity 1) wakes the writer for every kind of work: a
	// reply queued, a frame offered (the outbox signals it), a subscribe
	// done with the gate, a close requested, the drain begun or the reader
	// stopped by it, the connection's context ended. The writer then looks
	// at each source (writeLoop). One channel, not one per source, keeps
	// its wait a two-case select, far cheaper per wake than one case per
	// source.
	notify chan struct{}

	closeAsked atomic.Bool  // a close was requested (set before closeReq is sent): the reader stops reading
	draining   atomic.Bool  // drain began (set before drainCh is closed), for the writer
	expiry     atomic.Int64 // token expiry, unix ms (ns overflow after 2262); 0 = none (anonymous)
	expTimer   *time.Timer

	// gate is held by the reader while a subscribe puts its first frames in
	// the outbox and queues `subscribed`, and by the writer while it drains
	// replies and takes frames: so `subscribed` is always written first.
	gate sync.Mutex
	// ackListed: the connection is on the running batches' list of
	// connections with acks to write (acks.go); guarded by h.acks.mu.
	ackListed bool

	mu        sync.Mutex // guards busy, committed and win
	busy      bool       // the reader is handling a request
	committed bool       // the close frame is decided: requests read later are dropped
	win       window     // replies of scores in flight, in request order (window.go)

	// subs are the subscribed boards: the reader adds and removes them,
	// and Hub.BoardChanged ends those a config change closed to this
	// connection (access.go).
	subsMu sync.Mutex // guards subs
	subs   map[string]struct{}

	// reader
	rctx      context.Context // the connection's context, set by run
	p         auth.Principal  // replaced by auth; p.Member never changes
	anon      bool            // fixed: a token-less spectator (--public-read)
	lim       *rate.Limiter   // nil for server and admin
	scoreLim  bool            // scores spend the member's budget (memberrate.go); follows auth
	recent    slidingCount
	badStreak int

	// writer
	pending []*[]byte
	frames  [][]byte // Take's slice, reused (empty between Takes)
}

func newConn(h *Hub, ws *websocket.Conn, s *sock.Conn, p auth.Principal, anon bool) *conn {
	notify := make(chan struct{}, 1)
	c := &conn{
		h:         h,
		ws:        ws,
		s:         s,
		out:       live.NewOutboxSignal(h.cfg.TopInterval, time.Now, notify),
		replies:   replyQueue{max: h.cfg.ReplyQueue, maxBytes: h.cfg.ReplyQueueBytes, ready: notify},
		closeReq:  make(chan closeRequest, 1),
		drainCh:   make(chan struct{}),
		notify:    notify,
		subs:      make(map[string]struct{}),
		anon:      anon,
		sub:       p.Member,
		submitter: h.submitters.Add(1),
	}
	c.setPrincipal(p)
	// Held from here for the writer-to-be (writeLoop lets it go only to
	// wait), so no write in its place goes before the writer has run.
	s.Hold()
	c.out.SetDirect(c)
	// Set before the first read (run), so the reader sees it.
	member := p.Member // an auth keeps the member
	s.SetOnFlood(func() {
		h.log.Info("hub: control frame flood", "member", member)
		c.requestClose(websocket.StatusPolicyViolation, "control frame flood", false)
	})
	return c
}

// setPrincipal installs a (new) token's holder: the rate limit follows the
// role, and the token's exp is recorded for the expiry timer (R1), which
// armExpiry then (re)arms.
func (c *conn) setPrincipal(p auth.Principal) {
	c.p = p
	c.scoreLim = p.Role == auth.Player && !c.anon && c.h.cfg.MemberScoreRate > 0
	if p.Limited() && c.h.cfg.Rate > 0 {
		if c.lim == nil {
			c.lim = rate.NewLimiter(rate.Limit(c.h.cfg.Rate), 2*c.h.cfg.Rate)
		}
	} else {
		c.lim = nil
	}
	if p.Expiry.IsZero() {
		return
	}
	c.expiry.Store(expiryMillis(p.Expiry))
}

// maxExpiryMillis (9999-12-31T23:59:59.999Z in unix ms) caps a stored
// expiry so that it fits an int64 whatever the token says; a token valid
// until then is valid for good as far as a connection goes.
const maxExpiryMillis = 253402300799999

// expiryMillis is exp as unix ms, capped at maxExpiryMillis.
func expiryMillis(exp time.Time) int64 {
	if exp.After(time.UnixMilli(maxExpiryMillis)) {
		return maxExpiryMillis
	}
	return exp.UnixMilli()
}

// armExpiry (re)arms the expiry timer for c.expiry: by run once the welcome
// is queued (a token already past its exp, accepted within the verifier's
// leeway, expires at once, and its token_expired must still follow the
// welcome), and by auth after a new token.
func (c *conn) armExpiry() {
	exp := c.expiry.Load()
	if exp == 0 {
		return
	}
	if c.expTimer == nil {
		// Created stopped, then armed: the callback reads c.expTimer.
		c.expTimer = time.AfterFunc(time.Hour, c.expired)
		c.expTimer.Stop()
	}
	c.expTimer.Reset(time.Until(time.UnixMilli(exp)))
}

// expired runs on the timer: unless an auth moved the expiry meanwhile, say
// token_expired and close with 4001.
func (c *conn) expired() {
	if left := time.Until(time.UnixMilli(c.expiry.Load())); left > 0 {
		c.expTimer.Reset(left)
		return
	}
	c.push(c.errorReply("", errTokenExpired, 0)) // not a reply: no slot
	c.requestClose(proto.CloseTokenExpired, "token expired", true)
}

// run serves the connection until it ends: the writer in its own
// goroutine, the reader here; either ending cancels the other.
func (c *conn) run(parent context.Context) {
	c.ws.SetReadLimit(int64(c.h.cfg.MaxMessage))
	c.sendJSON(c.welcome())
	c.armExpiry()

	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	c.rctx = ctx
	// Reads and writes pass no context to the library (a cancellable one
	// costs a timer and allocations per call): ending ctx
	// closes the socket instead, which ends a blocked read or write as the
	// library would have.
	stopClose := context.AfterFunc(ctx, func() { c.poke(); c.ws.CloseNow() })
	defer stopClose()
	writerDone := make(chan error, 1)
	go func() {
		err := c.writeLoop(ctx)
		if err != nil {
			cancel() // unblocks the reader (a cancelled read closes the socket)
		}
		writerDone <- err
	}()
	rerr := c.readLoop(ctx)
	if rerr != nil {
		cancel()
	}
	werr := <-writerDone
	c.h.log.Debug("hub: connection closed", "member", c.sub, "role", c.p.Role, "read", rerr, "write", werr)
	if c.expTimer != nil {
		c.expTimer.Stop()
	}
	c.h.deps.Live.Drop(c.out)
	c.ws.CloseNow()
}

func (c *conn) welcome() proto.Welcome {
	w := proto.Welcome{
		Type:       proto.TypeWelcome,
		Member:     c.p.Member,
		Role:       string(c.p.Role),
		Node:       c.h.cfg.Node,
		ServerTime: time.Now().UnixMilli(),
		Limits:     proto.Limits{MaxMessage: c.h.cfg.MaxMessage},
	}
	if !c.p.Expiry.IsZero() {
		w.Exp = c.p.Expiry.Unix()
	}
	if c.lim != nil {
		w.Limits.Rate = c.h.cfg.Rate // 0: this role is not limited
	}
	return w
}

// readLoop reads and handles one request at a time, in order (R2): each
// request's reply is queued, or holds its slot in the window of scores in
// flight (window.go), before the next is read. It returns nil when it
// stopped reading because the connection is being closed.
func (c *conn) readLoop(ctx context.Context) error {
	for {
		typ, r, err := c.ws.Reader(context.Background()) // ctx closes the socket (run)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if typ != websocket.MessageText {
			c.settle(ctx) // the scores read before are answered first
			c.requestClose(websocket.StatusUnsupportedData, "binary frames are not supported", true)
			return nil
		}
		buf := c.h.getBuf()
		_, err = buf.ReadFrom(r) // over the read limit: the library closes with 1009
		if err != nil {
			c.h.putBuf(buf)
			return err
		}
		msg := buf.Bytes()
		if !utf8.Valid(msg) {
			c.h.putBuf(buf)
			c.settle(ctx)
			c.requestClose(websocket.StatusInvalidFramePayloadData, "invalid UTF-8", true)
			return nil
		}
		c.mu.Lock()
		if c.committed {
			c.mu.Unlock()
			c.h.putBuf(buf)
			continue // arrived after our close frame was decided
		}
		c.busy = true
		c.mu.Unlock()

		c.handle(ctx, msg)
		c.h.putBuf(buf)

		c.mu.Lock()
		c.busy = false
		c.mu.Unlock()
		select {
		case <-c.drainCh:
			c.poke()
			return nil // R14: answer what was read, read nothing more
		default:
		}
		if c.closeAsked.Load() {
			return nil
		}
	}
}

// requestClose asks the writer to close; the first request wins.
func (c *conn) requestClose(code websocket.StatusCode, reason string, flush bool) {
	c.closeAsked.Store(true)
	select {
	case c.closeReq <- closeRequest{code: code, reason: reason, flush: flush}:
	default:
	}
	c.poke()
}

// drain starts R14 for this connection (once).
func (c *conn) drain() {
	c.drainOne.Do(func() { c.draining.Store(true); close(c.drainCh); c.poke() })
}

// poke wakes the writer to look at every source of work (notify).
func (c *conn) poke() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// send queues the reader's reply b (a buffer of h.getReplyBuf; the writer
// gives it back) after the replies of the scores still in flight (R2).
// Reader only.
func (c *conn) send(b *[]byte) bool {
	for {
		c.mu.Lock()
		w := &c.win
		if w.n == 0 {
			c.mu.Unlock()
			return c.push(b)
		}
		if s := w.next(); s != nil {
			s.buf = b
			c.mu.Unlock()
			return true
		}
		c.mu.Unlock()
		if !c.waitFreed(c.rctx) {
			c.h.putReplyBuf(b)
			return false
		}
	}
}

// push queues b for the writer now. A full queue is a slow consumer (R12):
// the connection is closed with 1008 without waiting for the queue.
func (c *conn) push(b *[]byte) bool {
	if c.replies.push(b) {
		return true
	}
	return c.queueFull(b)
}

// pushQuiet is push without waking the writer (a completion's ack: see
// conn.acked).
func (c *conn) pushQuiet(b *[]byte) bool {
	if c.replies.add(b) {
		return true
	}
	return c.queueFull(b)
}

// queueFull drops b, which did not fit the reply queue, and closes the
// connection as a slow consumer (R12).
func (c *conn) queueFull(b *[]byte) bool {
	c.h.putReplyBuf(b)
	if !c.closeAsked.Load() {
		c.h.m.slowConsumerClose()
	}
	c.requestClose(websocket.StatusPolicyViolation, reasonSlow, false)
	return false
}

func (c *conn) sendJSON(v any) bool {
	b, err := proto.Marshal(v)
	if err != nil {
		c.h.log.Error("hub: encode reply", "err", err)
		return false
	}
	b = proto.Decimalize(b, decimalsOf(v))
	p := c.h.getReplyBuf()
	*p = append(*p, b...)
	return c.send(p)
}

// slidingCount counts messages over the last second in ten 100ms buckets,
// to tell a client that keeps going at 3× the rate (R10) from a burst.
type slidingCount struct {
	last   int64 // bucket number of the newest count
	counts [10]int
}

func (s *slidingCount) add(now time.Time) int {
	b := now.UnixNano() / int64(100*time.Millisecond)
	switch {
	case b-s.last >= int64(len(s.counts)):
		s.counts = [10]int{}
	case b > s.last:
		for i := s.last + 1; i <= b; i++ {
			s.counts[i%int64(len(s.counts))] = 0
		}
	}
	if b > s.last {
		s.last = b
	}
	s.counts[s.last%int64(len(s.counts))]++
	n := 0
	for _, v := range s.counts {
		n += v
	}
	return n
}

func (h *Hub) getBuf() *bytes.Buffer {
	if b, ok := h.bufs.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return new(bytes.Buffer)
}

func (h *Hub) putBuf(b *bytes.Buffer) {
	if b.Cap() <= 2*h.cfg.MaxMessage+512 {
		h.bufs.Put(b)
	}
}

// getReplyBuf returns an empty reply buffer; putReplyBuf gives it back once
// written (sock.Conn.Text copies it). Large ones (pages) are left
// to the collector.
func (h *Hub) getReplyBuf() *[]byte {
	b := h.replyBufs.Get().(*[]byte)
	*b = (*b)[:0]
	return b
}

func (h *Hub) putReplyBuf(b *[]byte) {
	if cap(*b) <= 1024 {
		h.replyBufs.Put(b)
	}
}

// decimalsOf is how many decimals the scores of reply v carry (hot boards,
// R22): replies say so in their Decimals field.
func decimalsOf(v any) int {
	switch r := v.(type) {
	case proto.PageReply:
		return r.Decimals
	case proto.RankReply:
		return r.Decimals
	}
	return 0
}
