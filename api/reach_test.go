package api_test

import (
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/auth"
)

// TestScopedAdminReach: an admin token limited to some boards (its boards
// claim) may not reach a board outside the claim through a config: a
// derived board whose source names one (PUT, union and window) is a 403
// naming source, a group the claim does not name a 403 naming group, and
// nothing is stored, so the other board's owner still deletes it. Within
// its claim it builds derived boards, and it may retitle a derived board
// an unlimited admin made over boards it may not access. Both engines.
func TestScopedAdminReach(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		adm := adminToken(t)
		e.putBoard("vip", `{"public":true}`)
		e.putBoard("vipday", `{"reset":"daily"}`)
		e.scores("vip", `[{"id":"1","member":"whale","delta":1000}]`)
		mine := token(t, "ops", auth.Admin, []string{"mine", "mine2", "pool"})

		for _, tc := range []struct{ method, body, field string }{
			// The probe: a union over a board outside the claim.
			{"PUT", `{"group":"vip","source":{"kind":"union","boards":["vip"]}}`, "source"},
			{"PUT", `{"group":"vipday","source":{"kind":"window","board":"vipday","periods":3}}`, "source"},
			// One source inside, one outside.
			{"PUT", `{"group":"vip","source":{"kind":"union","boards":["mine2","vip"]}}`, "source"},
			// A group the claim does not name: the other board's slot.
			{"PUT", `{"group":"vip"}`, "group"},
			{"PUT", `{"group":"cats"}`, "group"},
		} {
			eb := e.do(tc.method, "/api/v1/boards/mine", mine, tc.body).wantError(t, 403, "forbidden")
			if !strings.Contains(eb.Error.Message, "field "+tc.field) {
				t.Errorf("%s %s: message %q does not name %s", tc.method, tc.body, eb.Error.Message, tc.field)
			}
			e.do("GET", "/api/v1/boards/mine", adm, "").wantError(t, 404, "unknown_board")
		}

		// Within the claim: a group it names, a union of its own boards.
		e.do("PUT", "/api/v1/boards/mine2", mine, `{"group":"pool"}`).wantStatus(t, 200)
		e.do("PUT", "/api/v1/boards/mine", mine, `{"group":"pool","source":{"kind":"union","boards":["mine2"]}}`).wantStatus(t, 200)
		e.do("PATCH", "/api/v1/boards/mine", mine, `{"title":"Mine"}`).wantStatus(t, 200)

		// A derived board an unlimited admin made over vip: a token limited
		// to it may retitle it, but not reach further.
		e.putBoard("vipsum", `{"group":"vip","source":{"kind":"union","boards":["vip"]}}`)
		own := token(t, "ops", auth.Admin, []string{"vipsum"})
		e.do("PATCH", "/api/v1/boards/vipsum", own, `{"title":"Sum"}`).wantStatus(t, 200)
		e.do("PUT", "/api/v1/boards/vipsum", own, `{"title":"Sum","group":"vip","source":{"kind":"union","boards":["vip"]}}`).wantStatus(t, 200)
		e.do("PATCH", "/api/v1/boards/vipsum", own, `{"source":{"kind":"union","boards":["vip","vipday"],"weights":[1,1]}}`).wantError(t, 403, "forbidden")
		e.do("DELETE", "/api/v1/boards/vipsum", adm, "").wantStatus(t, 204)

		// Nothing of the refused configs reaches vip: its owner deletes it.
		e.do("DELETE", "/api/v1/boards/vip", adm, "").wantStatus(t, 204)
	})
}
