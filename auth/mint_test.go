package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestMintRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		claims Claims
		cfg    Config
		want   Principal
	}{
		{"minimal", Claims{Sub: "alice"}, Config{}, Principal{Member: "alice", Role: Player}},
		{"full", Claims{Sub: "bot.1", Role: Server, Boards: []string{"a", "b"}, Name: "Bot Ünø"},
			Config{}, Principal{Member: "bot.1", Role: Server, Boards: []string{"a", "b"}, Name: "Bot Ünø"}},
		{"empty boards stay empty", Claims{Sub: "s", Role: Spectator, Boards: []string{}},
			Config{}, Principal{Member: "s", Role: Spectator, Boards: []string{}}},
		{"issuer and audience", Claims{Sub: "alice", Role: Admin, Issuer: "wsgateway", Audience: "lb"},
			Config{Issuer: "wsgateway", Audience: "lb"}, Principal{Member: "alice", Role: Admin}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tok, err := MintHS256(testSecret, tc.claims)
			if err != nil {
				t.Fatalf("MintHS256: %v", err)
			}
			cfg := tc.cfg
			cfg.Secret, cfg.Now = testSecret, time.Now
			p, err := verify(t, newVerifier(t, cfg), tok)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if d := time.Until(p.Expiry); d < DefaultTTL-time.Minute || d > DefaultTTL {
				t.Errorf("expiry in %v, want about %v", d, DefaultTTL)
			}
			p.Expiry = time.Time{}
			if !samePrincipal(p, tc.want) { // DeepEqual: nil and empty boards differ
				t.Errorf("principal = %#v, want %#v", p, tc.want)
			}
		})
	}
}

func TestMintPayload(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		claims Claims
		has    []string
		hasNot []string
	}{
		{"absent boards and role left out", Claims{Sub: "a"}, []string{`"sub":"a"`, `"exp":`, `"iat":`}, []string{"boards", "role", "name", "iss", "aud"}},
		{"empty boards written", Claims{Sub: "a", Boards: []string{}}, []string{`"boards":[]`}, nil},
		{"role and name written", Claims{Sub: "a", Role: Admin, Name: "A"}, []string{`"role":"admin"`, `"name":"A"`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tok, err := MintHS256(testSecret, tc.claims)
			if err != nil {
				t.Fatal(err)
			}
			payload, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
			if err != nil || !json.Valid(payload) {
				t.Fatalf("payload %q: %v", payload, err)
			}
			for _, s := range tc.has {
				if !bytes.Contains(payload, []byte(s)) {
					t.Errorf("payload %s lacks %s", payload, s)
				}
			}
			for _, s := range tc.hasNot {
				if bytes.Contains(payload, []byte(s)) {
					t.Errorf("payload %s has %s", payload, s)
				}
			}
		})
	}
}

func TestMintTTL(t *testing.T) {
	t.Parallel()
	v := newVerifier(t, Config{Secret: testSecret, Now: time.Now})
	for _, tc := range []struct {
		ttl  time.Duration
		want *Error
	}{
		{time.Minute, nil},
		{-time.Hour, ErrTokenExpired},
	} {
		tok, err := MintHS256(testSecret, Claims{Sub: "alice", TTL: tc.ttl})
		if err != nil {
			t.Fatal(err)
		}
		p, err := verify(t, v, tok)
		wantErr(t, err, tc.want, tok)
		if err == nil {
			if d := time.Until(p.Expiry); d > tc.ttl || d < tc.ttl-time.Minute {
				t.Errorf("TTL %v: expiry in %v", tc.ttl, d)
			}
		}
	}
}

func TestMintErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		secret []byte
		claims Claims
		want   string
	}{
		{"short secret", []byte("short"), Claims{Sub: "a"}, "secret is 5 bytes"},
		{"no sub", testSecret, Claims{}, "sub"},
		{"bad sub", testSecret, Claims{Sub: "a b"}, "sub"},
		{"bad role", testSecret, Claims{Sub: "a", Role: "root"}, "unknown role"},
		{"long name", testSecret, Claims{Sub: "a", Name: strings.Repeat("x", 33)}, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := MintHS256(tc.secret, tc.claims)
			if err == nil || !strings.HasPrefix(err.Error(), "auth: mint: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("MintHS256 error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestRandomSecret(t *testing.T) {
	t.Parallel()
	a, err := RandomSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, err := RandomSecret()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 32 || len(b) != 32 || bytes.Equal(a, b) {
		t.Fatalf("secrets %x and %x", a, b)
	}
	if _, err := New(t.Context(), Config{Secret: a}); err != nil {
		t.Errorf("a random secret is not accepted: %v", err)
	}
}
