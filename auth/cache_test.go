package auth

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestVerifiedCache: a token's signature is checked once, but every call
// still checks its exp and claims at the call's time; a changed token is
// never served from the cache.
func TestVerifiedCache(t *testing.T) {
	t.Parallel()
	k := newTestKeys(t)
	now := testNow
	v, err := New(t.Context(), Config{PublicKeyPEM: pkixPEM(t, &k.rsa.PublicKey), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	tok := sign(t, jwt.SigningMethodRS256, k.rsa, nil, valid(map[string]any{"role": "server"}))
	p, err := v.Verify(t.Context(), tok)
	if err != nil || p.Role != Server {
		t.Fatalf("first Verify: %+v %v", p, err)
	}
	if _, ok := v.cache.get(tok, now); !ok {
		t.Fatal("a verified token was not remembered")
	}
	if p2, err := v.Verify(t.Context(), tok); err != nil || p2.Member != p.Member || p2.Role != p.Role {
		t.Fatalf("second Verify (cached): %+v %v", p2, err)
	}
	// One signature character changed: another cache key, and refused.
	i := strings.LastIndexByte(tok, '.') + 5
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	bad := tok[:i] + string(c) + tok[i+1:]
	if _, err := v.Verify(t.Context(), bad); err == nil {
		t.Fatal("a token with another signature was accepted")
	}
	// Past exp (plus the leeway), the cached token is expired all the same.
	now = testNow.Add(2 * time.Hour)
	if _, err := v.Verify(t.Context(), tok); !errors.Is(err, ErrTokenExpired) {
		t.Fatalf("cached token after exp: %v, want token_expired", err)
	}
}

// TestVerifiedCacheBounded: the cache never holds more than maxVerified
// tokens, and an entry outlives neither verifiedTTL nor its token's exp.
func TestVerifiedCacheBounded(t *testing.T) {
	t.Parallel()
	var c verified
	now := time.Unix(1000, 0)
	exp := claims{}
	exp.ExpiresAt = jwt.NewNumericDate(now.Add(time.Hour))
	for i := range maxVerified + 10 {
		c.put(string(rune(i))+"token", exp, now)
		if len(c.m) > maxVerified {
			t.Fatalf("%d entries after %d puts", len(c.m), i+1)
		}
	}
	c.put("t", exp, now)
	if _, ok := c.get("t", now.Add(verifiedTTL)); ok {
		t.Error("an entry outlived verifiedTTL")
	}
	short := claims{}
	short.ExpiresAt = jwt.NewNumericDate(now.Add(time.Second))
	c.put("s", short, now)
	if _, ok := c.get("s", now.Add(time.Second+DefaultLeeway)); ok {
		t.Error("an entry outlived its token's exp and the leeway")
	}
}

// TestVerifiedCacheBytes: long tokens are bounded by the bytes they hold,
// not only by their count, and a token put again is not counted twice.
func TestVerifiedCacheBytes(t *testing.T) {
	t.Parallel()
	var c verified
	now := time.Unix(1000, 0)
	long := strings.Repeat("x", maxTokenLen)
	for i := range 2 * maxVerifiedBytes / maxTokenLen {
		c.put(long+strconv.Itoa(i), claims{}, now)
		if c.bytes > maxVerifiedBytes {
			t.Fatalf("%d key bytes after %d puts, bound %d", c.bytes, i+1, maxVerifiedBytes)
		}
		if got := keyBytes(&c); got != c.bytes {
			t.Fatalf("counted %d key bytes, map holds %d", c.bytes, got)
		}
	}
	var d verified
	d.put("same", claims{}, now)
	d.put("same", claims{}, now)
	if d.bytes != len("same") || len(d.m) != 1 {
		t.Fatalf("a token put twice: %d bytes, %d entries", d.bytes, len(d.m))
	}
	if _, ok := d.get("sam", now); ok {
		t.Fatal("a prefix of a cached token was served from the cache")
	}
}

func keyBytes(c *verified) int {
	n := 0
	for k := range c.m {
		n += len(k)
	}
	return n
}
