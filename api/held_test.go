package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/integrity"
	"github.com/wsgateway/wsgateway/internal/hooktest"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// Score integrity over REST (docs/protocol.md §16): the review queue, the
// hook's verdicts on POST …/scores, the hook's config.

const apiHookSecret = "api-test-hook-secret"

type heldList struct {
	Held []struct {
		Member string   `json:"member"`
		Reason string   `json:"reason"`
		At     string   `json:"at"`
		Score  int64    `json:"score"`
		Events []string `json:"events"`
	} `json:"held"`
}

func (e *env) held(board string) heldList {
	e.t.Helper()
	r := e.do("GET", "/api/v1/boards/"+board+"/held", adminToken(e.t), "")
	r.wantStatus(e.t, 200)
	var h heldList
	r.json(e.t, &h)
	return h
}

func (e *env) members(board string) string {
	e.t.Helper()
	var pg struct {
		Entries []struct {
			Member string `json:"member"`
		} `json:"entries"`
		Total int64 `json:"total"`
	}
	e.do("GET", "/api/v1/boards/"+board+"/top", serverToken(e.t), "").json(e.t, &pg)
	var ms []string
	for _, en := range pg.Entries {
		ms = append(ms, en.Member)
	}
	if int(pg.Total) != len(ms) {
		e.t.Fatalf("top of %s: total %d with %d entries", board, pg.Total, len(ms))
	}
	return strings.Join(ms, ",")
}

// TestHeldQueue: a member held by a flag is listed (reason, time, score,
// the ids since), absent from reads; clear shows it, remove drops its
// entry, ban bans it (R21); each is an admin's, refused to others, with
// 404 for a member not held and 400 for a bad body.
func TestHeldQueue(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("q", `{"flags":{"jump":10}}`)
		raw := e.do("POST", "/api/v1/boards/q/scores", serverToken(t), `[{"id":"a1","member":"ann","delta":5},{"id":"c1","member":"cheat","delta":50},{"id":"c2","member":"cheat","delta":1}]`)
		raw.wantStatus(t, 200)
		if !strings.Contains(string(raw.body), `"id":"c1","board":"q","member":"cheat","score":50,"rank":1,"prev_rank":null,"duplicate":false,"seq":2,"held":true}`) {
			t.Fatalf("the holding event's result: %s", raw.body)
		}
		h := e.held("q")
		if len(h.Held) != 1 || h.Held[0].Member != "cheat" || h.Held[0].Reason != rank.HoldJump || h.Held[0].Score != 51 ||
			strings.Join(h.Held[0].Events, ",") != "c1,c2" {
			t.Fatalf("held: %+v", h)
		}
		if _, err := time.Parse(time.RFC3339Nano, h.Held[0].At); err != nil {
			t.Fatalf("held at %q: %v", h.Held[0].At, err)
		}
		if got := e.members("q"); got != "ann" {
			t.Fatalf("top with a held member: %s", got)
		}
		player := token(t, "ann", auth.Player, nil)
		e.do("GET", "/api/v1/boards/q/held", player, "").wantError(t, http.StatusForbidden, "forbidden")
		e.do("POST", "/api/v1/boards/q/held/cheat", player, `{"action":"clear"}`).wantError(t, http.StatusForbidden, "forbidden")
		for _, body := range []string{`{"action":"pardon"}`, `{"action":"clear","reason":"x"}`, `{"action":"clear","extra":1}`, `[]`} {
			e.do("POST", "/api/v1/boards/q/held/cheat", adminToken(t), body).wantError(t, http.StatusBadRequest, "bad_request")
		}
		e.do("POST", "/api/v1/boards/q/held/ann", adminToken(t), `{"action":"clear"}`).wantError(t, http.StatusNotFound, "not_found")
		e.do("POST", "/api/v1/boards/nope/held/ann", adminToken(t), `{"action":"clear"}`).wantError(t, http.StatusNotFound, "unknown_board")

		e.do("POST", "/api/v1/boards/q/held/cheat", adminToken(t), `{"action":"clear"}`).wantStatus(t, 200)
		if got := e.members("q"); got != "cheat,ann" {
			t.Fatalf("top after clear: %s", got)
		}
		if h := e.held("q"); len(h.Held) != 0 {
			t.Fatalf("held after clear: %+v", h)
		}
		e.scores("q", `[{"id":"c3","member":"cheat","delta":20}]`) // a new jump holds it again
		e.do("POST", "/api/v1/boards/q/held/cheat", adminToken(t), `{"action":"remove"}`).wantStatus(t, 200)
		if got := e.members("q"); got != "ann" {
			t.Fatalf("top after remove: %s", got)
		}
		e.scores("q", `[{"id":"b1","member":"bob","delta":40}]`)
		e.do("POST", "/api/v1/boards/q/held/bob", adminToken(t), `{"action":"ban","reason":"speed hack"}`).wantStatus(t, 200)
		var bans struct {
			Bans []struct{ Member, Reason string } `json:"bans"`
		}
		e.do("GET", "/api/v1/boards/q/bans", adminToken(t), "").json(t, &bans)
		if len(bans.Bans) != 1 || bans.Bans[0].Member != "bob" || bans.Bans[0].Reason != "speed hack" {
			t.Fatalf("bans after the ban action: %+v", bans)
		}
		if h := e.held("q"); len(h.Held) != 0 {
			t.Fatalf("held after ban: %+v", h)
		}
		if got := e.members("q"); got != "ann" {
			t.Fatalf("top after ban: %s", got)
		}
		e.do("DELETE", "/api/v1/boards/q/bans/bob", adminToken(t), "").wantStatus(t, http.StatusNoContent)
		if got := e.members("q"); got != "bob,ann" {
			t.Fatalf("top after the ban is lifted: %s", got)
		}
	})
}

// TestHeldSelfRead: GET …/members/{member} shows a held member to itself
// and to admins, and to nobody else.
func TestHeldSelfRead(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("self", `{"flags":{"jump":10}}`)
		e.scores("self", `[{"id":"1","member":"ann","delta":5},{"id":"2","member":"sneak","delta":50}]`)
		for _, tc := range []struct {
			tok   string
			found bool
		}{
			{token(t, "sneak", auth.Player, nil), true},
			{adminToken(t), true},
			{token(t, "ann", auth.Player, nil), false},
			{serverToken(t), false},
		} {
			var r struct {
				Rank   *int64 `json:"rank"`
				Around []struct {
					Member string `json:"member"`
					Rank   int64  `json:"rank"`
				} `json:"around"`
			}
			e.do("GET", "/api/v1/boards/self/members/sneak?around=1", tc.tok, "").json(t, &r)
			if (r.Rank != nil) != tc.found || (tc.found && (*r.Rank != 1 || len(r.Around) != 2 || r.Around[1].Member != "ann" || r.Around[1].Rank != 2)) {
				t.Fatalf("read of the held member (found %v): %+v", tc.found, r)
			}
		}
	})
}

// TestRESTVerdicts: a scores array's elements get the hook's verdicts
// (a reject is the element's error, with the reason); a single event's
// reject is a 422, and with on_error reject a dead hook's is a 503 with
// the claim's retry.
func TestRESTVerdicts(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		s, err := integrity.Wrap(eng.new(t), integrity.Config{AllowPrivate: true})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, s, func(c *setup) { c.WebhookAllowPrivate = true })
		h := hooktest.New(t, apiHookSecret, func(c hooktest.Call) hooktest.Answer {
			switch c.Body["member"] {
			case "rej":
				return hooktest.Reject("not possible")
			case "flg":
				return hooktest.Flag("odd")
			}
			return hooktest.Accept()
		})
		e.putBoard("rv", fmt.Sprintf(`{"validate":{"url":%q,"secret":%q}}`, h.URL, apiHookSecret))
		r := e.do("POST", "/api/v1/boards/rv/scores", serverToken(t), `[{"id":"1","member":"ok","delta":3},{"id":"2","member":"rej","delta":3},{"id":"3","member":"flg","delta":3},{"id":"4","member":"ok","delta":1}]`)
		r.wantStatus(t, 200)
		var out []json.RawMessage
		r.json(t, &out)
		// Elements of two members may apply in either order (their calls
		// run at once): seq is left out, and flg's rank (the one it would
		// have, tied with ok) is 2 only when ok's event applied first.
		var seqs [3]struct {
			Seq int64 `json:"seq"`
		}
		for i := range seqs {
			if i < len(out) {
				_ = json.Unmarshal(out[i], &seqs[i])
			}
		}
		flgRank := 2
		if seqs[2].Seq < seqs[0].Seq {
			flgRank = 1
		}
		want := []string{
			`{"id":"1","board":"rv","member":"ok","score":3,"rank":1,"prev_rank":null,"duplicate":false}`,
			`{"id":"2","error":{"code":"rejected","message":"rejected by the board's validation: not possible","reason":"not possible"}}`,
			fmt.Sprintf(`{"id":"3","board":"rv","member":"flg","score":3,"rank":%d,"prev_rank":null,"duplicate":false,"held":true}`, flgRank),
			`{"id":"4","board":"rv","member":"ok","score":4,"rank":1,"prev_rank":1,"duplicate":false}`,
		}
		noSeq := regexp.MustCompile(`,"seq":\d+`)
		for i := range want {
			if i >= len(out) || noSeq.ReplaceAllString(string(out[i]), "") != want[i] {
				t.Fatalf("results:\n%s\nwant\n%s", r.body, strings.Join(want, "\n"))
			}
		}
		eb := e.do("POST", "/api/v1/boards/rv/scores", serverToken(t), `{"id":"2","member":"rej","delta":3}`).wantError(t, http.StatusUnprocessableEntity, "rejected")
		if eb.Error.Reason != "not possible" {
			t.Fatalf("a single rejected event: %+v", eb)
		}
		if h.CallsOf("2") != 1 {
			t.Fatalf("calls for the rejected id: %d", h.CallsOf("2"))
		}

		dead := fmt.Sprintf("http://127.0.0.1:%d/v", testenv.FreePort(t))
		e.putBoard("dead", fmt.Sprintf(`{"validate":{"url":%q,"secret":%q,"timeout":"100ms"}}`, dead, apiHookSecret))
		d := e.do("POST", "/api/v1/boards/dead/scores", serverToken(t), `{"id":"x","member":"ann","delta":1}`)
		d.wantStatus(t, http.StatusServiceUnavailable)
		var ub struct {
			Error struct {
				Code         string `json:"code"`
				RetryAfterMS int64  `json:"retry_after_ms"`
			} `json:"error"`
		}
		d.json(t, &ub)
		if ub.Error.Code != "unavailable" || ub.Error.RetryAfterMS <= 0 || ub.Error.RetryAfterMS > 1100 || d.header.Get("Retry-After") != "2" && d.header.Get("Retry-After") != "1" {
			t.Fatalf("a dead hook, on_error reject: %s (Retry-After %q)", d.body, d.header.Get("Retry-After"))
		}
	})
}

// TestHookConfigAPI: the hook's secret is stored but never answered (PUT,
// GET, the list, PATCH keep it out, and a PATCH keeps the stored one); a
// loopback or private hook is refused naming validate unless
// --webhook-allow-private.
func TestHookConfigAPI(t *testing.T) {
	t.Parallel()
	store := memEngine().new(t)
	e := newEnv(t, store, func(c *setup) { c.Resolver = hosts })
	cfg := `{"validate":{"url":"https://hooks.example/v","secret":"` + apiHookSecret + `","top":100}}`
	for _, r := range []resp{
		e.do("PUT", "/api/v1/boards/cfg", adminToken(t), cfg),
		e.do("GET", "/api/v1/boards/cfg", serverToken(t), ""),
		e.do("GET", "/api/v1/boards", serverToken(t), ""),
		e.do("PATCH", "/api/v1/boards/cfg", adminToken(t), `{"validate":{"top":50}}`),
	} {
		r.wantStatus(t, 200)
		if strings.Contains(string(r.body), apiHookSecret) || strings.Contains(string(r.body), `"secret"`) {
			t.Fatalf("an answer holds the secret: %s", r.body)
		}
		if !strings.Contains(string(r.body), `"url":"https://hooks.example/v"`) {
			t.Fatalf("an answer lacks the hook: %s", r.body)
		}
	}
	b, err := store.GetBoard(t.Context(), "cfg")
	if err != nil || b.Hook.Secret != apiHookSecret || b.Hook.Top != 50 {
		t.Fatalf("stored after the PATCH: %+v, %v", b.Hook, err)
	}
	for _, u := range []string{"http://127.0.0.1:9/v", "https://inside.example/v"} {
		eb := e.do("PUT", "/api/v1/boards/priv", adminToken(t), `{"validate":{"url":"`+u+`","secret":"`+apiHookSecret+`"}}`).wantError(t, http.StatusBadRequest, "bad_request")
		if !strings.Contains(eb.Error.Message, "validate") {
			t.Fatalf("a private hook %s: %+v", u, eb)
		}
	}
	e.do("PATCH", "/api/v1/boards/cfg", adminToken(t), `{"validate":{"url":"http://10.0.0.1/v"}}`).wantError(t, http.StatusBadRequest, "bad_request")
	open := newEnv(t, memEngine().new(t), func(c *setup) { c.WebhookAllowPrivate = true })
	open.do("PUT", "/api/v1/boards/priv", adminToken(t), `{"validate":{"url":"http://127.0.0.1:9/v","secret":"`+apiHookSecret+`"}}`).wantStatus(t, 200)
}

// TestRESTMemberOrder (R36): in a scores array on a board with a hook, a
// member's elements apply in array order, even when the first waits for
// its verdict; another member's element does not wait for it.
func TestRESTMemberOrder(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		s, err := integrity.Wrap(eng.new(t), integrity.Config{AllowPrivate: true})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, s, func(c *setup) { c.WebhookAllowPrivate = true })
		h := hooktest.New(t, apiHookSecret, func(c hooktest.Call) hooktest.Answer {
			if c.Body["value"] == 100.0 {
				return hooktest.Answer{Delay: 300 * time.Millisecond}
			}
			return hooktest.Accept()
		})
		e.putBoard("ord", fmt.Sprintf(`{"mode":"set","validate":{"url":%q,"secret":%q}}`, h.URL, apiHookSecret))
		e.scores("ord", `[{"id":"1","member":"ann","value":100},{"id":"2","member":"zed","value":1},{"id":"3","member":"ann","value":50}]`)
		if got := e.members("ord"); got != "ann,zed" {
			t.Fatalf("top: %s", got)
		}
		var r struct {
			Score *int64 `json:"score"`
		}
		e.do("GET", "/api/v1/boards/ord/members/ann", serverToken(t), "").json(t, &r)
		if r.Score == nil || *r.Score != 50 {
			t.Fatalf("ann's score %v, want 50 (its last value)", r.Score)
		}
		// zed's call did not wait for ann's first verdict; ann's second was
		// made once the first had applied (it sees ann at 100).
		calls := h.Calls()
		if len(calls) != 3 || calls[2].Body["id"] != "3" || calls[2].Body["score"] != 100.0 {
			t.Fatalf("calls %v: want ann's second last, after her first applied", calls)
		}
	})
}
