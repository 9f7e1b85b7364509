package auth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// verified remembers tokens whose signature checked out, so a bot or page
// that sends the same token with every REST call pays for one signature
// check (RS256: ~40 µs), not one per call. Only the signature's outcome is
// remembered: every hit runs check again, so exp, nbf and the claims'
// rules still hold at the time of each call.
//
// Keys are SHA-256 digests of the whole token (a token differing in any
// byte is another entry; a forged one never matches). The cache is bounded
// (maxVerified entries; a full cache is emptied and refilled, which costs
// a burst of signature checks, never unbounded memory), and an entry lives
// at most verifiedTTL, so a key removed from a JWKS stops being trusted
// within that time.
type verified struct {
	mu sync.Mutex // guards m
	m  map[[sha256.Size]byte]verifiedEntry
}

type verifiedEntry struct {
	cl    claims
	until time.Time
}

const (
	maxVerified = 8192
	verifiedTTL = time.Minute
)

func (c *verified) get(token string, now time.Time) (claims, bool) {
	k := sha256.Sum256([]byte(token))
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || !now.Before(e.until) {
		return claims{}, false
	}
	return e.cl, true
}

func (c *verified) put(token string, cl claims, now time.Time) {
	until := now.Add(verifiedTTL)
	if cl.ExpiresAt != nil && cl.ExpiresAt.Time.Before(until) {
		until = cl.ExpiresAt.Time.Add(DefaultLeeway)
	}
	k := sha256.Sum256([]byte(token))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxVerified {
		c.m = make(map[[sha256.Size]byte]verifiedEntry)
	}
	c.m[k] = verifiedEntry{cl: cl, until: until}
}
