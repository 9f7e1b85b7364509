package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/proto"
)

// call is one request waiting for its reply.
type call struct {
	id    string
	kind  string // the request's type
	frame []byte // the encoded request, re-sent as is
	retry bool   // may be re-sent on the next connection
	// renewal marks a subscribe the client sends by itself after a
	// reconnect; nobody waits for it.
	renewal bool
	board   string
	member  string      // a score's member as sent ("" for other calls)
	seq     uint64      // registration order (guarded by Client.mu)
	gen     uint64      // connection it was last sent on (guarded by Client.mu)
	reply   chan result // capacity 1: complete never blocks
}

// result is a call's outcome: an error, a frame, or (f nil) an ack read
// without the frame union (fastwire.go).
type result struct {
	f   *frame
	ack proto.Ack
	err error
}

// frameOf is the reply frame when it is of type want, the gateway's error
// when it is one, and a type mismatch otherwise.
func (r result) frameOf(want string) (*frame, error) {
	if r.f == nil {
		return nil, fmt.Errorf("client: reply of type %q, want %q", proto.TypeAck, want)
	}
	switch r.f.Type {
	case want:
		return r.f, nil
	case proto.TypeError:
		return nil, r.f.err()
	}
	return nil, fmt.Errorf("client: reply of type %q, want %q", r.f.Type, want)
}

// complete hands the call its outcome. A call is removed from pending
// before it is completed, so this happens at most once.
func (cl *call) complete(f *frame, err error) {
	if cl.reply != nil {
		cl.reply <- result{f: f, err: err}
	}
}

// newCall is a call for a request, from the Client's pool when one is
// free: a call is recycled once its caller has taken its reply (then
// nothing else refers to it: it left pending before its completion, and
// resends work on copies of frames, see attach).
func (c *Client) newCall() *call {
	if cl, ok := c.calls.Get().(*call); ok {
		return cl
	}
	return &call{reply: make(chan result, 1)}
}

func (c *Client) recycle(cl *call) {
	*cl = call{frame: cl.frame[:0], reply: cl.reply}
	c.calls.Put(cl)
}

// do sends req and waits for its reply, honouring ctx. A reply of type
// error becomes an *Error; a reply of any other type than want, an error.
func (c *Client) do(ctx context.Context, req *proto.Request, retry bool, want string) (*frame, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s: %w", req.Type, err)
	}
	cl := &call{id: req.ID, kind: req.Type, frame: b, retry: retry, reply: make(chan result, 1)}
	r, err := c.roundTrip(ctx, cl)
	if err != nil {
		return nil, err
	}
	return r.frameOf(want)
}

// roundTrip registers cl (id, kind, frame and retry set), sends it and
// waits for its outcome, honouring ctx. A returned error is ErrClosed,
// ctx's, or the call's own failure (ErrConnLost, …); a reply of any type
// is the result.
func (c *Client) roundTrip(ctx context.Context, cl *call) (result, error) {
	// A free slot is taken without the select below (and its cost): the
	// common case when callers stay under MaxPending.
	select {
	case c.slots <- struct{}{}:
	default:
		select {
		case c.slots <- struct{}{}:
		case <-ctx.Done():
			return result{}, ctx.Err()
		case <-c.ctx.Done():
			return result{}, ErrClosed
		}
	}
	defer func() { <-c.slots }()

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return result{}, ErrClosed
	}
	if _, dup := c.pending[cl.id]; dup {
		c.mu.Unlock()
		return result{}, fmt.Errorf("client: %s: id %q is already in flight", cl.kind, cl.id)
	}
	c.seq++
	cl.seq = c.seq
	conn := c.conn
	if conn != nil {
		cl.gen = c.gen
	}
	c.pending[cl.id] = cl
	c.mu.Unlock()

	// With no connection, the next one sends it (attach). A failed write
	// means the connection is dying: lost and attach take it from there.
	// cl.frame is not touched after registration but by the caller's own
	// recycle, after the reply.
	if conn != nil {
		_ = c.write(conn, cl.frame)
	}

	select {
	case r := <-cl.reply:
		return r, r.err
	case <-ctx.Done():
		c.mu.Lock()
		if c.pending[cl.id] == cl {
			delete(c.pending, cl.id)
		}
		c.mu.Unlock()
		return result{}, ctx.Err()
	}
}

// Int returns a pointer to v, for ScoreReq.Delta and ScoreReq.Value.
func Int(v int64) *int64 { return &v }

// ScoreReq is one score event. Exactly one of Delta (boards of mode incr)
// and Value (modes best and set) is set.
type ScoreReq struct {
	Board string
	// Member is whose score changes: required for server and admin tokens,
	// "" (or the token's own sub) for a player.
	Member string
	Delta  *int64
	Value  *int64
	// ID keys idempotency on the board (R4); "" assigns a fresh one. Sending
	// the same ID again is always safe: it is applied at most once.
	ID string
	// Meta is kept with the score it sets and read back on entries
	// (Entry.Meta; docs/lists.md): a JSON object of at most 512 bytes, nil
	// for none. The gateway refuses anything else with bad_request.
	Meta json.RawMessage
}

// Score sends a score event and returns its ack. A lost connection does not
// lose it: with Reconnect it is re-sent, with the same id, until it is
// acknowledged or ctx ends. An ack may say Duplicate when an earlier send
// was applied but its ack was lost.
func (c *Client) Score(ctx context.Context, r ScoreReq) (proto.Ack, error) {
	if (r.Delta == nil) == (r.Value == nil) {
		return proto.Ack{}, errors.New("client: score: set exactly one of Delta and Value")
	}
	id := r.ID
	if id == "" {
		id = c.nextID()
	}
	if r.Meta != nil {
		if _, err := meta.Parse(r.Meta); err != nil {
			return proto.Ack{}, fmt.Errorf("client: score: %w", err)
		}
	}
	key, v := "delta", r.Delta
	if v == nil {
		key, v = "value", r.Value
	}
	cl := c.newCall()
	cl.id, cl.kind, cl.retry, cl.board, cl.member = id, proto.TypeScore, true, r.Board, r.Member
	cl.frame = appendScoreReq(cl.frame[:0], id, r.Board, r.Member, key, *v, r.Meta)
	res, err := c.roundTrip(ctx, cl)
	if err != nil {
		return proto.Ack{}, err // cl may still be completed: not recycled
	}
	c.recycle(cl)
	if res.f == nil {
		return res.ack, nil // read on the fast path
	}
	f, err := res.frameOf(proto.TypeAck)
	if err != nil {
		return proto.Ack{}, err
	}
	return f.ack(), nil
}

// SubOpts choose a subscription's frames.
type SubOpts struct {
	// Top is how many entries the top frames carry: 0 means the board's
	// default, a negative value means no top frames.
	Top int
	// Around is how many neighbours above and below the member a view frame
	// carries (0–25); 0 means no view frames.
	Around int
	// Member is whose view; "" means the token's own member.
	Member string
	// Members, when set (1–100 ids), asks for members frames of these
	// members instead of a view (Subscription.Members); Top 0 then means
	// no top frames.
	Members []string
	// Meta asks for the entries' meta on top and view frames.
	Meta bool
	// Cohort, on a cohort board, makes the top frames that cohort's
	// standings (proto.Top.Cohort names it) instead of the board's (§12).
	Cohort string
	// Region, on a region board, makes the top frames that region's
	// standings (proto.Top.Region names it) instead of the board's (§17).
	Region string
	// Scope "region", on a region board, makes the view frames the
	// member's within its region (proto.View.Region names it; §17).
	Scope string
}

// Subscribe subscribes to board's live frames, or changes the options of an
// existing subscription (returning the same Subscription). After a
// reconnect the client renews it by itself.
func (c *Client) Subscribe(ctx context.Context, board string, o SubOpts) (*Subscription, error) {
	id := c.nextID()
	// Registered before the request goes out: the first frames follow the
	// reply at once, and must find their subscription.
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	prev := c.subs[board]
	s := prev
	var old SubOpts
	if s == nil {
		s = newSubscription(board, o)
		c.subs[board] = s
	} else {
		old = s.setOpts(o)
	}
	c.mu.Unlock()

	if _, err := c.do(ctx, s.req(id), true, proto.TypeSubscribed); err != nil {
		if prev != nil {
			s.setOpts(old)
			return nil, err
		}
		c.mu.Lock()
		if c.subs[board] == s {
			delete(c.subs, board)
		}
		c.mu.Unlock()
		s.close()
		return nil, err
	}
	return s, nil
}

// Unsubscribe ends the subscription to board and closes its channels.
func (c *Client) Unsubscribe(ctx context.Context, board string) error {
	c.mu.Lock()
	s := c.subs[board]
	delete(c.subs, board)
	c.mu.Unlock()
	if s != nil {
		s.close()
	}
	id := c.nextID()
	_, err := c.do(ctx, &proto.Request{Type: proto.TypeUnsubscribe, ID: id, Board: board}, false, proto.TypeUnsubscribed)
	return err
}

// PageReq asks for a slice of a board.
type PageReq struct {
	Board  string
	Offset int    // ≥ 0
	Limit  int    // 1–100; 0 means 10
	Period string // "" = current, "previous", or a period index
}

// Page returns entries Offset+1 … Offset+Limit of the board.
func (c *Client) Page(ctx context.Context, r PageReq) (proto.PageReply, error) {
	if r.Limit == 0 {
		r.Limit = 10
	}
	id := c.nextID()
	req := &proto.Request{Type: proto.TypePage, ID: id, Board: r.Board, Offset: &r.Offset, Limit: &r.Limit, Period: r.Period}
	f, err := c.do(ctx, req, true, proto.TypePage)
	if err != nil {
		return proto.PageReply{}, err
	}
	return f.page(), nil
}

// RankReq asks for one member's rank and neighbours.
type RankReq struct {
	Board  string
	Member string // "" = the token's own member
	Around int    // 0–25
	Period string
}

// Rank returns a member's rank, score (nil when absent) and neighbours.
func (c *Client) Rank(ctx context.Context, r RankReq) (proto.RankReply, error) {
	id := c.nextID()
	req := &proto.Request{Type: proto.TypeRank, ID: id, Board: r.Board, Member: r.Member, Around: &r.Around, Period: r.Period}
	f, err := c.do(ctx, req, true, proto.TypeRank)
	if err != nil {
		return proto.RankReply{}, err
	}
	return f.rankReply(), nil
}

// Auth replaces the connection's token with a fresh one for the same member
// (before the old one expires, R1); later reconnects use it too, unless
// Options.TokenFunc is set. A lost connection fails it with ErrConnLost.
func (c *Client) Auth(ctx context.Context, token string) (proto.Authed, error) {
	id := c.nextID()
	f, err := c.do(ctx, &proto.Request{Type: proto.TypeAuth, ID: id, Token: token}, false, proto.TypeAuthed)
	if err != nil {
		return proto.Authed{}, err
	}
	c.mu.Lock()
	c.token = token
	c.mu.Unlock()
	return proto.Authed{Type: proto.TypeAuthed, ID: f.ID, Exp: f.Exp}, nil
}
