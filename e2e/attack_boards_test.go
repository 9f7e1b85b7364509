package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
)

// TestBoardsClaimOnGlobalRoutes is issue 33 B4: a token limited to some
// boards may act on those boards only, so the global routes (global bans,
// profile writes and deletes, which reach every board) answer it 403
// forbidden and change nothing; a token for every board may, and reading a
// profile needs no board. Before the fix an admin token limited to b1
// banned a member everywhere and a server token limited to b1 renamed any
// member.
func TestBoardsClaimOnGlobalRoutes(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOpts{})
	putBoard(t, g, "b1", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin := adminToken(t)
	limitedAdmin := token(t, auth.Claims{Sub: "mod", Role: auth.Admin, Boards: []string{"b1"}})
	limitedServer := token(t, auth.Claims{Sub: "bot", Role: auth.Server, Boards: []string{"b1"}})
	if st, body, err := rest(ctx, "PUT", g.HTTP()+"/api/v1/members/ann/profile", admin, map[string]any{"name": "Ann"}, nil); err != nil || st != 200 {
		t.Fatalf("profile as an unrestricted admin: %d %s %v", st, body, err)
	}
	for _, tc := range []struct {
		method, path, tok string
		body              any
	}{
		{"PUT", "/api/v1/bans/ann", limitedAdmin, map[string]any{"reason": "everywhere"}},
		{"GET", "/api/v1/bans", limitedAdmin, nil},
		{"DELETE", "/api/v1/bans/ann", limitedAdmin, nil},
		{"PUT", "/api/v1/members/ann/profile", limitedServer, map[string]any{"name": "Renamed"}},
		{"PUT", "/api/v1/members/ann/profile", limitedAdmin, map[string]any{"name": "Renamed"}},
		{"DELETE", "/api/v1/members/ann/profile", limitedAdmin, nil},
	} {
		st, body, err := rest(ctx, tc.method, g.HTTP()+tc.path, tc.tok, tc.body, nil)
		var eb proto.ErrorBody
		json.Unmarshal(body, &eb)
		if err != nil || st != 403 || eb.Error.Code != proto.CodeForbidden {
			t.Errorf("%s %s with a token limited to b1: %d %s %v, want 403 forbidden", tc.method, tc.path, st, body, err)
		}
	}
	// Nothing changed.
	var bans struct {
		Bans []map[string]any `json:"bans"`
	}
	if st, body, err := rest(ctx, "GET", g.HTTP()+"/api/v1/bans", admin, nil, &bans); err != nil || st != 200 || len(bans.Bans) != 0 {
		t.Errorf("global bans after the refused ban: %d %s %v, want none", st, body, err)
	}
	var prof struct {
		Name string `json:"name"`
	}
	if st, body, err := rest(ctx, "GET", g.HTTP()+"/api/v1/members/ann/profile", limitedServer, nil, &prof); err != nil || st != 200 || prof.Name != "Ann" {
		t.Errorf("the profile after the refused writes (read with a limited token): %d %s %v, want Ann", st, body, err)
	}
	// The board the token is for is still its own.
	if st, body, err := rest(ctx, "PUT", g.HTTP()+"/api/v1/boards/b1/bans/ann", limitedAdmin, map[string]any{"reason": "here"}, nil); err != nil || st != 200 {
		t.Errorf("a ban on b1 with a token for b1: %d %s %v", st, body, err)
	}
}
