package auth

import (
	"crypto/rand"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/wsgateway/wsgateway/internal/names"
)

// Claims describes a token to mint (dev mode, `wsgateway token`, tests).
type Claims struct {
	Sub    string   // required, the member id
	Role   Role     // "" leaves the claim out: the holder is a player
	Boards []string // nil leaves the claim out (every board); empty means none
	Name   string   // optional display name, at most 32 characters
	// TTL is the lifetime from now. Zero means DefaultTTL. A negative TTL
	// mints a token that is already expired, which tests need.
	TTL              time.Duration
	Issuer, Audience string // left out when empty
}

// DefaultTTL is Claims.TTL's zero-value meaning.
const DefaultTTL = time.Hour

// mintClaims is the payload MintHS256 signs.
type mintClaims struct {
	jwt.RegisteredClaims
	Role Role `json:"role,omitempty"`
	// A pointer so that an empty list is written as [] rather than dropped.
	Boards *[]string `json:"boards,omitempty"`
	Name   string    `json:"name,omitempty"`
}

// MintHS256 signs c with secret (at least 32 bytes). It refuses claims that
// Verify would refuse, except an expiry in the past.
func MintHS256(secret []byte, c Claims) (string, error) {
	if len(secret) < 32 {
		return "", fmt.Errorf("auth: mint: secret is %d bytes, need at least 32", len(secret))
	}
	if !names.ValidMember(c.Sub) {
		return "", fmt.Errorf("auth: mint: sub %q must match %s", c.Sub, names.MemberRule)
	}
	if c.Role != "" && !c.Role.Valid() {
		return "", fmt.Errorf("auth: mint: unknown role %q", c.Role)
	}
	if c.Name != "" {
		n, err := names.Normalize(c.Name)
		if err != nil {
			return "", fmt.Errorf("auth: mint: name: %w", err)
		}
		c.Name = n
	}
	ttl := c.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	now := time.Now()
	mc := mintClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   c.Sub,
			Issuer:    c.Issuer,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Role: c.Role,
		Name: c.Name,
	}
	if c.Audience != "" {
		mc.Audience = jwt.ClaimStrings{c.Audience}
	}
	if c.Boards != nil {
		mc.Boards = &c.Boards
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, mc).SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("auth: mint: %w", err)
	}
	return tok, nil
}

// RandomSecret returns a fresh 32-byte HS256 secret for --dev.
func RandomSecret() ([]byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("auth: random secret: %w", err)
	}
	return b, nil
}
