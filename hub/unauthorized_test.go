package hub_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
)

// TestUpgradeUnauthorizedNamesFault: the 401 before an upgrade says which
// fault refused the token (R30), never just "invalid".
func TestUpgradeUnauthorizedNamesFault(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{})
	badSig, err := auth.MintHS256([]byte("another-secret-another-secret-another"), auth.Claims{Sub: "alice", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	signed := func(claims jwt.MapClaims) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(in.secret)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	exp := time.Now().Add(time.Hour).Unix()
	for _, tc := range []struct{ name, token, code, message string }{
		{"missing", "", proto.CodeUnauthorized, "missing token"},
		{"malformed", "not.a.jwt", proto.CodeUnauthorized, "malformed token"},
		{"bad signature", badSig, proto.CodeUnauthorized, "bad signature"},
		{"not yet valid", signed(jwt.MapClaims{"sub": "alice", "exp": exp, "nbf": time.Now().Add(time.Hour).Unix()}), proto.CodeUnauthorized, "token not valid yet"},
		{"invalid claims", signed(jwt.MapClaims{"sub": "alice", "exp": exp, "role": "root"}), proto.CodeUnauthorized, `invalid claims: unknown role "root"`},
		{"expired", in.tokenTTL(t, "alice", auth.Player, -time.Hour), proto.CodeTokenExpired, "token expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, resp, err := g.dialErr(tc.token, dialOptions{})
			if err == nil || resp == nil {
				t.Fatalf("dial succeeded (err %v)", err)
			}
			var body proto.ErrorBody
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("body: %v", err)
			}
			if resp.StatusCode != 401 || body.Error.Code != tc.code || body.Error.Message != tc.message {
				t.Fatalf("%d %+v, want 401 %s %q", resp.StatusCode, body.Error, tc.code, tc.message)
			}
		})
	}
}
