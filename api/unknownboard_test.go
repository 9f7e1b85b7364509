package api_test

import (
	"strings"
	"testing"
)

// TestEveryBoardRouteUnknownBoard (§14, v1.3): every board route answers a
// board that is not there with 404 unknown_board, PATCH included, on
// both engines, and none of them creates it.
func TestEveryBoardRouteUnknownBoard(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		adm := adminToken(t)
		const b = "/api/v1/boards/ghost"
		for _, tc := range []struct{ method, path, body string }{
			{"GET", b, ""},
			{"PATCH", b, `{"title":"x"}`},
			{"DELETE", b, ""},
			{"GET", b + "/top", ""},
			{"GET", b + "/cohorts/1/top", ""},
			{"GET", b + "/members?ids=ann", ""},
			{"POST", b + "/scores", `[{"id":"1","member":"ann","delta":1}]`},
			{"GET", b + "/members/ann", ""},
			{"GET", b + "/members/ann/history", ""},
			{"DELETE", b + "/members/ann", ""},
			{"PUT", b + "/bans/ann", `{"reason":"x"}`},
			{"DELETE", b + "/bans/ann", ""},
			{"GET", b + "/bans", ""},
		} {
			r := e.do(tc.method, tc.path, adm, tc.body)
			if r.status != 404 || !strings.Contains(string(r.body), `"code":"unknown_board"`) {
				t.Errorf("%s %s: %d %s, want 404 unknown_board", tc.method, tc.path, r.status, r.body)
			}
		}
		e.do("GET", b, adm, "").wantError(t, 404, "unknown_board")
	})
}
