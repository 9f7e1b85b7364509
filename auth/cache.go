package auth

import (
	"strings"
	"sync"
	"time"
)

// verified remembers tokens whose signature checked out, so a bot or page
// that sends the same token with every REST call pays for one signature
// check (RS256 is slow), not one per call. Only the signature's outcome is
// remembered: every hit runs check again, so exp, nbf and the claims'
// rules still hold at the time of each call.
//
// Keys are the whole tokens, byte for byte (a token differing in any byte
// is another entry; a forged one never matches). A lookup hashes the token
// as a map key, which costs less than the SHA-256 digest the keys used to
// be (a digest per REST call). The tokens are kept in memory only, never
// logged. The cache is bounded in entries (maxVerified) and in the bytes
// of its keys (maxVerifiedBytes: tokens may be up to 8 KiB): a full cache
// is emptied and refilled, which costs a burst of signature checks, never
// unbounded memory. An entry lives at most verifiedTTL and never past its
// token's exp, so a key removed from a JWKS stops being trusted within
// that time.
type verified struct {
	mu    sync.Mutex // guards m and bytes
	m     map[string]verifiedEntry
	bytes int // sum of the keys' lengths
}

type verifiedEntry struct {
	cl    claims
	until time.Time
}

const (
	maxVerified      = 8192
	maxVerifiedBytes = 4 << 20
	verifiedTTL      = time.Minute
)

func (c *verified) get(token string, now time.Time) (claims, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[token]
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
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[token]; ok {
		c.m[token] = verifiedEntry{cl: cl, until: until}
		return
	}
	if c.m == nil || len(c.m) >= maxVerified || c.bytes+len(token) > maxVerifiedBytes {
		c.m, c.bytes = make(map[string]verifiedEntry), 0
	}
	// A copy: the caller's string may share a request buffer.
	c.m[strings.Clone(token)] = verifiedEntry{cl: cl, until: until}
	c.bytes += len(token)
}
