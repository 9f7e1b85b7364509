package api

import (
	"errors"
	"io"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
)

// The gates in front of fiber (Serve calls them before fiber sees the
// request); everything after them (CORS, the per-address and per-member
// rate limits, routing) is fiber middleware.
//
// Before a byte of a body is read, its token must verify (except the dev
// token route), else the request is answered 401 (or 429 by the
// per-address limit). Admitted bodies are read in body slots (bodySlots)
// and at a minimum rate (readBody).

// DefaultMaxBodyReads is Config.MaxBodyReads's zero-value meaning: 64 × the
// 1 MiB body limit bounds body memory to 64 MiB.
const DefaultMaxBodyReads = 64

// devTokenPath needs no token (--dev only; its body is a few bytes).
const devTokenPath = "/api/v1/dev/token"

// verifyEarly verifies the bearer token of an Authorization header.
func (a *API) verifyEarly(header string) (auth.Principal, string, error) {
	token, ok := auth.BearerToken(header)
	if !ok {
		return auth.Principal{}, proto.CodeUnauthorized, errf(proto.CodeUnauthorized, "missing bearer token")
	}
	p, err := a.deps.Verifier.Verify(a.ctx(), token)
	if err != nil {
		a.log.Debug("api: request refused before its body", "err", err)
		code := proto.CodeOf(err)
		if code != proto.CodeTokenExpired && code != proto.CodeUnavailable {
			code = proto.CodeUnauthorized
		}
		return auth.Principal{}, code, err
	}
	return p, "", nil
}

// verdict is admit's decision: status 0 admits the request (release its
// slot once it is answered), -1 drops it unanswered (the client left), any
// other is the answer.
type verdict struct {
	status     int
	route      string // the metrics label of an answer: "rejected", "refused"
	code, msg  string
	retryAfter time.Duration
	p          auth.Principal // verified before the body, when verified
	verified   bool
	slot       slot
}

// headers sets the headers of v's answer, in errorHandler's shape; a
// refusal is not cached (it depends on the token).
func (v verdict) headers(set func(key, value string)) {
	set("Content-Type", "application/json")
	if v.route == "refused" {
		set("Cache-Control", "no-store")
	}
	if v.retryAfter > 0 {
		set("Retry-After", strconv.Itoa(retrySeconds(v.retryAfter)))
	}
}

// body is v's answer's JSON.
func (v verdict) body() proto.ErrorBody {
	return proto.ErrorBody{Error: proto.ErrorDetail{Code: v.code, Message: v.msg}}
}

func reject(status int, msg string) verdict {
	return verdict{status: status, route: "rejected", code: proto.CodeBadRequest, msg: msg}
}

// admit runs the gates a request meets before fiber sees it; length is
// its declared body length: -1 unknown (chunked), 0 none.
func (a *API) admit(ctx *fasthttp.RequestCtx, length int64) verdict {
	if m := string(ctx.Method()); !knownMethod(m) {
		return reject(405, "method "+m+" is not supported")
	}
	if limit := a.bodyLimit(&ctx.Request.Header); length > limit {
		return reject(413, tooLargeMessage(limit))
	}
	if length == 0 {
		return verdict{}
	}
	var v verdict
	if string(ctx.Path()) != devTokenPath {
		pr, code, err := a.verifyEarly(string(ctx.Request.Header.Peek("Authorization")))
		if err != nil {
			if v, limited := a.limitAddress(a.clientKey(ctx)); limited {
				return v
			}
			v := verdict{status: proto.HTTPStatus(code), route: "refused", code: code, msg: proto.PublicMessage(err)}
			if code == proto.CodeUnavailable {
				v.retryAfter = time.Second
			}
			return v
		}
		v.p, v.verified = pr, true
	}
	// Server and admin traffic may use the reserved slots, and is not
	// counted per key (a bot posts for many members); everyone else is
	// counted per member, or per address on the token-less dev route.
	privileged := v.verified && !v.p.Limited()
	key := ""
	switch {
	case privileged:
	case v.verified:
		key = "m " + v.p.Member
	default:
		key = "a " + a.clientKey(ctx)
	}
	var got slotResult
	switch v.slot, got = a.slots.acquire(key, privileged, ctx.Done()); got {
	case slotGone:
		return verdict{status: -1}
	case slotShareUsed:
		return verdict{status: 429, route: "refused", code: proto.CodeRateLimited, retryAfter: time.Second,
			msg: "rate limited: too many request bodies at once from this client"}
	}
	return v
}

// limitAddress takes one token of the per-address bucket of a request
// without a valid token; limited: the 429 to answer.
func (a *API) limitAddress(key string) (verdict, bool) {
	if a.anon == nil {
		return verdict{}, false
	}
	if ok, d := a.anon.allow(key, time.Now()); !ok {
		return verdict{status: 429, route: "refused", code: proto.CodeRateLimited, msg: "rate limited: too many requests", retryAfter: d}, true
	}
	return verdict{}, false
}

// clientKey is the key of the per-address limits: the client address as
// --trusted-proxies defines it (clientaddr), loopback included (unlike
// the WebSocket's connection caps, a local client's polling is limited),
// IPv6 by its /64.
func (a *API) clientKey(ctx *fasthttp.RequestCtx) string {
	addr, garbled := a.proxies.Client(ctx.RemoteAddr().String(), peekAll(&ctx.Request.Header, "X-Forwarded-For"))
	switch {
	case garbled:
		return "via " + addr.String()
	case addr.Is6() && !addr.IsLoopback():
		return netip.PrefixFrom(addr, 64).Masked().String()
	}
	return addr.String()
}

// The body-slot defaults: a quarter of the slots is kept for server and
// admin tokens, so that spectators' and players' uploads never starve
// them, and one member or address holds at most an eighth.
const (
	reservedShare = 4
	perKeyShare   = 8
)

// bodySlots bound the request bodies read at once (Config.MaxBodyReads).
type bodySlots struct {
	shared   chan struct{} // any admitted body
	reserved chan struct{} // server and admin bodies only
	perKey   int

	mu   sync.Mutex // guards held
	held map[string]int
}

func newBodySlots(n int) *bodySlots {
	reserved := max(n/reservedShare, 1)
	return &bodySlots{
		shared:   make(chan struct{}, max(n-reserved, 1)),
		reserved: make(chan struct{}, reserved),
		perKey:   max(n/perKeyShare, 1),
		held:     make(map[string]int),
	}
}

// inUse is how many slots are taken.
func (s *bodySlots) inUse() float64 { return float64(len(s.shared) + len(s.reserved)) }

// slot is one held body slot; the zero slot holds none.
type slot struct {
	s   *bodySlots
	ch  chan struct{} // the pool it was taken from
	key string        // "" = not counted per key
}

// release gives the slot back (once, when its request is answered).
func (sl slot) release() {
	if sl.ch == nil {
		return
	}
	<-sl.ch
	sl.s.unkey(sl.key)
}

type slotResult int

const (
	slotTaken     slotResult = iota
	slotShareUsed            // the key holds its share already
	slotGone                 // done came first
)

// acquire takes a slot for key ("" = not counted per key), waiting for
// one until done.
func (s *bodySlots) acquire(key string, privileged bool, done <-chan struct{}) (slot, slotResult) {
	if key != "" {
		s.mu.Lock()
		if s.held[key] >= s.perKey {
			s.mu.Unlock()
			return slot{}, slotShareUsed
		}
		s.held[key]++
		s.mu.Unlock()
	}
	// A free slot is taken first, whatever done says; only then wait.
	select {
	case s.shared <- struct{}{}:
		return slot{s, s.shared, key}, slotTaken
	default:
	}
	var reserved chan struct{} // nil: never ready
	if privileged {
		reserved = s.reserved
		select {
		case reserved <- struct{}{}:
			return slot{s, reserved, key}, slotTaken
		default:
		}
	}
	select {
	case s.shared <- struct{}{}:
		return slot{s, s.shared, key}, slotTaken
	case reserved <- struct{}{}:
		return slot{s, reserved, key}, slotTaken
	case <-done:
		s.unkey(key)
		return slot{}, slotGone
	}
}

func (s *bodySlots) unkey(key string) {
	if key == "" {
		return
	}
	s.mu.Lock()
	if s.held[key]--; s.held[key] <= 0 {
		delete(s.held, key)
	}
	s.mu.Unlock()
}

// A body must arrive at minBodyRate on average once bodyGrace has passed,
// and whole within maxBodyTime: a slot held by a trickle is a slot a real
// client waits for.
const (
	minBodyRate = 1024 // bytes per second
	bodyGrace   = 2 * time.Second
	maxBodyTime = 30 * time.Second
)

// readBody reads a body of declared length (-1: unknown) from r into a
// pooled buffer, at most MaxBody bytes, moving the connection's read
// deadline (setDeadline) ahead of each read by the minimum rate. A status
// other than 0 is the answer instead (400, 408 too slow, 413 too large).
func (a *API) readBody(r io.Reader, length int64, setDeadline func(time.Time) error) (*[]byte, int, string) {
	buf := a.getBody()
	b := (*buf)[:0]
	limit := int(a.cfg.MaxBody) + 1
	if length >= 0 {
		limit = int(length)
	}
	if cap(b) < min(limit, maxPooledBody) {
		b = make([]byte, 0, min(limit, maxPooledBody))
	}
	start := time.Now()
	last := start.Add(maxBodyTime)
	fail := func(status int, msg string) (*[]byte, int, string) {
		*buf = b
		a.putBody(buf)
		return nil, status, msg
	}
	for len(b) < limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		due := start.Add(bodyGrace + time.Duration(len(b)+minBodyRate)*time.Second/minBodyRate)
		if due.After(last) {
			due = last
		}
		if err := setDeadline(due); err != nil {
			return fail(400, "could not read the request body")
		}
		n, err := r.Read(b[len(b):min(cap(b), limit)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(due) {
				return fail(408, "request body arrived too slowly")
			}
			return fail(400, "could not read the request body")
		}
	}
	if err := setDeadline(time.Time{}); err != nil {
		return fail(400, "could not read the request body")
	}
	*buf = b
	if int64(len(b)) > a.cfg.MaxBody {
		return fail(413, tooLargeMessage(a.cfg.MaxBody))
	}
	if length >= 0 && len(b) != int(length) {
		return fail(400, "could not read the request body")
	}
	return buf, 0, ""
}

// retrySeconds is a Retry-After value: whole seconds, at least 1.
func retrySeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}
