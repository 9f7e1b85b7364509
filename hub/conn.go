package hub

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

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
	reason string
	code   uint16 // a websocket.StatusCode
	flush  bool   // write the queued replies first (the error that explains the close)
}

// conn is one WebSocket connection: its reader (a player's for the
// connection's whole life, a spectator's only while it has bytes to read:
// reader.go), and a writer started only when there is work a write in its
// place cannot do (writer.go). The reader owns the fields marked "reader";
// the writer (or a write in its place: direct.go) owns the socket.
//
// What an idle spectator holds is kept small: no goroutine (its socket is
// parked on the hub's poller), the outbox, the window and the rate limiter
// made by the first request that needs them, and its timers entries of the
// hub's wheel (wheel.go), not timers of its own.
type conn struct {
	h   *Hub
	ws  *websocket.Conn
	s   *sock.Conn   // the socket under ws: every write goes through it
	out *live.Outbox // nil until the first subscribe; set under gate
	// sub is the token's sub, fixed for the connection's life (auth
	// accepts only a token for the same member), so the writer may read it
	// while the reader replaces p.
	sub string
	// submitter is the store's order key for this connection's scores
	// (rank.Event.Submitter): its events keep their order, other
	// connections' may overtake them. Fixed.
	submitter uint64

	replies replyQueue // bounded (R12); the writer drains it

	wstate     atomic.Uint32 // the writer's role (writer.go)
	shard      int32         // registry shard, set by registry.add
	endWake    chan struct{} // made as the reader ends; pokes then wake it (writer.go)
	closeAsked atomic.Bool   // a close was requested (closeReq set): the reader stops reading
	draining   atomic.Bool   // R14 has begun for this connection
	hinted     atomic.Bool   // the drain hint is queued (hintDrain)
	aborted    atomic.Bool   // the socket is closed without a handshake (abort)
	panicked   atomic.Bool   // a panic was recovered while serving the connection (crash.go)
	pingWanted atomic.Bool   // a ping is due and could not be written in the writer's place
	quiet      atomic.Bool   // the reader writes the replies queued now itself (reader.go): push wakes no writer
	quietWork  atomic.Bool   // work came while quiet: the reader writes it
	badStreak  int32         // reader: bad requests in a row
	pingSent   atomic.Int64  // unix ns of the oldest ping whose pong is not checked yet
	expiry     atomic.Int64  // token expiry, unix ms (ns overflow after 2262); 0 = none (anonymous)
	// due is each kind of the wheel's entries' time for this connection,
	// unix ns; an entry whose time differs is stale (wheel.go). timers is
	// what the entries hold of the connection.
	due    [timerKinds]atomic.Int64
	timers *timerRef

	// gate is held by the reader while a subscribe puts its first frames in
	// the outbox and queues `subscribed`, and by the writer while it takes
	// replies and frames: so `subscribed` is always written first.
	gate sync.Mutex
	mu   sync.Mutex // guards busy, committed, win and closeReq
	// ackListed: the connection is on the running batches' list of
	// connections with acks to write (acks.go); guarded by h.acks.mu.
	ackListed bool
	busy      bool         // the reader is handling a request
	committed bool         // the close frame is decided: requests read later are dropped
	nodeSlot  bool         // the connection holds a MaxConns slot (reservation)
	anon      bool         // fixed: a token-less spectator (--public-read)
	limited   bool         // reader: messages spend rate (the role's); follows auth
	scoreLim  bool         // reader: scores spend the member's budget (memberrate.go); follows auth
	win       *window      // replies of scores in flight, in request order (window.go); nil until the first score
	closeReq  closeRequest // the first close asked for (closeAsked)

	// subs are the subscribed boards: the reader adds and removes them,
	// and Hub.BoardChanged ends those a config change closed to this
	// connection (access.go).
	subsMu sync.Mutex // guards subs
	subs   boardSet

	role string // the metrics' role label, fixed: the token's role, or "anonymous"
	// The connection's slots of the caps (with nodeSlot), given back when
	// it ends (reservation).
	ipKey, mKey string

	// reader
	p       auth.Principal // replaced by auth; p.Member never changes
	rate    *msgRate       // made by the second message within rateQuiet (limiter)
	lastMsg int64          // unix ns of the last message while rate is nil
}

// msgRate is a connection's message rate limit (R10): the role's rate,
// and the messages of the last second to tell a client that keeps going at
// 3× the rate from a burst.
type msgRate struct {
	lim    rate.Limiter
	recent slidingCount
}

func newConn(h *Hub, ws *websocket.Conn, s *sock.Conn, p auth.Principal, anon bool) *conn {
	c := &conn{
		h:         h,
		ws:        ws,
		s:         s,
		anon:      anon,
		sub:       p.Member,
		submitter: h.submitters.Add(1),
		timers:    new(timerRef),
		role:      string(p.Role),
	}
	if anon {
		c.role = "anonymous"
	}
	c.timers.c.Store(c)
	c.setPrincipal(p)
	s.SetOnFlood(c.flooded) // before the first read (start), so the reader sees it
	s.SetWake(c.woken)
	return c
}

// flooded asks for the 1008 close of a connection that spent its frame
// budget (sock.Conn's flood guard).
func (c *conn) flooded() {
	c.h.log.Info("hub: control frame flood", "member", c.sub)
	c.requestClose(websocket.StatusPolicyViolation, "control frame flood", false)
}

// setPrincipal installs a (new) token's holder: the rate limit follows the
// role, and the token's exp is recorded for the expiry (R1), which
// armExpiry then (re)arms.
func (c *conn) setPrincipal(p auth.Principal) {
	c.p = p
	c.scoreLim = p.Role == auth.Player && !c.anon && c.h.cfg.MemberScoreRate > 0
	c.limited = p.Limited() && c.h.cfg.Rate > 0
	if !c.limited {
		c.rate = nil
	}
	if p.Expiry.IsZero() {
		return
	}
	c.expiry.Store(expiryMillis(p.Expiry))
}

// rateQuiet is how long after a message its rate state is back to new:
// the bucket (2 × the rate) refills in 2 s, the abuse window is 1 s.
const rateQuiet = 2 * time.Second

// limiter is the connection's message rate limit for a message at now,
// nil when its role has none, or when the message comes alone: none came
// within rateQuiet before, so a fresh limit would pass it anyway, and an
// idle spectator's one subscribe makes none. Reader only.
func (c *conn) limiter(now time.Time) *msgRate {
	if !c.limited || c.rate != nil {
		return c.rate
	}
	last := time.Unix(0, c.lastMsg)
	c.lastMsg = now.UnixNano()
	if now.Sub(last) >= rateQuiet {
		return nil
	}
	c.rate = &msgRate{lim: *rate.NewLimiter(rate.Limit(c.h.cfg.Rate), 2*c.h.cfg.Rate)}
	c.rate.lim.ReserveN(last, 1) // the message before counts
	c.rate.recent.add(last)
	return c.rate
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

// armExpiry (re)arms the expiry for c.expiry on the hub's wheel: by start
// once the welcome is queued (a token already past its exp, accepted
// within the verifier's leeway, expires at once, and its token_expired
// must still follow the welcome), and by auth after a new token.
func (c *conn) armExpiry() {
	if exp := c.expiry.Load(); exp != 0 {
		c.h.wheel.add(c, timerExpiry, time.UnixMilli(exp))
	}
}

// expired is the expiry's entry coming due: unless an auth moved the
// expiry meanwhile, say token_expired and close with 4001.
func (c *conn) expired(now time.Time) {
	if exp := time.UnixMilli(c.expiry.Load()); exp.After(now) {
		c.h.wheel.add(c, timerExpiry, exp)
		return
	}
	c.push(c.errorReply("", errTokenExpired, 0)) // not a reply: no slot
	c.requestClose(proto.CloseTokenExpired, "token expired", true)
}

// abort ends the connection at once, without a close handshake: the
// socket is closed, so the reader's read and any write fail. It may wait
// for a write in progress (at most the write timeout).
func (c *conn) abort() {
	if c.aborted.Swap(true) {
		return
	}
	c.ws.CloseNow()
	c.wakeWindow()
	c.poke()
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
	if c.limited {
		w.Limits.Rate = c.h.cfg.Rate // 0: this role is not limited
	}
	return w
}

// requestClose asks the writer to close; the first request wins.
func (c *conn) requestClose(code websocket.StatusCode, reason string, flush bool) {
	c.mu.Lock()
	if !c.closeAsked.Load() {
		c.closeReq = closeRequest{code: uint16(code), reason: reason, flush: flush}
		c.closeAsked.Store(true)
	}
	c.mu.Unlock()
	c.poke()
}

// hintDrain queues the drain hint (§15): reconnect after `after`. Any
// goroutine; at most once per connection.
func (c *conn) hintDrain(after time.Duration) {
	if !c.hinted.CompareAndSwap(false, true) {
		return
	}
	p := c.h.getReplyBuf()
	*p = append(*p, `{"type":"draining","reconnect_after_ms":`...)
	*p = strconv.AppendInt(*p, after.Milliseconds(), 10)
	*p = append(*p, '}')
	c.push(p)
	c.h.m.hinted()
}

// drain starts R14 for this connection (once).
func (c *conn) drain() {
	if !c.draining.Swap(true) {
		c.poke()
	}
}

// send queues the reader's reply b (a buffer of h.getReplyBuf; the writer
// gives it back) after the replies of the scores still in flight (R2).
// Reader only.
func (c *conn) send(b *[]byte) bool {
	for {
		c.mu.Lock()
		w := c.win
		if w == nil || w.n == 0 {
			c.mu.Unlock()
			return c.push(b)
		}
		if s := w.next(); s != nil {
			s.buf = b
			c.mu.Unlock()
			return true
		}
		c.mu.Unlock()
		if !c.waitFreed(c.h.ctx) {
			c.h.putReplyBuf(b)
			return false
		}
	}
}

// push queues b for the writer now (or for the reader, quiet). A full
// queue is a slow consumer (R12): the connection is closed with 1008
// without waiting for the queue.
func (c *conn) push(b *[]byte) bool {
	ok := c.pushQuiet(b)
	if ok {
		c.wake()
	}
	return ok
}

// wake pokes the writer, or, while the reader writes what it queues
// itself (quiet), tells it there is work.
func (c *conn) wake() {
	if c.quiet.Load() {
		c.quietWork.Store(true)
		if c.quiet.Load() {
			return // the reader clears quiet, then takes quietWork
		}
	}
	c.poke()
}

// pushQuiet is push without waking the writer (a completion's ack: see
// conn.acked). A b that does not fit the queue is dropped.
func (c *conn) pushQuiet(b *[]byte) bool {
	if c.replies.add(b, &c.h.cfg) {
		return true
	}
	c.h.putReplyBuf(b)
	if !c.closeAsked.Load() {
		c.h.m.slowConsumerClose()
	}
	c.requestClose(websocket.StatusPolicyViolation, reasonSlow, false)
	return false
}

func (c *conn) sendJSON(v any) bool {
	p := c.encode(v)
	return p != nil && c.send(p)
}

// encode is reply v in a reply buffer; nil when it cannot be encoded.
func (c *conn) encode(v any) *[]byte {
	b, err := proto.Marshal(v)
	if err != nil {
		c.h.log.Error("hub: encode reply", "err", err)
		return nil
	}
	b = proto.Decimalize(b, decimalsOf(v))
	p := c.h.getReplyBuf()
	*p = append(*p, b...)
	return p
}

// slidingCount counts messages over the last second in ten 100ms buckets,
// to tell a client that keeps going at 3× the rate (R10) from a burst.
type slidingCount struct {
	last   int64 // bucket number of the newest count
	counts [10]int32
}

func (s *slidingCount) add(now time.Time) int {
	b := now.UnixNano() / int64(100*time.Millisecond)
	switch {
	case b-s.last >= int64(len(s.counts)):
		s.counts = [10]int32{}
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
		n += int(v)
	}
	return n
}

func (h *Hub) getBuf() *bytes.Buffer {
	b := h.bufs.Get().(*bytes.Buffer)
	b.Reset()
	return b
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
