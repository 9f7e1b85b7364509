package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// testNow is the fixed clock of the claim tests.
var testNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func fixedNow() time.Time { return testNow }

// testSecret is a valid HS256 key.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// sign signs claims with method and key, adding header fields (e.g. kid).
func sign(t testing.TB, method jwt.SigningMethod, key any, header map[string]any, claims map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, jwt.MapClaims(claims))
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", method.Alg(), err)
	}
	return s
}

// unsigned builds an `alg: none` token by hand: golang-jwt refuses to sign
// one without its unsafe marker, and the point is that nothing accepts it.
func unsigned(t testing.TB, header, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	h := map[string]any{"alg": "none", "typ": "JWT"}
	for k, v := range header {
		h[k] = v
	}
	return enc(h) + "." + enc(claims) + "."
}

// valid returns claims that pass every rule at testNow; extra overrides them
// and a nil value deletes the claim.
func valid(extra map[string]any) map[string]any {
	c := map[string]any{"sub": "alice", "exp": testNow.Add(time.Hour).Unix()}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

// wantErr checks err against the expected sentinel (nil: success), that the
// contract code is right and that the token does not leak into the message.
func wantErr(t *testing.T, err error, want *Error, token string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("Verify: unexpected error %v", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("Verify error = %v, want %v", err, want)
	}
	var coded interface{ Code() string }
	if !errors.As(err, &coded) || coded.Code() != want.Code() {
		t.Fatalf("error %v has no code %q", err, want.Code())
	}
	if !strings.HasPrefix(err.Error(), "auth: ") {
		t.Errorf("error %q lacks the auth: prefix", err)
	}
	if token != "" && strings.Contains(err.Error(), token) {
		t.Errorf("error message contains the token")
	}
}

// logBuffer collects log output for assertions, safely across goroutines.
type logBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func newVerifier(t *testing.T, cfg Config) *Verifier {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = fixedNow
	}
	v, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return v
}

// verify runs Verify with a bounded context.
func verify(t *testing.T, v *Verifier, token string) (Principal, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return v.Verify(ctx, token)
}
