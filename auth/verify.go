package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/wsgateway/wsgateway/internal/names"
)

// Config selects the verification key and the claim checks. Exactly one of
// Secret, PublicKeyPEM and JWKSURL must be set.
type Config struct {
	// Secret is the HS256 key, at least 32 bytes. Only HS256 is accepted.
	Secret []byte
	// PublicKeyPEM is a PEM public key (or certificate): RSA (at least 2048
	// bits) → RS256, ECDSA P-256 → ES256, Ed25519 → EdDSA. Only that one
	// algorithm is accepted. A private key is refused.
	PublicKeyPEM []byte
	// JWKSURL is a JWK Set endpoint; a token's `kid` selects the key and the
	// key fixes the algorithm (RS256, ES256 or EdDSA; never HS*). The set is
	// refreshed hourly and on an unknown kid (at most every 30 s). A first
	// fetch that fails is logged, not fatal: the set is fetched again on use.
	// New's ctx ends the refresh goroutine.
	JWKSURL string
	// Issuer, when set, must equal the token's `iss` (checked before any key
	// is looked up). Empty: not checked.
	Issuer string
	// Audience, when set, must be one of the token's `aud`. Empty: not checked.
	Audience string
	// Leeway is the clock skew allowed on exp, nbf and iat. Zero means 5s.
	Leeway time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Logger receives JWKS refresh failures. Nil discards. Tokens are never
	// logged.
	Logger *slog.Logger
}

// DefaultLeeway is Config.Leeway's zero-value meaning.
const DefaultLeeway = 5 * time.Second

// maxTokenLen bounds what is parsed: real tokens are well under 2 KiB and a
// query parameter or header could otherwise hand the parser megabytes.
const maxTokenLen = 8 << 10

// Verifier checks tokens against one key source. It is immutable after New
// and safe for concurrent use.
type Verifier struct {
	parser   *jwt.Parser
	secret   []byte         // HS256 mode
	pub      any            // PEM mode
	jwks     jwkset.Storage // JWKS mode
	issuer   string
	audience string
	leeway   time.Duration
	now      func() time.Time
	log      *slog.Logger
	cache    verified // tokens whose signature checked out (cache.go)
}

// New validates cfg and builds a Verifier. In JWKS mode it fetches the set
// once and keeps refreshing it until ctx ends. Errors are prefixed "auth: "
// and name the flag to fix.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	v := &Verifier{
		issuer:   cfg.Issuer,
		audience: cfg.Audience,
		leeway:   cfg.Leeway,
		now:      cfg.Now,
		log:      cfg.Logger,
	}
	if v.leeway < 0 {
		return nil, fmt.Errorf("auth: negative leeway %v", v.leeway)
	}
	if v.leeway == 0 {
		v.leeway = DefaultLeeway
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}

	set := 0
	for _, b := range []bool{len(cfg.Secret) > 0, len(cfg.PublicKeyPEM) > 0, cfg.JWKSURL != ""} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, errors.New("auth: set exactly one of --jwt-secret, --jwt-public-key, --jwks-url")
	}

	var methods []string
	switch {
	case len(cfg.Secret) > 0:
		if len(cfg.Secret) < 32 {
			return nil, fmt.Errorf("auth: --jwt-secret is %d bytes, need at least 32", len(cfg.Secret))
		}
		v.secret = bytes.Clone(cfg.Secret) // the caller may reuse its slice
		methods = []string{jwt.SigningMethodHS256.Alg()}
	case len(cfg.PublicKeyPEM) > 0:
		key, alg, err := parsePublicKeyPEM(cfg.PublicKeyPEM)
		if err != nil {
			return nil, fmt.Errorf("auth: --jwt-public-key: %w", err)
		}
		v.pub = key
		methods = []string{alg}
	default:
		store, err := newJWKS(ctx, cfg.JWKSURL, v.log)
		if err != nil {
			return nil, fmt.Errorf("auth: --jwks-url: %w", err)
		}
		v.jwks = store
		// Every algorithm a JWKS key may select, narrowed per token to the
		// key's own by jwksKey; never HS* (a public set holds no secret).
		methods = []string{"RS256", "ES256", "EdDSA"}
	}
	v.parser = jwt.NewParser(
		jwt.WithValidMethods(methods),
		jwt.WithStrictDecoding(),
		// Claims are checked by check, so that an expired token is told
		// apart from a token that is bad in any other way.
		jwt.WithoutClaimsValidation(),
	)
	v.log.Info("auth: verifying tokens", "algs", methods, "issuer", v.issuer, "audience", v.audience)
	return v, nil
}

// claims is a token's payload as §3 defines it.
type claims struct {
	jwt.RegisteredClaims
	Role   Role        `json:"role"`
	Boards boardsClaim `json:"boards"`
	Name   string      `json:"name"`
}

// boardsClaim tells an absent `boards` (every board) from `[]` (none); an
// explicit null is refused rather than read as "every board".
type boardsClaim struct {
	set  bool
	list []string
}

func (b *boardsClaim) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return errors.New("boards is null")
	}
	list := []string{}
	if err := json.Unmarshal(data, &list); err != nil {
		return fmt.Errorf("boards: %w", err)
	}
	b.set, b.list = true, list
	return nil
}

// Verify checks token's signature and claims and returns its holder. A
// failure wraps ErrTokenExpired when the token is valid but for its exp, and
// otherwise one of the faults of errors.go (each an ErrUnauthorized), the
// detail after it for the log. ctx bounds a JWKS refresh for an unknown kid.
func (v *Verifier) Verify(ctx context.Context, token string) (Principal, error) {
	switch {
	case token == "":
		return Principal{}, fmt.Errorf("auth: %w", ErrMissingToken)
	case len(token) > maxTokenLen:
		return Principal{}, fmt.Errorf("auth: %w: longer than %d bytes", ErrMalformed, maxTokenLen)
	}
	if cl, ok := v.cache.get(token, v.now()); ok {
		return v.check(&cl)
	}
	// The claims are decoded strictly (claims.go), before the key is looked
	// up and the signature checked: both are refused alike.
	var cl claims
	payload, err := payloadOf(token)
	if err == nil {
		err = uniqueHeader(token)
	}
	if err == nil {
		err = decodeClaims(payload, &cl)
	}
	if err != nil {
		return Principal{}, fmt.Errorf("auth: %w: %v", ErrMalformed, err)
	}
	_, err = v.parser.ParseWithClaims(token, &noClaims{}, func(t *jwt.Token) (any, error) {
		// The claims are decoded (not yet trusted) before the key is looked
		// up: a foreign issuer never costs a JWKS refresh.
		if v.issuer != "" && cl.Issuer != v.issuer {
			return nil, ErrIssuer
		}
		return v.key(ctx, t)
	})
	if err != nil {
		return Principal{}, fmt.Errorf("auth: %w: %v", parseFault(err), err)
	}
	p, err := v.check(&cl)
	if err == nil {
		v.cache.put(token, cl, v.now())
	}
	return p, err
}

// parseFault names the fault of a jwt parse error: the key function's own
// (issuer, unknown key), a signature that does not verify or an algorithm
// outside the pinned set (bad signature), else a malformed token.
func parseFault(err error) *Error {
	for _, f := range []*Error{ErrIssuer, ErrUnknownKey} {
		if errors.Is(err, f) {
			return f
		}
	}
	if errors.Is(err, jwt.ErrTokenSignatureInvalid) || errors.Is(err, jwt.ErrTokenUnverifiable) {
		return ErrBadSignature // unverifiable: an algorithm jwt does not know ("None")
	}
	return ErrMalformed
}

// key returns the verification key for t; the parser has already refused
// any algorithm outside the pinned set.
func (v *Verifier) key(ctx context.Context, t *jwt.Token) (any, error) {
	switch {
	case v.secret != nil:
		return v.secret, nil
	case v.pub != nil:
		return v.pub, nil
	}
	return jwksKey(ctx, v.jwks, t)
}

// check applies §3's claim rules to signed claims. Expiry is checked last so
// that token_expired means "renew and you are fine".
func (v *Verifier) check(cl *claims) (Principal, error) {
	bad := func(format string, args ...any) (Principal, error) {
		return Principal{}, fmt.Errorf("auth: %w", invalidClaims(format, args...))
	}
	if cl.ExpiresAt == nil {
		return bad("exp claim required")
	}
	if !names.ValidMember(cl.Subject) {
		return bad("sub must match %s", names.MemberRule)
	}
	role := cl.Role
	if role == "" {
		role = Player
	}
	if !role.Valid() {
		return bad("unknown role %q", role)
	}
	// An empty name is an absent one; any other must be a valid display
	// name, else the token is refused (docs/protocol.md says why).
	name := cl.Name
	if name != "" {
		n, err := names.Normalize(name)
		if err != nil {
			return bad("name: %v", err)
		}
		name = n
	}
	if v.audience != "" && !slices.Contains(cl.Audience, v.audience) {
		return Principal{}, fmt.Errorf("auth: %w", ErrAudience)
	}
	now := v.now()
	if cl.NotBefore != nil && now.Add(v.leeway).Before(cl.NotBefore.Time) {
		return Principal{}, fmt.Errorf("auth: %w: nbf %s", ErrNotYetValid, cl.NotBefore.UTC().Format(time.RFC3339))
	}
	if cl.IssuedAt != nil && now.Add(v.leeway).Before(cl.IssuedAt.Time) {
		return Principal{}, fmt.Errorf("auth: %w: issued in the future, iat %s", ErrNotYetValid, cl.IssuedAt.UTC().Format(time.RFC3339))
	}
	exp := cl.ExpiresAt.Time
	if !now.Before(exp.Add(v.leeway)) {
		return Principal{}, fmt.Errorf("auth: %w at %s", ErrTokenExpired, exp.UTC().Format(time.RFC3339))
	}
	p := Principal{Member: cl.Subject, Role: role, Name: name, Expiry: exp}
	if cl.Boards.set {
		p.Boards = cl.Boards.list
	}
	return p, nil
}
