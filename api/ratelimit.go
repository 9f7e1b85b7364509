package api

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/time/rate"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
)

// REST rate limits (Config.Rate): a token bucket of Rate requests per second,
// burst 2×, per player or spectator member (the token's sub) and per client
// address for requests without a token or whose token is refused: the
// WebSocket's --rate semantics, so a client cannot go around its socket's
// limit by polling REST. Server and admin tokens are not limited, as on the
// WebSocket (bots and tooling post arrays). Over the limit: 429
// rate_limited with Retry-After (whole seconds, at least 1).

// DefaultRate is Config.Rate's zero-value meaning, the WebSocket's default.
const DefaultRate = 50

// maxLimiterKeys bounds the keys a limiter remembers. A key whose bucket
// has refilled is forgotten without changing anything (a new bucket is
// full too); past the bound, with none to forget, new keys share one
// bucket, so a spray of addresses costs a bounded map, not memory per
// address.
const maxLimiterKeys = 1 << 16

// keyedLimiter is one token bucket per key.
type keyedLimiter struct {
	limit rate.Limit
	burst int
	full  time.Duration // an idle bucket is full again after this long

	mu       sync.Mutex // guards buckets, swept and overflow
	buckets  map[string]*bucket
	swept    time.Time // the last sweep: at most one per full, so a spray of keys costs O(1) each
	overflow *rate.Limiter
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

func newKeyedLimiter(perSec int) *keyedLimiter {
	burst := 2 * perSec
	return &keyedLimiter{
		limit:    rate.Limit(perSec),
		burst:    burst,
		full:     time.Duration(math.Ceil(float64(burst)/float64(perSec))) * time.Second,
		buckets:  make(map[string]*bucket),
		overflow: rate.NewLimiter(rate.Limit(perSec), burst),
	}
}

// allow takes one token of key's bucket at now, or says how long until one
// is there.
func (k *keyedLimiter) allow(key string, now time.Time) (bool, time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	lim := k.overflow
	if b, ok := k.buckets[key]; ok {
		b.seen, lim = now, b.lim
	} else {
		if len(k.buckets) >= maxLimiterKeys && now.Sub(k.swept) >= k.full {
			k.swept = now
			for key, b := range k.buckets {
				if now.Sub(b.seen) >= k.full {
					delete(k.buckets, key)
				}
			}
		}
		if len(k.buckets) < maxLimiterKeys {
			lim = rate.NewLimiter(k.limit, k.burst)
			k.buckets[key] = &bucket{lim: lim, seen: now}
		}
	}
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// rateLimited is the 429 for a wait of d.
func rateLimited(c *fiber.Ctx, d time.Duration) error {
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(max(1, int(math.Ceil(d.Seconds())))))
	return &Error{code: proto.CodeRateLimited, status: http.StatusTooManyRequests, msg: "rate limited: too many requests"}
}

// limitAnon limits requests without a token by client address (fiber
// middleware, before routing). Requests with a token are limited after
// authentication (limitMember), or by address when it is refused or the
// route does not exist (notFound). /healthz and /readyz are never limited:
// a load balancer's checks must not fail because clients misbehave.
func (a *API) limitAnon(c *fiber.Ctx) error {
	if a.anon == nil || c.Get(fiber.HeaderAuthorization) != "" || isHealth(c.Path()) {
		return c.Next()
	}
	return a.limitRefused(c, nil, c.Next)
}

func isHealth(path string) bool { return path == "/healthz" || path == "/readyz" }

// limitRefused counts a request that shows no valid token against its
// client address, then goes on with next (nil: answers err): a client
// cycling bad tokens is limited like one sending none.
func (a *API) limitRefused(c *fiber.Ctx, err error, next func() error) error {
	if a.anon != nil {
		key := a.clientKey(c.Context())
		if ok, d := a.anon.allow(key, time.Now()); !ok {
			return rateLimited(c, d)
		}
	}
	if next != nil {
		return next()
	}
	return err
}

// notFound answers the requests no route matched, counted against their
// address whatever Authorization they carry (nothing verified it).
func (a *API) notFound(c *fiber.Ctx) error {
	if !isHealth(c.Path()) && c.Get(fiber.HeaderAuthorization) != "" {
		if err := a.limitRefused(c, nil, nil); err != nil {
			return err
		}
	}
	return c.Next() // fiber's own 404 or 405
}

// limitMember limits an authenticated player or spectator by its member.
func (a *API) limitMember(c *fiber.Ctx, p auth.Principal) error {
	if a.members == nil || !p.Limited() {
		return nil
	}
	if ok, d := a.members.allow(p.Member, time.Now()); !ok {
		return rateLimited(c, d)
	}
	return nil
}
