package api_test

import (
	"strings"
	"testing"
)

// TestCohorts (§12): on a cohort board score results carry the cohort and
// ranks within it, GET …/cohorts/{cohort}/top pages one cohort, member
// reads are within the member's cohort and name it, and GET …/top stays
// the whole board's; a bad cohort id or a board without cohorts is a 400.
func TestCohorts(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("grp", `{"mode":"best","cohort":{"size":2}}`)
		e.putBoard("plain", `{}`)
		// One request per event: cohorts fill in order of arrival.
		for _, tc := range []struct{ body, want string }{
			{`{"id":"s1","member":"a","value":10}`, `{"id":"s1","board":"grp","member":"a","score":10,"rank":1,"prev_rank":null,"duplicate":false,"seq":1,"cohort":"1"}`},
			{`{"id":"s2","member":"b","value":30}`, `{"id":"s2","board":"grp","member":"b","score":30,"rank":1,"prev_rank":null,"duplicate":false,"seq":2,"cohort":"1"}`},
			// c is second on the board, first in cohort 2.
			{`{"id":"s3","member":"c","value":20}`, `{"id":"s3","board":"grp","member":"c","score":20,"rank":1,"prev_rank":null,"duplicate":false,"seq":3,"cohort":"2"}`},
		} {
			r := e.do("POST", "/api/v1/boards/grp/scores", serverToken(t), "["+tc.body+"]")
			r.wantStatus(t, 200)
			if got := strings.TrimSpace(string(r.body)); got != "["+tc.want+"]" {
				t.Fatalf("score %s: %s\nwant [%s]", tc.body, got, tc.want)
			}
		}
		tok := token(t, "a", "player", []string{"grp", "plain"})
		for path, want := range map[string]string{
			"/api/v1/boards/grp/cohorts/1/top":          `{"board":"grp","cohort":"1","offset":0,"entries":[{"rank":1,"member":"b","score":30},{"rank":2,"member":"a","score":10}],"total":2}`,
			"/api/v1/boards/grp/cohorts/1/top?offset=1": `{"board":"grp","cohort":"1","offset":1,"entries":[{"rank":2,"member":"a","score":10}],"total":2}`,
			"/api/v1/boards/grp/cohorts/2/top":          `{"board":"grp","cohort":"2","offset":0,"entries":[{"rank":1,"member":"c","score":20}],"total":1}`,
			"/api/v1/boards/grp/cohorts/3/top":          `{"board":"grp","cohort":"3","offset":0,"entries":[],"total":0}`,
			"/api/v1/boards/grp/top":                    `{"board":"grp","offset":0,"entries":[{"rank":1,"member":"b","score":30},{"rank":2,"member":"c","score":20},{"rank":3,"member":"a","score":10}],"total":3}`,
			"/api/v1/boards/grp/members/a?around=1":     `{"board":"grp","member":"a","rank":2,"score":10,"around":[{"rank":1,"member":"b","score":30},{"rank":2,"member":"a","score":10}],"cohort":"1"}`,
			"/api/v1/boards/grp/members/c?around=1":     `{"board":"grp","member":"c","rank":1,"score":20,"around":[{"rank":1,"member":"c","score":20}],"cohort":"2"}`,
			"/api/v1/boards/grp/members/nobody":         `{"board":"grp","member":"nobody","rank":null,"score":null,"around":[]}`,
			// A list ranks on the whole board (§11), not within cohorts.
			"/api/v1/boards/grp/members?ids=a,c": `{"board":"grp","entries":[{"rank":2,"member":"c","score":20},{"rank":3,"member":"a","score":10}],"total":3}`,
			"/api/v1/boards/plain/members/a":     `{"board":"plain","member":"a","rank":null,"score":null,"around":[]}`,
		} {
			r := e.do("GET", path, tok, "")
			r.wantStatus(t, 200)
			if got := strings.TrimSpace(string(r.body)); got != want {
				t.Errorf("GET %s: %s\nwant %s", path, got, want)
			}
		}
		for _, path := range []string{
			"/api/v1/boards/grp/cohorts/0/top", "/api/v1/boards/grp/cohorts/x/top", "/api/v1/boards/grp/cohorts/01/top",
			"/api/v1/boards/grp/cohorts/bronze-1/top", "/api/v1/boards/plain/cohorts/1/top",
			"/api/v1/boards/grp/cohorts/1/top?limit=0", "/api/v1/boards/grp/cohorts/1/top?offset=-1",
		} {
			e.do("GET", path, tok, "").wantError(t, 400, "bad_request")
		}
		e.do("GET", "/api/v1/boards/nope/cohorts/1/top", adminToken(t), "").wantError(t, 404, "unknown_board")
		// Placement depends on the size: fixed at creation (§12, §14).
		e.do("PATCH", "/api/v1/boards/grp", adminToken(t), `{"cohort":{"size":3}}`).wantError(t, 409, "read_only")
		e.do("PUT", "/api/v1/boards/grp", adminToken(t), `{"mode":"best"}`).wantError(t, 409, "read_only")
		e.do("GET", "/api/v1/boards/grp/cohorts/1/top", token(t, "a", "player", []string{"plain"}), "").wantError(t, 403, "forbidden")
		e.do("GET", "/api/v1/boards/grp/cohorts/1/top", "", "").wantError(t, 401, "unauthorized")
	})
}

// TestLeagueTiers (§12): on a league board score results and member reads
// carry the tier, cohort ids name it, and a member read of a member not on
// the board gives the tier its first event would place it in.
func TestLeagueTiers(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("lg", `{"reset":"daily","cohort":{"size":2},"league":{"tiers":["bronze","silver"],"promote":1,"demote":1}}`)
		r := e.do("POST", "/api/v1/boards/lg/scores", serverToken(t), `[{"id":"l1","member":"x","delta":5}]`)
		r.wantStatus(t, 200)
		if !strings.Contains(string(r.body), `"rank":1,"prev_rank":null,"duplicate":false,"seq":1,"period":`) ||
			!strings.HasSuffix(strings.TrimSpace(string(r.body)), `,"cohort":"bronze-1","tier":"bronze"}]`) {
			t.Fatalf("score: %s", r.body)
		}
		tok := serverToken(t)
		for path, want := range map[string]string{
			"/api/v1/boards/lg/members/x":      `"member":"x","rank":1,"score":5,"around":[{"rank":1,"member":"x","score":5}],"cohort":"bronze-1","tier":"bronze"}`,
			"/api/v1/boards/lg/members/nobody": `"member":"nobody","rank":null,"score":null,"around":[],"tier":"bronze"}`,
		} {
			r := e.do("GET", path, tok, "")
			r.wantStatus(t, 200)
			if !strings.HasSuffix(strings.TrimSpace(string(r.body)), want) {
				t.Errorf("GET %s: %s\nwant …%s", path, r.body, want)
			}
		}
		r = e.do("GET", "/api/v1/boards/lg/cohorts/bronze-1/top", tok, "")
		r.wantStatus(t, 200)
		if !strings.Contains(string(r.body), `"cohort":"bronze-1","period":`) || !strings.HasSuffix(strings.TrimSpace(string(r.body)), `"entries":[{"rank":1,"member":"x","score":5}],"total":1}`) {
			t.Errorf("cohort bronze-1: %s", r.body)
		}
		e.do("GET", "/api/v1/boards/lg/cohorts/1/top", tok, "").wantError(t, 400, "bad_request")
		e.do("GET", "/api/v1/boards/lg/cohorts/gold-1/top", tok, "").wantError(t, 400, "bad_request")
	})
}
