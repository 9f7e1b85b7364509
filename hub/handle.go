package hub

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub/live"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// codeError is a hub failure carrying a contract code (see proto.CodeOf).
type codeError struct{ code, msg string }

func (e *codeError) Error() string { return e.msg }
func (e *codeError) Code() string  { return e.code }

var (
	errForbidden    = &codeError{proto.CodeForbidden, "forbidden"}
	errTokenExpired = &codeError{proto.CodeTokenExpired, "token expired"}
	errRateLimited  = &codeError{proto.CodeRateLimited, "rate limited"}
)

func forbidden(why string) error { return fmt.Errorf("%w: %s", errForbidden, why) }

// Policy thresholds (R10).
const (
	maxBadStreak = 10 // bad requests in a row before closing with 1008
	abuseFactor  = 3  // a client going at this multiple of the rate is closed
	// retryUnavailable is the retry_after_ms of `unavailable` (R13).
	retryUnavailable = 1000
)

// handle answers one request; its reply (or error) is queued before it
// returns, so replies keep the requests' order (R2).
func (c *conn) handle(ctx context.Context, msg []byte) {
	if hook := c.h.testPanic; hook != nil {
		hook("handle", c.sub)
	}
	// One clock reading serves the message's limits and a score's member
	// budget; a server or admin connection has neither and reads none.
	var now time.Time
	if c.limited || c.scoreLim {
		now = time.Now()
	}
	lim := c.limiter(now)
	if lim != nil && lim.recent.add(now) > abuseFactor*c.h.cfg.Rate {
		c.h.m.messageIn("rate_abuse")
		c.settle(ctx) // the close follows the replies of what was read before
		c.requestClose(websocket.StatusPolicyViolation, "rate limit exceeded", true)
		return
	}
	req, err := proto.DecodeMessage(msg)
	if err != nil {
		c.h.m.messageIn("invalid")
	} else {
		c.h.m.messageIn(req.Type)
	}
	if lim != nil {
		if r := lim.lim.ReserveN(now, 1); r.DelayFrom(now) > 0 {
			wait := r.DelayFrom(now)
			r.CancelAt(now)
			c.sendErrorRetry(req.ID, fmt.Errorf("%w: at most %d messages per second", errRateLimited, c.h.cfg.Rate), wait)
			return
		}
	}
	if err != nil {
		if proto.CodeOf(err) == proto.CodeBadRequest {
			c.badStreak++
		}
		c.sendError(req.ID, err)
		if c.badStreak >= maxBadStreak {
			c.settle(ctx)
			c.requestClose(websocket.StatusPolicyViolation, "too many bad requests", true)
		}
		return
	}
	c.badStreak = 0

	// Anything but a score waits for the connection's scores in flight: a
	// read sees them, and `subscribed` precedes its frames (window.go).
	if req.Type != proto.TypeScore && !c.settle(ctx) {
		return
	}
	if req.Type == proto.TypeScore {
		err = c.score(ctx, req, now)
	} else if err = c.apart(ctx, req); err == errCrashed {
		return // confined to the connection, which is closing (crash.go)
	}
	var re *retryError
	switch {
	case errors.As(err, &re):
		c.sendErrorRetry(req.ID, re.error, re.after)
	case err != nil:
		c.sendError(req.ID, err)
	}
}

// request answers a request other than a score.
func (c *conn) request(ctx context.Context, req proto.Message) error {
	switch req.Type {
	case proto.TypeSubscribe:
		return c.subscribe(ctx, req)
	case proto.TypeUnsubscribe:
		return c.unsubscribe(req)
	case proto.TypePage:
		return c.page(ctx, req)
	case proto.TypeRank:
		return c.rank(ctx, req)
	case proto.TypeAuth:
		return c.auth(ctx, req)
	}
	return nil
}

// retryError is a refusal that retrying after a while will pass.
type retryError struct {
	error
	after time.Duration
}

func (e *retryError) Unwrap() error { return e.error }

// access checks R11 (the token's boards claim) and, for an anonymous
// spectator, that the board is public.
func (c *conn) access(ctx context.Context, board string) error {
	if err := rank.CheckBoardID(board); err != nil {
		return err
	}
	if !c.p.MayAccess(board) {
		return forbidden("board " + board + " is not in the token's boards")
	}
	if c.anon {
		b, err := c.h.board(ctx, board)
		if err != nil {
			return err
		}
		if !b.public {
			return forbidden("board " + board + " is not public")
		}
	}
	return nil
}

// member is the member a request names, else the token's own (which the
// verifier already checked by the same rule).
func (c *conn) member(req proto.Message) (string, error) {
	m := c.p.Member
	if req.Has&proto.FieldMember != 0 {
		m = req.Member
	}
	if err := rank.CheckMemberID(m); err != nil {
		return "", err
	}
	return m, nil
}

func (c *conn) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.h.cfg.StoreTimeout)
}

// score submits a score event; now is the message's clock reading (set
// when the connection has a score budget).
func (c *conn) score(ctx context.Context, req proto.Message, now time.Time) error {
	if err := c.access(ctx, req.Board); err != nil {
		return err
	}
	switch c.p.Role {
	case auth.Spectator:
		return forbidden("spectators cannot score")
	case auth.Server:
		if req.Has&proto.FieldMember == 0 {
			return proto.MissingField("member") // as REST words it
		}
	case auth.Player:
		if req.Has&proto.FieldMember != 0 && req.Member != c.p.Member {
			return forbidden("a player scores only for itself")
		}
	}
	if req.Has&proto.FieldAt != 0 && c.p.Role != auth.Server && c.p.Role != auth.Admin {
		return forbidden("only server and admin tokens may send at")
	}
	member, err := c.member(req)
	if err != nil {
		return err
	}
	b, err := c.h.board(ctx, req.Board)
	if err != nil {
		return err
	}
	if !c.p.MayScoreFor(member, b.clientWrites) {
		return forbidden("board " + req.Board + " does not accept scores from clients")
	}
	if c.scoreLim {
		if d := c.h.rates.take(c.sub, now); d > 0 {
			return &retryError{fmt.Errorf("%w: at most %d score events per second per player, across its connections", errRateLimited, c.h.cfg.MemberScoreRate), d}
		}
	}
	e := rank.Event{Board: req.Board, ID: req.ID, Member: member, Op: req.Op, Amount: req.Amount, Meta: req.Meta}
	if req.Has&proto.FieldAt != 0 {
		e.At = time.UnixMilli(req.At)
	}
	if member == c.p.Member {
		e.Name = c.p.Name
	}
	c.apply(ctx, e, b.validated) // the store checks the event against the board (R6)
	return nil
}

func (c *conn) subscribe(ctx context.Context, req proto.Message) error {
	if err := c.access(ctx, req.Board); err != nil {
		return err
	}
	sp, err := c.subscribeSpec(req)
	if err != nil {
		return err
	}
	b, err := c.h.board(ctx, req.Board)
	if err != nil {
		return err
	}
	if sp.Top < 0 {
		sp.Top = b.top
	}
	c.subsMu.Lock()
	again := c.subs.has(req.Board)
	n := len(c.subs)
	c.subsMu.Unlock()
	if !again && n >= c.h.cfg.MaxSubscriptions {
		return proto.BadRequest(fmt.Sprintf("at most %d subscriptions per connection", c.h.cfg.MaxSubscriptions))
	}
	// Under the gate the writer cannot take the first frames before
	// `subscribed` is queued (the reply precedes its frames).
	c.gate.Lock()
	defer func() {
		c.gate.Unlock()
		c.wake()
	}()
	if c.out == nil {
		c.out = live.NewOutboxWake(c.h.cfg.TopInterval, time.Now, c.poke)
		c.out.SetDirect(c)
	}
	sctx, cancel := c.storeCtx(ctx)
	joined, err := c.h.deps.Live.SubscribeStream(sctx, c.out, sp, req.Since)
	cancel()
	if busy := (*live.BusyError)(nil); errors.As(err, &busy) {
		return &retryError{err, busy.RetryAfter}
	}
	if err != nil {
		return err
	}
	c.subsMu.Lock()
	c.subs.add(req.Board)
	c.subsMu.Unlock()
	reply := proto.Subscribed{Type: proto.TypeSubscribed, ID: req.ID, Board: req.Board, Epoch: joined.Epoch}
	if req.Since != nil {
		reply.Resumed = &joined.Resumed // §15: answered whenever asked
		c.h.m.resumed(joined.Resumed)
	}
	c.sendJSON(reply)
	return nil
}

func (c *conn) unsubscribe(req proto.Message) error {
	if err := rank.CheckBoardID(req.Board); err != nil {
		return err
	}
	if c.out != nil {
		c.h.deps.Live.Unsubscribe(c.out, req.Board)
	}
	c.subsMu.Lock()
	c.subs.del(req.Board)
	c.subsMu.Unlock()
	c.sendJSON(proto.Subscribed{Type: proto.TypeUnsubscribed, ID: req.ID, Board: req.Board})
	return nil
}

func (c *conn) page(ctx context.Context, req proto.Message) error {
	if err := c.access(ctx, req.Board); err != nil {
		return err
	}
	sctx, cancel := c.storeCtx(ctx)
	pg, err := c.h.deps.Store.Top(sctx, req.Board, rank.PeriodSel(req.Period), req.Offset, req.Limit)
	if err == nil {
		c.decorate(sctx, pg.Entries)
	}
	cancel()
	if err != nil {
		return err
	}
	c.sendJSON(proto.PageReply{
		Type:     proto.TypePage,
		ID:       req.ID,
		Board:    req.Board,
		Offset:   req.Offset,
		Entries:  proto.EntriesOf(pg.Entries),
		Total:    pg.Total,
		Period:   pg.Period,
		Decimals: pg.Decimals,
	})
	return nil
}

func (c *conn) rank(ctx context.Context, req proto.Message) error {
	if err := c.access(ctx, req.Board); err != nil {
		return err
	}
	member, err := c.member(req)
	if err != nil {
		return err
	}
	b, err := c.h.board(ctx, req.Board)
	if err != nil {
		return err
	}
	read := c.h.deps.Store.Ranks
	if b.holds && (member == c.p.Member || c.p.Role == auth.Admin) {
		read = c.h.deps.Store.SelfRanks // a held member sees itself, as admins do (§16)
	}
	sctx, cancel := c.storeCtx(ctx)
	rs, err := read(sctx, req.Board, rank.PeriodSel(req.Period), []string{member}, req.Around)
	if err == nil && len(rs.Members) == 1 {
		c.decorate(sctx, rs.Members[0].Around)
	}
	cancel()
	if err != nil {
		return err
	}
	reply := proto.RankReply{Type: proto.TypeRank, ID: req.ID, Board: req.Board, Member: member, Around: []proto.Entry{}, Period: rs.Period, Decimals: rs.Decimals}
	if len(rs.Members) == 1 && rs.Members[0].Found {
		m := rs.Members[0]
		r, s := m.Rank, m.Score
		reply.Rank, reply.Score = &r, &s
		reply.Around = proto.EntriesOf(m.Around)
		reply.Cohort, reply.Tier = m.Cohort, m.Tier
		reply.Region, reply.RegionRank = m.Region, m.RegionRank // §17
	} else if reply.Tier, err = c.tierOf(ctx, req, member); err != nil {
		return err
	}
	c.sendJSON(reply)
	return nil
}

// tierOf is the tier of a member not on a league board in the period
// (§12): the one its first event would place it in; "" on other boards.
func (c *conn) tierOf(ctx context.Context, req proto.Message, member string) (string, error) {
	b, err := c.h.board(ctx, req.Board)
	if err != nil || !b.leagued {
		return "", err
	}
	sctx, cancel := c.storeCtx(ctx)
	defer cancel()
	return c.h.deps.Store.MemberTier(sctx, req.Board, rank.PeriodSel(req.Period), member)
}

// auth replaces the connection's token with a fresh one for the same member,
// moving the expiry (R1).
func (c *conn) auth(ctx context.Context, req proto.Message) error {
	vctx, cancel := c.storeCtx(ctx)
	p, err := c.h.deps.Verifier.Verify(vctx, req.Token)
	cancel()
	if err != nil {
		return err
	}
	if c.anon || p.Member != c.p.Member {
		return forbidden("the new token is for another member")
	}
	c.setPrincipal(p)
	c.armExpiry()
	c.recheckSubs(func(board string) string {
		if p.MayAccess(board) {
			return ""
		}
		return "board " + board + " is not in the new token's boards"
	})
	c.sendJSON(proto.Authed{Type: proto.TypeAuthed, ID: req.ID, Exp: p.Expiry.Unix()})
	return nil
}

// decorate gives the entries of a reply their profile fields (R20).
func (c *conn) decorate(ctx context.Context, lists ...[]rank.Entry) {
	if d := c.h.deps.Decorator; d != nil {
		d.Decorate(ctx, lists...)
	}
}

// sendError queues an error reply with the request's id ("" when unknown).
func (c *conn) sendError(id string, err error) {
	c.sendErrorRetry(id, err, 0)
}

func (c *conn) sendErrorRetry(id string, err error, retry time.Duration) {
	c.send(c.errorReply(id, err, retry))
}

// errorReply encodes the error reply for err (any goroutine).
func (c *conn) errorReply(id string, err error, retry time.Duration) *[]byte {
	code := proto.CodeOf(err)
	msg := proto.PublicMessage(err) // the chain goes to the log, not the client
	switch {
	case code == proto.CodeInternal && errors.Is(err, context.DeadlineExceeded):
		// The store did not answer within StoreTimeout.
		code, msg = proto.CodeUnavailable, "rank store did not answer in time"
	case code == proto.CodeInternal && errors.Is(err, context.Canceled):
		// The connection is ending with the event unsent: nobody reads this.
		code, msg = proto.CodeUnavailable, "connection closing"
	case code == proto.CodeInternal:
		c.h.log.Error("hub: internal error", "err", err)
		msg = "internal error"
	}
	var ra interface{ RetryAfter() time.Duration }
	if retry == 0 && errors.As(err, &ra) {
		retry = ra.RetryAfter() // a claim's (§16): when it lapses
	}
	if code == proto.CodeUnavailable && retry == 0 {
		retry = retryUnavailable * time.Millisecond
	}
	e := proto.Error{Type: proto.TypeError, ID: id, Code: code, Message: msg}
	var closed *rank.ClosedError
	if errors.As(err, &closed) {
		e.Closed = rank.Closed(*closed) // why, and when (R30)
	}
	var rejected *rank.RejectedError
	if errors.As(err, &rejected) {
		e.Reason = rejected.Reason // the hook's (§16)
	}
	if retry > 0 {
		e.RetryAfterMS = max(retry.Milliseconds(), 1)
		if retry%time.Millisecond != 0 {
			e.RetryAfterMS = retry.Milliseconds() + 1
		}
	}
	c.h.m.errorOut(code)
	p := c.h.getReplyBuf()
	*p = proto.AppendError(*p, &e)
	return p
}
