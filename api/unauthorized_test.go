package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
)

// TestUnauthorizedNamesFault: a REST 401 says which fault refused the
// token (R30), before a body is read and after, and the log says it too
// without the token.
func TestUnauthorizedNamesFault(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memEngine().new(t))
	e.putBoard("u", "")
	good := serverToken(t)
	parts := strings.Split(good, ".")
	badSig, err := auth.MintHS256([]byte("another-secret-another-secret-another"), auth.Claims{Sub: "game", Role: auth.Server})
	if err != nil {
		t.Fatal(err)
	}
	expired, err := auth.MintHS256(testSecret, auth.Claims{Sub: "game", Role: auth.Server, TTL: -time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, token, code, message string }{
		{"malformed", "not.a.jwt", proto.CodeUnauthorized, "malformed token"},
		{"truncated signature", parts[0] + "." + parts[1] + ".", proto.CodeUnauthorized, "bad signature"},
		{"bad signature", badSig, proto.CodeUnauthorized, "bad signature"},
		{"expired", expired, proto.CodeTokenExpired, "token expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []resp{
				e.do("GET", "/api/v1/boards/u/top", tc.token, ""),
				e.do("POST", "/api/v1/boards/u/scores", tc.token, `[{"id":"1","member":"a","delta":1}]`),
			} {
				eb := r.wantError(t, 401, tc.code)
				if eb.Error.Message != tc.message {
					t.Errorf("message %q, want %q", eb.Error.Message, tc.message)
				}
			}
		})
	}
	logs := e.logs.String()
	for _, want := range []string{"malformed token", "bad signature"} {
		if !strings.Contains(logs, "api: token refused") || !strings.Contains(logs, want) {
			t.Errorf("the log does not say %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, parts[1]) || strings.Contains(logs, badSig) {
		t.Error("a token is in the log")
	}
}
