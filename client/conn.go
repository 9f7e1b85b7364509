package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/proto"
)

// run owns the connection's life: it serves conn until it dies, then either
// redials (Options.Reconnect) or closes the Client. It is the only goroutine
// that replaces c.conn. The first redial tries c.urls[next], the URL after
// the one conn was dialled to, so that a node just lost (a drain's) is tried
// last.
func (c *Client) run(conn *websocket.Conn, next int) {
	defer close(c.done)
	var resend [][]byte
	for {
		err := c.serve(conn, resend)
		c.lost(err)
		if !c.opts.Reconnect || c.closing() {
			c.finish(err)
			return
		}
		c.setState(StateReconnecting)
		conn, next = c.redial(next, c.takeDrain())
		if conn == nil {
			c.finish(ErrClosed)
			return
		}
		resend = c.attach(conn)
		c.setState(StateConnected)
	}
}

// serve reads conn on a goroutine of its own while this one re-sends what
// the previous connection left unanswered, then pings; it returns why conn
// died.
func (c *Client) serve(conn *websocket.Conn, resend [][]byte) error {
	readErr := make(chan error, 1)
	go func() { readErr <- c.readLoop(conn) }()
	// Re-send only after the reader runs: replies must be read while we
	// write, or a long backlog could fill both socket buffers.
	for _, b := range resend {
		if err := c.write(conn, b); err != nil {
			break // the reader sees the connection die
		}
	}
	var tick <-chan time.Time
	if c.opts.PingInterval > 0 {
		t := time.NewTicker(c.opts.PingInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case err := <-readErr:
			return err
		case <-c.ctx.Done():
			conn.CloseNow()
			return <-readErr
		case <-tick:
			ctx, cancel := context.WithTimeout(c.ctx, c.opts.PingInterval)
			err := conn.Ping(ctx)
			cancel()
			if err != nil && c.ctx.Err() == nil {
				conn.Close(websocket.StatusGoingAway, "ping timeout")
				return <-readErr
			}
		}
	}
}

// readLoop reads frames until the connection dies, reusing one buffer. Its
// context never ends: serve closes the connection when the Client's does,
// and a context that can end costs the library a timer per frame.
func (c *Client) readLoop(conn *websocket.Conn) error {
	var buf bytes.Buffer
	for {
		typ, r, err := conn.Reader(c.bg)
		if err != nil {
			return err
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return err
		}
		if typ != websocket.MessageText {
			conn.Close(websocket.StatusUnsupportedData, "binary frame")
			return errors.New("client: binary frame from the gateway")
		}
		c.dispatch(buf.Bytes())
	}
}

// dispatch routes one frame: a reply to its call, a live frame to its
// subscription and callbacks.
func (c *Client) dispatch(data []byte) {
	if a, ok := parseAck(data); ok {
		c.dispatchAck(&a)
		return
	}
	var f frame
	if err := f.decode(data); err != nil {
		c.onError(fmt.Errorf("client: undecodable frame: %w", err))
		return
	}
	switch f.Type {
	case proto.TypeTop:
		t := f.top()
		if s := c.sub(t.Board); s != nil {
			s.offerTop(t)
		}
		if c.opts.OnTop != nil {
			c.opts.OnTop(t)
		}
		return
	case proto.TypeView:
		v := f.view()
		if s := c.sub(v.Board); s != nil {
			s.offerView(v)
		}
		if c.opts.OnView != nil {
			c.opts.OnView(v)
		}
		return
	case proto.TypeMembers:
		c.dispatchMembers(f.members())
		return
	case proto.TypeBoard:
		b := f.board()
		if s := c.sub(b.Board); s != nil {
			s.offerBoard(b)
			if b.State == "deleted" {
				// The server ended the subscription: nothing to renew.
				c.mu.Lock()
				if c.subs[b.Board] == s {
					delete(c.subs, b.Board)
				}
				c.mu.Unlock()
				s.close()
			}
		}
		if c.opts.OnBoard != nil {
			c.opts.OnBoard(b)
		}
		return
	case proto.TypeWelcome:
		c.mu.Lock()
		c.welcome = f.welcome()
		c.mu.Unlock()
		return
	case proto.TypeDraining:
		// The node drains (§15): reconnect when it says, not before.
		after := time.Duration(max(f.ReconnectAfterMS, 0)) * time.Millisecond
		c.mu.Lock()
		c.drainAt = time.Now().Add(after)
		c.mu.Unlock()
		c.log.Info("client: the gateway drains", "reconnect_after", after)
		if c.opts.OnDraining != nil {
			c.opts.OnDraining(after)
		}
		return
	case proto.TypeSubscribed:
		// Here, before the frames that follow it are dispatched.
		if s := c.sub(f.Board); s != nil {
			s.subscribed(f.Epoch, f.Resumed != nil && *f.Resumed)
		}
	}
	if f.ID == "" {
		if f.Type == proto.TypeError {
			c.onError(f.err())
		}
		return
	}
	c.mu.Lock()
	cl := c.pending[f.ID]
	delete(c.pending, f.ID)
	c.mu.Unlock()
	switch {
	case cl == nil:
		// Its caller gave up.
	case cl.renewal:
		if f.Type == proto.TypeError {
			e := f.err()
			if e.Code == proto.CodeUnavailable || e.Code == proto.CodeRateLimited {
				// A storm of renewals (every client of a drained node
				// at once) may find the store slow: try again, or the
				// subscription would stay silent until the next reconnect.
				c.renewLater(cl.board, cl.gen, e.RetryAfter)
				return
			}
			c.onError(fmt.Errorf("client: renew subscription %s: %w", cl.board, e))
		}
	default:
		cl.complete(&f, nil)
	}
}

// dispatchAck completes the call an ack answers, as dispatch would after
// encoding/json's decode (frame.ack), without allocating: the ack's strings
// are the call's own when they match what was sent, as they do but for a
// player's "" member.
func (c *Client) dispatchAck(a *ackView) {
	c.mu.Lock()
	cl := c.pending[string(a.id)]
	if cl != nil {
		delete(c.pending, cl.id)
	}
	c.mu.Unlock()
	if cl == nil || cl.renewal {
		return // its caller gave up; a renewal wants no ack
	}
	ack := proto.Ack{Type: proto.TypeAck, ID: cl.id, Board: cl.board, Member: cl.member,
		Score: a.score, Rank: a.rank, Duplicate: a.dup, Seq: a.seq, Period: a.period,
		Cohort: string(a.cohort), Tier: string(a.tier), Region: string(a.region), RegionRank: a.regionRank, Held: a.held}
	if string(a.board) != cl.board {
		ack.Board = string(a.board)
	}
	if string(a.member) != cl.member {
		ack.Member = string(a.member)
	}
	if a.hasPrevRank {
		pr := a.prevRank
		ack.PrevRank = &pr
	}
	cl.reply <- result{ack: ack}
}

func (c *Client) sub(board string) *Subscription {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.subs[board]
}

// lost forgets the dead connection and settles the calls that cannot
// outlive it.
func (c *Client) lost(err error) {
	if !c.closing() {
		c.onError(fmt.Errorf("client: connection lost: %w", err))
	}
	c.mu.Lock()
	c.conn = nil
	var settle []*call
	for id, cl := range c.pending {
		if cl.retry && !cl.renewal && c.opts.Reconnect {
			continue
		}
		delete(c.pending, id)
		settle = append(settle, cl)
	}
	c.mu.Unlock()
	for _, cl := range settle {
		switch {
		case cl.renewal:
			// The next connection renews again.
		case cl.kind == proto.TypeUnsubscribe:
			// The next connection never hears of the subscription.
			cl.complete(&frame{Type: proto.TypeUnsubscribed, ID: cl.id}, nil)
		default:
			cl.complete(nil, ErrConnLost)
		}
	}
}

// finish closes the Client for good: every call still pending fails.
func (c *Client) finish(cause error) {
	c.mu.Lock()
	byClose := c.closed
	c.closed = true
	c.conn = nil
	calls := c.pending
	c.pending = make(map[string]*call)
	subs := c.subs
	c.subs = make(map[string]*Subscription)
	c.mu.Unlock()
	err := ErrClosed
	if !byClose {
		err = ErrConnLost
		c.log.Info("client: closed", "cause", cause)
	}
	c.cancel()
	for _, cl := range calls {
		cl.complete(nil, err)
	}
	for _, s := range subs {
		s.close()
	}
	c.setState(StateClosed)
}

// closing reports whether Close was called (or the Client finished).
func (c *Client) closing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// takeDrain is when the gateway of the lost connection said to reconnect
// (§15), zero when it said nothing; it forgets it.
func (c *Client) takeDrain() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := c.drainAt
	c.drainAt = time.Time{}
	return at
}

// redial tries the URLs in turn, with backoff, until one accepts or the
// Client is closed (then it returns nil). The first attempt waits until
// notBefore when it is set: the drained gateway's reconnect_after_ms, which
// spreads its clients over the other nodes (§15).
func (c *Client) redial(next int, notBefore time.Time) (*websocket.Conn, int) {
	backoff := c.opts.MinBackoff
	for attempt := 0; ; attempt++ {
		// The first attempt waits too: a gateway that closed connections
		// without a hint should not see them all return at once.
		d := backoff/2 + rand.N(backoff/2+1)
		if attempt == 0 && !notBefore.IsZero() {
			d = max(time.Until(notBefore), 0)
		}
		select {
		case <-c.ctx.Done():
			return nil, next
		case <-time.After(d):
		}
		backoff = min(2*backoff, c.opts.MaxBackoff)

		url := c.urls[next]
		next = (next + 1) % len(c.urls)
		conn, err := c.redialOnce(url)
		if err == nil {
			c.log.Info("client: reconnected", "url", url, "attempt", attempt+1)
			return conn, next
		}
		c.log.Info("client: reconnect failed", "url", url, "attempt", attempt+1, "err", err)
		if c.ctx.Err() != nil {
			return nil, next
		}
	}
}

func (c *Client) redialOnce(url string) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.DialTimeout)
	defer cancel()
	c.mu.Lock()
	token := c.token
	c.mu.Unlock()
	if c.opts.TokenFunc != nil {
		t, err := c.opts.TokenFunc(ctx)
		if err != nil {
			return nil, fmt.Errorf("client: token: %w", err)
		}
		token = t
	}
	conn, w, err := c.dial(ctx, url, token)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.token = token
	c.welcome = w
	c.mu.Unlock()
	return conn, nil
}

// attach installs conn and returns what to send on it first: a renewal of
// every subscription, then every unanswered call in the order it was made.
// The frames are copies: a call answered while they are sent is recycled
// by its caller (newCall), frame buffer included.
func (c *Client) attach(conn *websocket.Conn) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		// Close ran while we dialled; run's next serve sees ctx done.
		c.conn = conn
		return nil
	}
	c.conn = conn
	c.gen++
	var out []*call
	for board, s := range c.subs {
		id := c.nextID()
		cl := &call{id: id, kind: proto.TypeSubscribe, frame: s.renewal(id), renewal: true, board: board, gen: c.gen}
		c.pending[id] = cl
		out = append(out, cl)
	}
	var calls []*call
	for _, cl := range c.pending {
		if !cl.renewal && cl.gen < c.gen {
			cl.gen = c.gen
			calls = append(calls, cl)
		}
	}
	slices.SortFunc(calls, func(a, b *call) int { return int(a.seq - b.seq) })
	frames := make([][]byte, 0, len(out)+len(calls))
	for _, cl := range append(out, calls...) {
		frames = append(frames, bytes.Clone(cl.frame))
	}
	return frames
}

// renewLater renews board's subscription again after wait (at least
// MinBackoff, jittered), on the same connection (gen) if it still holds it;
// a new connection renews it anyway.
func (c *Client) renewLater(board string, gen uint64, wait time.Duration) {
	wait = max(wait, c.opts.MinBackoff)
	wait += rand.N(wait/2 + 1)
	time.AfterFunc(wait, func() {
		c.mu.Lock()
		s, conn := c.subs[board], c.conn
		if s == nil || conn == nil || c.gen != gen || c.closed {
			c.mu.Unlock()
			return
		}
		id := c.nextID()
		cl := &call{id: id, kind: proto.TypeSubscribe, frame: s.renewal(id), renewal: true, board: board, gen: gen}
		c.pending[id] = cl
		c.mu.Unlock()
		if err := c.write(conn, cl.frame); err != nil {
			return // the reader sees the connection die; the next one renews
		}
	})
}

// write sends one frame, bounded by WriteTimeout and the Client's life, not
// by a caller's context: cancelling a write midway would kill the connection
// for every other caller. On a batchConn (batch.go) the write only queues
// the frame and the flusher bounds the socket write, so no timer is set.
func (c *Client) write(conn *websocket.Conn, b []byte) error {
	if c.batched {
		return conn.Write(c.bg, websocket.MessageText, b)
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.WriteTimeout)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, b)
}
