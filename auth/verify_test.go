package auth

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestVerifyClaims(t *testing.T) {
	t.Parallel()
	v := newVerifier(t, Config{Secret: testSecret})
	exp := testNow.Add(time.Hour).Truncate(time.Second)
	for _, tc := range []struct {
		name   string
		claims map[string]any
		want   *Error
		check  func(t *testing.T, p Principal)
	}{
		{name: "minimal", claims: valid(nil), check: func(t *testing.T, p Principal) {
			want := Principal{Member: "alice", Role: Player, Expiry: exp}
			if !samePrincipal(p, want) {
				t.Errorf("principal = %+v, want %+v", p, want)
			}
		}},
		{name: "all claims", claims: valid(map[string]any{"role": "admin", "boards": []string{"a", "b"}, "name": "Alice"}),
			check: func(t *testing.T, p Principal) {
				want := Principal{Member: "alice", Role: Admin, Boards: []string{"a", "b"}, Name: "Alice", Expiry: exp}
				if !samePrincipal(p, want) {
					t.Errorf("principal = %+v, want %+v", p, want)
				}
			}},

		// sub
		{name: "sub missing", claims: valid(map[string]any{"sub": nil}), want: ErrUnauthorized},
		{name: "sub empty", claims: valid(map[string]any{"sub": ""}), want: ErrUnauthorized},
		{name: "sub with space", claims: valid(map[string]any{"sub": "al ice"}), want: ErrUnauthorized},
		{name: "sub with slash", claims: valid(map[string]any{"sub": "a/b"}), want: ErrUnauthorized},
		{name: "sub non-ascii", claims: valid(map[string]any{"sub": "alïce"}), want: ErrUnauthorized},
		{name: "sub 65 chars", claims: valid(map[string]any{"sub": strings.Repeat("a", 65)}), want: ErrUnauthorized},
		{name: "sub 64 chars", claims: valid(map[string]any{"sub": strings.Repeat("a", 64)})},
		{name: "sub all allowed punctuation", claims: valid(map[string]any{"sub": "a_b.c:d@e-F9"})},
		{name: "sub number", claims: valid(map[string]any{"sub": 42}), want: ErrUnauthorized},

		// role
		{name: "role player", claims: valid(map[string]any{"role": "player"}), check: wantRole(Player)},
		{name: "role spectator", claims: valid(map[string]any{"role": "spectator"}), check: wantRole(Spectator)},
		{name: "role server", claims: valid(map[string]any{"role": "server"}), check: wantRole(Server)},
		{name: "role admin", claims: valid(map[string]any{"role": "admin"}), check: wantRole(Admin)},
		{name: "role empty is player", claims: valid(map[string]any{"role": ""}), check: wantRole(Player)},
		{name: "role unknown", claims: valid(map[string]any{"role": "root"}), want: ErrInvalidClaims},
		{name: "role wrong case", claims: valid(map[string]any{"role": "Admin"}), want: ErrUnauthorized},
		{name: "role number", claims: valid(map[string]any{"role": 1}), want: ErrUnauthorized},

		// boards
		{name: "boards absent is all", claims: valid(nil), check: func(t *testing.T, p Principal) {
			if p.Boards != nil || !p.MayAccess("x") {
				t.Errorf("boards = %#v", p.Boards)
			}
		}},
		{name: "boards empty is none", claims: valid(map[string]any{"boards": []string{}}), check: func(t *testing.T, p Principal) {
			if p.Boards == nil || len(p.Boards) != 0 || p.MayAccess("x") {
				t.Errorf("boards = %#v", p.Boards)
			}
		}},
		{name: "boards list", claims: valid(map[string]any{"boards": []string{"x"}}), check: func(t *testing.T, p Principal) {
			if !p.MayAccess("x") || p.MayAccess("y") {
				t.Errorf("boards = %#v", p.Boards)
			}
		}},
		{name: "boards null", claims: valid(map[string]any{"boards": jsonNull{}}), want: ErrUnauthorized},
		{name: "boards string", claims: valid(map[string]any{"boards": "x"}), want: ErrUnauthorized},
		{name: "boards numbers", claims: valid(map[string]any{"boards": []int{1}}), want: ErrUnauthorized},

		// name
		{name: "name 32 runes", claims: valid(map[string]any{"name": strings.Repeat("é", 32)}), check: func(t *testing.T, p Principal) {
			if p.Name != strings.Repeat("é", 32) {
				t.Errorf("name = %q", p.Name)
			}
		}},
		{name: "name 33 runes", claims: valid(map[string]any{"name": strings.Repeat("a", 33)}), want: ErrInvalidClaims},
		{name: "name number", claims: valid(map[string]any{"name": 7}), want: ErrUnauthorized},
		{name: "name variation selector", claims: valid(map[string]any{"name": "Alice\ufe0f"}), want: ErrInvalidClaims},
		{name: "name Cyrillic look-alike", claims: valid(map[string]any{"name": "\u0410lice"}), want: ErrInvalidClaims},
		{name: "name fullwidth", claims: valid(map[string]any{"name": "\uff21\uff4c\uff49\uff43\uff45"}), want: ErrInvalidClaims},
		{name: "name decomposed", claims: valid(map[string]any{"name": "Zoe\u0308"}), check: func(t *testing.T, p Principal) {
			if p.Name != "Zo\u00eb" {
				t.Errorf("name = %q, want the NFC form", p.Name)
			}
		}},

		// exp
		{name: "exp missing", claims: valid(map[string]any{"exp": nil}), want: ErrInvalidClaims},
		{name: "exp string", claims: valid(map[string]any{"exp": "soon"}), want: ErrUnauthorized},
		{name: "exp passed", claims: valid(map[string]any{"exp": testNow.Add(-time.Minute).Unix()}), want: ErrTokenExpired},
		{name: "exp at leeway edge", claims: valid(map[string]any{"exp": testNow.Add(-DefaultLeeway).Unix()}), want: ErrTokenExpired},
		{name: "exp within leeway", claims: valid(map[string]any{"exp": testNow.Add(-3 * time.Second).Unix()})},
		{name: "expired but bad role", claims: valid(map[string]any{"exp": testNow.Add(-time.Hour).Unix(), "role": "root"}), want: ErrInvalidClaims},
		{name: "expired and not yet valid", claims: valid(map[string]any{"exp": testNow.Add(-time.Hour).Unix(), "nbf": testNow.Add(time.Hour).Unix()}), want: ErrNotYetValid},

		// nbf, iat
		{name: "nbf future", claims: valid(map[string]any{"nbf": testNow.Add(time.Minute).Unix()}), want: ErrNotYetValid},
		{name: "nbf within leeway", claims: valid(map[string]any{"nbf": testNow.Add(3 * time.Second).Unix()})},
		{name: "nbf past", claims: valid(map[string]any{"nbf": testNow.Add(-time.Minute).Unix()})},
		{name: "iat far future", claims: valid(map[string]any{"iat": testNow.Add(24 * time.Hour).Unix()}), want: ErrNotYetValid},
		{name: "iat within leeway", claims: valid(map[string]any{"iat": testNow.Add(3 * time.Second).Unix()})},
		{name: "iat past", claims: valid(map[string]any{"iat": testNow.Add(-time.Minute).Unix()})},

		// iss/aud are not checked when not configured
		{name: "any iss and aud accepted", claims: valid(map[string]any{"iss": "whoever", "aud": "anyone"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tok := sign(t, jwt.SigningMethodHS256, testSecret, nil, tc.claims)
			p, err := verify(t, v, tok)
			wantErr(t, err, tc.want, tok)
			if tc.check != nil && err == nil {
				tc.check(t, p)
			}
		})
	}
}

// samePrincipal compares principals, times by instant.
func samePrincipal(a, b Principal) bool {
	ok := a.Expiry.Equal(b.Expiry)
	a.Expiry, b.Expiry = time.Time{}, time.Time{}
	return ok && reflect.DeepEqual(a, b)
}

// jsonNull marshals as null (a nil map value in valid means "delete").
type jsonNull struct{}

func (jsonNull) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

func wantRole(r Role) func(*testing.T, Principal) {
	return func(t *testing.T, p Principal) {
		t.Helper()
		if p.Role != r {
			t.Errorf("role = %q, want %q", p.Role, r)
		}
	}
}

func TestVerifyIssuerAudience(t *testing.T) {
	t.Parallel()
	v := newVerifier(t, Config{Secret: testSecret, Issuer: "https://idp.example", Audience: "lb"})
	for _, tc := range []struct {
		name   string
		claims map[string]any
		want   *Error
	}{
		{"match", valid(map[string]any{"iss": "https://idp.example", "aud": "lb"}), nil},
		{"aud in list", valid(map[string]any{"iss": "https://idp.example", "aud": []string{"other", "lb"}}), nil},
		{"wrong iss", valid(map[string]any{"iss": "https://evil.example", "aud": "lb"}), ErrIssuer},
		{"missing iss", valid(map[string]any{"aud": "lb"}), ErrIssuer},
		{"wrong aud", valid(map[string]any{"iss": "https://idp.example", "aud": "other"}), ErrAudience},
		{"missing aud", valid(map[string]any{"iss": "https://idp.example"}), ErrAudience},
		{"expired with wrong iss", valid(map[string]any{"iss": "x", "aud": "lb", "exp": testNow.Add(-time.Hour).Unix()}), ErrIssuer},
		{"expired otherwise fine", valid(map[string]any{"iss": "https://idp.example", "aud": "lb", "exp": testNow.Add(-time.Hour).Unix()}), ErrTokenExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tok := sign(t, jwt.SigningMethodHS256, testSecret, nil, tc.claims)
			_, err := verify(t, v, tok)
			wantErr(t, err, tc.want, tok)
		})
	}
}

func TestVerifyHS256Tokens(t *testing.T) {
	t.Parallel()
	v := newVerifier(t, Config{Secret: testSecret})
	good := sign(t, jwt.SigningMethodHS256, testSecret, nil, valid(nil))
	parts := strings.Split(good, ".")
	for _, tc := range []struct {
		name  string
		token string
		want  *Error
	}{
		{"good", good, nil},
		{"empty", "", ErrMissingToken},
		{"garbage", "not-a-token", ErrMalformed},
		{"two segments", parts[0] + "." + parts[1], ErrMalformed},
		{"bad base64", parts[0] + ".!!!." + parts[2], ErrMalformed},
		{"too long", good + strings.Repeat("A", maxTokenLen), ErrMalformed},
		{"tampered payload", parts[0] + "." + sign(t, jwt.SigningMethodHS256, []byte("another-secret-another-secret-xx"), nil, valid(map[string]any{"role": "admin"}))[len(parts[0])+1:], ErrBadSignature},
		{"signature stripped", parts[0] + "." + parts[1] + ".", ErrBadSignature},
		{"wrong secret", sign(t, jwt.SigningMethodHS256, []byte("another-secret-another-secret-xx"), nil, valid(nil)), ErrBadSignature},
		{"HS384 with the secret", sign(t, jwt.SigningMethodHS384, testSecret, nil, valid(nil)), ErrBadSignature},
		{"HS512 with the secret", sign(t, jwt.SigningMethodHS512, testSecret, nil, valid(nil)), ErrBadSignature},
		{"alg none", unsigned(t, nil, valid(nil)), ErrBadSignature},
		{"alg None", unsigned(t, map[string]any{"alg": "None"}, valid(nil)), ErrBadSignature},
		{"expired", sign(t, jwt.SigningMethodHS256, testSecret, nil, valid(map[string]any{"exp": testNow.Add(-time.Hour).Unix()})), ErrTokenExpired},
		{"expired with bad signature", sign(t, jwt.SigningMethodHS256, []byte("another-secret-another-secret-xx"), nil, valid(map[string]any{"exp": testNow.Add(-time.Hour).Unix()})), ErrBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := verify(t, v, tc.token)
			wantErr(t, err, tc.want, tc.token)
		})
	}
}

func TestVerifyInjectedClockAndLeeway(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := testNow
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	v := newVerifier(t, Config{Secret: testSecret, Now: clock, Leeway: time.Minute})
	tok := sign(t, jwt.SigningMethodHS256, testSecret, nil, valid(map[string]any{"exp": testNow.Add(time.Second).Unix()}))
	for _, step := range []struct {
		at   time.Duration
		want *Error
	}{
		{0, nil},
		{30 * time.Second, nil},             // past exp, inside the minute of leeway
		{61 * time.Second, ErrTokenExpired}, // past exp + leeway
	} {
		mu.Lock()
		now = testNow.Add(step.at)
		mu.Unlock()
		_, err := verify(t, v, tok)
		wantErr(t, err, step.want, tok)
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // substring of the error
	}{
		{"nothing", Config{}, "exactly one of --jwt-secret, --jwt-public-key, --jwks-url"},
		{"two", Config{Secret: testSecret, JWKSURL: "https://idp.example/jwks"}, "exactly one"},
		{"three", Config{Secret: testSecret, PublicKeyPEM: []byte("x"), JWKSURL: "https://idp.example/jwks"}, "exactly one"},
		{"short secret", Config{Secret: []byte("short")}, "--jwt-secret is 5 bytes, need at least 32"},
		{"negative leeway", Config{Secret: testSecret, Leeway: -time.Second}, "negative leeway"},
		{"not PEM", Config{PublicKeyPEM: []byte("hello")}, "--jwt-public-key: no PEM public key found"},
		{"jwks not a URL", Config{JWKSURL: "idp.example/jwks"}, "--jwks-url"},
		{"jwks ftp", Config{JWKSURL: "ftp://idp.example/jwks"}, "--jwks-url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(t.Context(), tc.cfg)
			if err == nil || !strings.HasPrefix(err.Error(), "auth: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestVerifyConcurrent shares one Verifier between goroutines (run with -race).
func TestVerifyConcurrent(t *testing.T) {
	t.Parallel()
	v := newVerifier(t, Config{Secret: testSecret})
	good := sign(t, jwt.SigningMethodHS256, testSecret, nil, valid(nil))
	bad := sign(t, jwt.SigningMethodHS256, testSecret, nil, valid(map[string]any{"role": "root"}))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				tok, wantOK := good, true
				if i%2 == 1 {
					tok, wantOK = bad, false
				}
				if _, err := v.Verify(t.Context(), tok); (err == nil) != wantOK {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent verify: %v", err)
	}
}

// TestFaultMessages: each refused token's error reads, from its coded part
// on (what proto.PublicMessage shows a client), the fault's name (R30);
// nothing of the token.
func TestFaultMessages(t *testing.T) {
	t.Parallel()
	v := newVerifier(t, Config{Secret: testSecret, Issuer: "iss", Audience: "aud"})
	ok := map[string]any{"iss": "iss", "aud": "aud"}
	with := func(extra map[string]any) map[string]any {
		m := valid(ok)
		for k, x := range extra {
			m[k] = x
		}
		return m
	}
	good := sign(t, jwt.SigningMethodHS256, testSecret, nil, with(nil))
	parts := strings.Split(good, ".")
	for _, tc := range []struct {
		name, token, want string
	}{
		{"missing", "", "missing token"},
		{"malformed", "not.a.jwt", "malformed token"},
		{"bad signature", parts[0] + "." + parts[1] + ".c2lnbmF0dXJl", "bad signature"},
		{"expired", sign(t, jwt.SigningMethodHS256, testSecret, nil, with(map[string]any{"exp": testNow.Add(-time.Hour).Unix()})), "token expired"},
		{"not yet valid", sign(t, jwt.SigningMethodHS256, testSecret, nil, with(map[string]any{"nbf": testNow.Add(time.Hour).Unix()})), "token not valid yet"},
		{"issuer", sign(t, jwt.SigningMethodHS256, testSecret, nil, with(map[string]any{"iss": "other"})), "wrong issuer"},
		{"audience", sign(t, jwt.SigningMethodHS256, testSecret, nil, with(map[string]any{"aud": "other"})), "wrong audience"},
		{"claims", sign(t, jwt.SigningMethodHS256, testSecret, nil, with(map[string]any{"role": "root"})), `invalid claims: unknown role "root"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := verify(t, v, tc.token)
			var e *Error
			if !errors.As(err, &e) || e.Error() != tc.want {
				t.Fatalf("Verify error = %v, want its coded part to read %q", err, tc.want)
			}
			if tc.token != "" && strings.Contains(err.Error(), tc.token) {
				t.Error("the error holds the token")
			}
		})
	}
}
