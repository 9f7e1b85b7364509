package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/auth"
)

// storedBoard reads a board's config as GET returns it, field by field.
func storedBoard(t *testing.T, e *env, id string) map[string]any {
	t.Helper()
	var body struct {
		Board map[string]any `json:"board"`
	}
	e.do("GET", "/api/v1/boards/"+id, adminToken(t), "").json(t, &body)
	return body.Board
}

// sameConfig fails when two configs differ anywhere but in the fields named.
func sameConfig(t *testing.T, what string, before, after map[string]any, except ...string) {
	t.Helper()
	b, a := map[string]any{}, map[string]any{}
	for k, v := range before {
		b[k] = v
	}
	for k, v := range after {
		a[k] = v
	}
	for _, k := range except {
		delete(b, k)
		delete(a, k)
	}
	bj, _ := json.Marshal(b)
	aj, _ := json.Marshal(a)
	if string(bj) != string(aj) {
		t.Errorf("%s: config changed\n before %s\n after  %s", what, bj, aj)
	}
}

// TestPatchBoard is §14's PATCH on both engines: a title-only patch keeps
// every other field (reset, mode, limits: what a PUT of the title alone
// would reset), null restores a default, and the change is announced as a
// PUT's is.
func TestPatchBoard(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		admin := adminToken(t)
		e.putBoard("cup", `{"title":"Cup","reset":"daily","tz":"Europe/Paris","mode":"best","order":"asc",
			"max_submissions":3,"top":25,"public":true,"grace":"30s","tiers":[{"name":"Gold","top_rank":1}]}`)
		before := storedBoard(t, e, "cup")
		events := len(e.boardEvents())

		r := e.do("PATCH", "/api/v1/boards/cup", admin, `{"title":"Winter cup"}`)
		r.wantStatus(t, 200)
		var answered map[string]any
		r.json(t, &answered)
		after := storedBoard(t, e, "cup")
		if after["title"] != "Winter cup" || answered["title"] != "Winter cup" {
			t.Fatalf("title not patched: stored %v, answered %v", after["title"], answered["title"])
		}
		sameConfig(t, "title-only patch", before, after, "title")
		sameConfig(t, "the answer", after, answered)
		if got := e.boardEvents(); len(got) != events+1 || got[len(got)-1] != (boardEvent{"cup", false}) {
			t.Errorf("board events %v, want one change of cup", got[events:])
		}
		// Logged with the admin's sub, as moderation is (R21).
		if logs := e.logs.String(); !strings.Contains(logs, `msg="api: board patched" board=cup fields=[title] sub=root`) {
			t.Errorf("no log line of the patch with its fields and sub:\n%s", logs)
		}

		// null removes the field from the config: it takes its default.
		e.do("PATCH", "/api/v1/boards/cup", admin, `{"max_submissions":null,"tiers":null}`).wantStatus(t, 200)
		after2 := storedBoard(t, e, "cup")
		if after2["max_submissions"] != float64(0) || after2["tiers"] != nil {
			t.Errorf("null did not restore the defaults: %v", after2)
		}
		sameConfig(t, "null patch", after, after2, "max_submissions", "tiers")

		// PUT, unlike PATCH, replaces: what it leaves out takes its default.
		e.do("PUT", "/api/v1/boards/cup", admin, `{"title":"Winter cup"}`).wantStatus(t, 200)
		if got := storedBoard(t, e, "cup"); got["reset"] != "none" || got["mode"] != "incr" {
			t.Errorf("PUT kept fields it left out: %v", got)
		}
	})
}

// TestPatchBoardRefusals: every refused PATCH answers the contract's code,
// names the field, and changes nothing.
func TestPatchBoardRefusals(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		admin := adminToken(t)
		e.putBoard("plain", `{"title":"Plain","reset":"daily","group":"g1"}`)
		e.putBoard("wide", `{"shards":4}`)
		e.putBoard("flat", `{}`)
		e.putBoard("trend", `{"decay":{"bucket":"1h","buckets":24,"factor":0.9}}`)
		e.putBoard("over", `{"title":"Over","starts_at":"2020-01-01T00:00:00Z","ends_at":"2020-01-02T00:00:00Z"}`)
		for _, tc := range []struct {
			board, body string
			status      int
			code, names string
		}{
			{"wide", `{"shards":2}`, 409, "read_only", "shards"},
			{"wide", `{"shards":null}`, 409, "read_only", "shards"},
			{"plain", `{"group":"g2"}`, 409, "read_only", "group"},
			{"plain", `{"source":{"kind":"union","boards":["wide"]}}`, 409, "read_only", "source"},
			{"flat", `{"tiebreak":"shared","decay":{"bucket":"1h","buckets":2,"factor":0.5}}`, 409, "read_only", "decay"},
			{"trend", `{"decay":{"factor":0.5}}`, 409, "read_only", "decay"},
			{"plain", `{"top":500}`, 400, "bad_request", "top"},
			{"plain", `{"reset":"fortnightly"}`, 400, "bad_request", "reset"},
			{"plain", `{"mode":7}`, 400, "bad_request", "mode"},
			{"plain", `{"colour":"red"}`, 400, "bad_request", "colour"},
			{"plain", `{"id":"other"}`, 400, "bad_request", "id"},
			{"plain", `{"title":"a","title":"b"}`, 400, "bad_request", "title"},
			{"plain", `["title"]`, 400, "bad_request", "object"},
			{"plain", ``, 400, "bad_request", "object"},
			{"plain", `{"title":"x"} {}`, 400, "bad_request", "trailing"},
			{"over", `{"title":"Still over"}`, 409, "board_closed", "final"},
			{"nope", `{"title":"x"}`, 404, "unknown_board", "nope"},
		} {
			before := storedBoard(t, e, tc.board)
			eb := e.do("PATCH", "/api/v1/boards/"+tc.board, admin, tc.body).wantError(t, tc.status, tc.code)
			if !strings.Contains(eb.Error.Message, tc.names) {
				t.Errorf("PATCH %s %s: message %q does not name %s", tc.board, tc.body, eb.Error.Message, tc.names)
			}
			sameConfig(t, "PATCH "+tc.board+" "+tc.body, before, storedBoard(t, e, tc.board))
		}
		// Sending a fixed field's own value is no change.
		e.do("PATCH", "/api/v1/boards/wide", admin, `{"shards":4,"title":"Wide"}`).wantStatus(t, 200)
		// The 404 did not create the board.
		e.do("GET", "/api/v1/boards/nope", admin, "").wantError(t, 404, "unknown_board")
	})
}

// TestPatchBoardRoles: only an admin patches, and only the boards its
// token's boards claim names (R11).
func TestPatchBoardRoles(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("cup", `{"title":"Cup"}`)
		const body = `{"title":"Taken"}`
		e.do("PATCH", "/api/v1/boards/cup", "", body).wantError(t, 401, "unauthorized")
		for _, tok := range []string{
			serverToken(t),
			token(t, "ann", auth.Player, nil),
			token(t, "eve", auth.Spectator, nil),
			token(t, "ops", auth.Admin, []string{"other"}),
		} {
			e.do("PATCH", "/api/v1/boards/cup", tok, body).wantError(t, 403, "forbidden")
			// An unknown board is not told apart from a forbidden one.
			e.do("PATCH", "/api/v1/boards/nope", tok, body).wantError(t, 403, "forbidden")
		}
		if got := storedBoard(t, e, "cup")["title"]; got != "Cup" {
			t.Fatalf("a refused PATCH changed the title to %v", got)
		}
		e.do("PATCH", "/api/v1/boards/cup", token(t, "ops", auth.Admin, []string{"cup"}), body).wantStatus(t, 200)
		if got := storedBoard(t, e, "cup")["title"]; got != "Taken" {
			t.Fatalf("title %v after an admin's PATCH", got)
		}
	})
}
