package api_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/rank"
)

func newModEnv(t *testing.T, store rank.Store) *env {
	t.Helper()
	return newEnv(t, store)
}

type banList struct {
	Bans []struct {
		Member string  `json:"member"`
		Reason string  `json:"reason"`
		Until  *string `json:"until"`
		At     string  `json:"at"`
	} `json:"bans"`
}

func (e *env) topMembers(t *testing.T, board string) string {
	t.Helper()
	r := e.do("GET", "/api/v1/boards/"+board+"/top", adminToken(t), "")
	r.wantStatus(t, 200)
	var pg struct {
		Entries []struct {
			Member string `json:"member"`
			Score  int64  `json:"score"`
		} `json:"entries"`
		Total int64 `json:"total"`
	}
	r.json(t, &pg)
	var b strings.Builder
	for _, en := range pg.Entries {
		fmt.Fprintf(&b, "%s=%d ", en.Member, en.Score)
	}
	fmt.Fprintf(&b, "total=%d", pg.Total)
	return b.String()
}

func (e *env) actions(t *testing.T) map[string]int {
	t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, mf := range mfs {
		if mf.GetName() != "wsgateway_moderation_actions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = int(m.GetCounter().GetValue())
		}
	}
	return out
}

// TestBans: an admin bans (the member leaves every read, its scores get
// banned 403), lists, and lifts (it is back with its score); each action is
// logged with the admin's sub, counted, and reported to the board listener.
func TestBans(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newModEnv(t, eng.new(t))
		e.putBoard("mb", `{}`)
		e.scores("mb", `[{"id":"1","member":"ann","delta":5},{"id":"2","member":"cheat","delta":50}]`)
		if got := e.topMembers(t, "mb"); got != "cheat=50 ann=5 total=2" {
			t.Fatalf("top before: %s", got)
		}
		until := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
		r := e.do("PUT", "/api/v1/boards/mb/bans/cheat", adminToken(t), `{"reason":"aimbot","until":"`+until+`"}`)
		r.wantStatus(t, 200)
		if got := e.topMembers(t, "mb"); got != "ann=5 total=1" {
			t.Fatalf("top with cheat banned: %s", got)
		}
		r = e.do("GET", "/api/v1/boards/mb/members/cheat", adminToken(t), "")
		r.wantStatus(t, 200)
		if !strings.Contains(string(r.body), `"rank":null`) {
			t.Fatalf("a banned member's rank: %s", r.body)
		}
		acks := e.scores("mb", `[{"id":"3","member":"cheat","delta":1}]`)
		if len(acks) != 1 || acks[0].Error == nil || acks[0].Error.Code != "banned" {
			t.Fatalf("a banned member's score: %+v", acks)
		}
		r = e.do("GET", "/api/v1/boards/mb/bans", adminToken(t), "")
		r.wantStatus(t, 200)
		var l banList
		r.json(t, &l)
		if len(l.Bans) != 1 || l.Bans[0].Member != "cheat" || l.Bans[0].Reason != "aimbot" ||
			l.Bans[0].Until == nil || !sameTime(*l.Bans[0].Until, until) || l.Bans[0].At == "" {
			t.Fatalf("bans: %s", r.body)
		}
		if !strings.Contains(e.logs.String(), "sub=root") || !strings.Contains(e.logs.String(), "action=ban") {
			t.Fatalf("the ban is not logged with the admin's sub:\n%s", e.logs.String())
		}
		e.do("DELETE", "/api/v1/boards/mb/bans/cheat", adminToken(t), "").wantStatus(t, 204)
		if got := e.topMembers(t, "mb"); got != "cheat=50 ann=5 total=2" {
			t.Fatalf("top after the lift: %s", got)
		}
		e.do("DELETE", "/api/v1/boards/mb/bans/cheat", adminToken(t), "").wantError(t, 404, "not_found")
		if a := e.actions(t); a["ban"] != 1 || a["lift"] != 1 {
			t.Fatalf("moderation actions %v", a)
		}
		changed := 0
		for _, ev := range e.boardEvents() {
			if ev.board == "mb" && !ev.deleted {
				changed++
			}
		}
		if changed != 3 { // the PUT of the board, the ban, the lift
			t.Fatalf("board listener heard %v", e.boardEvents())
		}
	})
}

func sameTime(a, b string) bool {
	ta, ea := time.Parse(time.RFC3339Nano, a)
	tb, eb := time.Parse(time.RFC3339Nano, b)
	return ea == nil && eb == nil && ta.Equal(tb)
}

// TestGlobalBansAndRemoval: a global ban hides the member on every board
// (and one created later refuses it), every board is reported; removal
// deletes one period's entry.
func TestGlobalBansAndRemoval(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newModEnv(t, eng.new(t))
		e.putBoard("g1", `{}`)
		e.putBoard("g2", `{}`)
		e.scores("g1", `[{"id":"1","member":"ann","delta":5},{"id":"2","member":"cheat","delta":50}]`)
		e.do("PUT", "/api/v1/bans/cheat", adminToken(t), `{"reason":"everywhere"}`).wantStatus(t, 200)
		if got := e.topMembers(t, "g1"); got != "ann=5 total=1" {
			t.Fatalf("top with a global ban: %s", got)
		}
		e.putBoard("g3", `{}`)
		if acks := e.scores("g3", `[{"id":"1","member":"cheat","delta":1}]`); acks[0].Error == nil || acks[0].Error.Code != "banned" {
			t.Fatalf("a globally banned member on a new board: %+v", acks)
		}
		r := e.do("GET", "/api/v1/bans", adminToken(t), "")
		r.wantStatus(t, 200)
		var l banList
		r.json(t, &l)
		if len(l.Bans) != 1 || l.Bans[0].Member != "cheat" || l.Bans[0].Until != nil {
			t.Fatalf("global bans: %s", r.body)
		}
		seen := map[string]bool{}
		for _, ev := range e.boardEvents() {
			seen[ev.board] = true
		}
		if !seen["g1"] || !seen["g2"] {
			t.Fatalf("a global ban did not re-read every board: %v", e.boardEvents())
		}
		e.do("DELETE", "/api/v1/bans/cheat", adminToken(t), "").wantStatus(t, 204)
		e.do("DELETE", "/api/v1/bans/cheat", adminToken(t), "").wantError(t, 404, "not_found")
		if got := e.topMembers(t, "g1"); got != "cheat=50 ann=5 total=2" {
			t.Fatalf("top after the global lift: %s", got)
		}

		e.do("DELETE", "/api/v1/boards/g1/members/cheat", adminToken(t), "").wantStatus(t, 204)
		if got := e.topMembers(t, "g1"); got != "ann=5 total=1" {
			t.Fatalf("top after removal: %s", got)
		}
		e.do("DELETE", "/api/v1/boards/g1/members/cheat", adminToken(t), "").wantError(t, 404, "not_found")
		e.do("DELETE", "/api/v1/boards/g1/members/ann?period=bogus", adminToken(t), "").wantError(t, 400, "bad_request")
		if a := e.actions(t); a["global_ban"] != 1 || a["global_lift"] != 1 || a["remove"] != 1 {
			t.Fatalf("moderation actions %v", a)
		}
	})
}

// TestModerationRefused: only an admin moderates; unknown boards are 404;
// every bad field is a 400 naming it; nothing changes.
func TestModerationRefused(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newModEnv(t, eng.new(t))
		e.putBoard("mr", `{}`)
		e.scores("mr", `[{"id":"1","member":"ann","delta":5}]`)
		player := token(t, "ann", auth.Player, nil)
		routes := []struct{ method, path, body string }{
			{"PUT", "/api/v1/boards/mr/bans/ann", `{}`},
			{"DELETE", "/api/v1/boards/mr/bans/ann", ""},
			{"GET", "/api/v1/boards/mr/bans", ""},
			{"DELETE", "/api/v1/boards/mr/members/ann", ""},
			{"PUT", "/api/v1/bans/ann", `{}`},
			{"DELETE", "/api/v1/bans/ann", ""},
			{"GET", "/api/v1/bans", ""},
		}
		for _, rt := range routes {
			for _, tok := range []string{player, serverToken(t), token(t, "w", auth.Spectator, nil)} {
				e.do(rt.method, rt.path, tok, rt.body).wantError(t, 403, "forbidden")
			}
			e.do(rt.method, rt.path, "", rt.body).wantError(t, 401, "unauthorized")
		}
		for _, rt := range routes[:4] {
			e.do(rt.method, strings.Replace(rt.path, "/mr/", "/nope/", 1), adminToken(t), rt.body).wantError(t, 404, "unknown_board")
		}
		past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
		bad := []struct{ body, field string }{
			{`{"until":"` + past + `"}`, "until"},
			{`{"until":"tomorrow"}`, "until"},
			{`{"until":5}`, "until"},
			{`{"reason":"` + strings.Repeat("x", 257) + `"}`, "reason"},
			{`{"reason":"a\u0007b"}`, "reason"},
			{`{"reason":7}`, "reason"},
			{`{"reason":"a","reason":"b"}`, "reason"},
			{`{"who":"x"}`, "who"},
		}
		for _, path := range []string{"/api/v1/boards/mr/bans/ann", "/api/v1/bans/ann"} {
			for _, c := range bad {
				eb := e.do("PUT", path, adminToken(t), c.body).wantError(t, 400, "bad_request")
				if !strings.Contains(eb.Error.Message, c.field) {
					t.Errorf("PUT %s %s: message %q does not name %s", path, c.body, eb.Error.Message, c.field)
				}
			}
			e.do("PUT", path, adminToken(t), `[`).wantError(t, 400, "bad_request")
		}
		e.do("PUT", "/api/v1/boards/mr/bans/bad%20member", adminToken(t), `{}`).wantError(t, 400, "invalid_member")
		if got := e.topMembers(t, "mr"); got != "ann=5 total=1" {
			t.Fatalf("refused moderation changed the board: %s", got)
		}
		r := e.do("GET", "/api/v1/bans", adminToken(t), "")
		r.wantStatus(t, 200)
		if strings.TrimSpace(string(r.body)) != `{"bans":[]}` {
			t.Fatalf("refused global bans were stored: %s", r.body)
		}
		if a := e.actions(t); len(a) != 0 {
			t.Fatalf("refused actions were counted: %v", a)
		}
	})
}
