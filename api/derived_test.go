package api_test

import (
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/rank"
)

// TestDerivedBoards: derived board configs over REST on both engines: the
// effective fields on GET, 400s naming the field, read_only for scores,
// and a source that cannot be deleted while a derived board needs it.
func TestDerivedBoards(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		adm := adminToken(t)
		for _, put := range []struct{ id, body string }{
			{"moba", `{"group":"cats","order":"asc"}`},
			{"race", `{"group":"cats","order":"asc"}`},
			{"solo", `{}`},
			{"daily", `{"group":"cats","reset":"daily","retain":3}`},
		} {
			e.do("PUT", "/api/v1/boards/"+put.id, adm, put.body).wantStatus(t, 200)
		}
		var got rank.Board
		e.do("GET", "/api/v1/boards/solo", adm, "").json(t, &struct {
			Board *rank.Board `json:"board"`
		}{&got})
		if got.Group != "solo" {
			t.Errorf("GET solo: group %q, want the id", got.Group)
		}
		for _, tc := range []struct{ body, field string }{
			{`{"group":"cats","source":{"kind":"union","boards":["moba","nope"]}}`, "source"},
			{`{"group":"cats","source":{"kind":"union","boards":["moba","solo"]}}`, "source"},
			{`{"source":{"kind":"union","boards":["moba"]}}`, "source"}, // group all ≠ cats
			{`{"group":"cats","source":{"kind":"union","boards":["moba","race"],"weights":[1,1001]}}`, "source"},
			{`{"group":"cats","source":{"kind":"union","boards":["moba","race"],"weights":[1]}}`, "source"},
			{`{"group":"cats","source":{"kind":"union","boards":["moba","moba"]}}`, "source"},
			{`{"group":"cats","source":{"kind":"sum","boards":["moba"]}}`, "source"},
			{`{"group":"cats","source":{"kind":"union","boards":["moba"],"extra":1}}`, "source"},
			{`{"group":"cats","source":{"kind":"window","board":"moba","periods":7}}`, "source"},
			{`{"group":"cats","source":{"kind":"window","board":"daily","periods":7}}`, "source"},
			{`{"group":"cats","source":{"kind":"window","board":"daily","periods":0}}`, "source"},
			{`{"group":"c a t s"}`, "group"},
		} {
			eb := e.do("PUT", "/api/v1/boards/all", adm, tc.body).wantError(t, 400, "bad_request")
			if !strings.Contains(eb.Error.Message, "field "+tc.field) {
				t.Errorf("%s: message %q does not name %s", tc.body, eb.Error.Message, tc.field)
			}
		}
		e.do("GET", "/api/v1/boards/all", adm, "").wantError(t, 404, "unknown_board")

		r := e.do("PUT", "/api/v1/boards/all", adm, `{"group":"cats","source":{"kind":"union","boards":["moba","race"],"weights":[1,2]}}`)
		r.wantStatus(t, 200)
		r.json(t, &got)
		if got.Order != rank.Asc || got.Tiebreak != rank.Shared || got.Group != "cats" || got.Source.Weights()[1] != 2 {
			t.Errorf("PUT all: %+v, want the sources' order, tiebreak shared, group cats", got)
		}
		// Group and source are fixed at creation.
		eb := e.do("PUT", "/api/v1/boards/all", adm, `{"group":"other","source":{"kind":"union","boards":["moba","race"],"weights":[1,2]}}`).wantError(t, 400, "bad_request")
		if !strings.Contains(eb.Error.Message, "field group") {
			t.Errorf("group change: %q", eb.Error.Message)
		}
		eb = e.do("PUT", "/api/v1/boards/all", adm, `{"group":"cats","source":{"kind":"union","boards":["moba"]}}`).wantError(t, 400, "bad_request")
		if !strings.Contains(eb.Error.Message, "field source") {
			t.Errorf("source change: %q", eb.Error.Message)
		}

		e.do("POST", "/api/v1/boards/moba/scores", adm, `[{"id":"1","member":"ann","delta":4}]`).wantStatus(t, 200)
		e.do("POST", "/api/v1/boards/race/scores", adm, `[{"id":"1","member":"ann","delta":1}]`).wantStatus(t, 200)
		r = e.do("POST", "/api/v1/boards/all/scores", adm, `[{"id":"2","member":"ann","delta":1}]`)
		r.wantStatus(t, 200)
		if !strings.Contains(string(r.body), `"code":"read_only"`) {
			t.Errorf("score on a derived board: %s, want read_only", r.body)
		}
		r = e.do("GET", "/api/v1/boards/all/top", adm, "")
		r.wantStatus(t, 200)
		if !strings.Contains(string(r.body), `"score":6`) {
			t.Errorf("top of the union: %s, want ann at 4 + 2×1", r.body)
		}
		eb = e.do("DELETE", "/api/v1/boards/moba", adm, "").wantError(t, 400, "bad_request")
		if !strings.Contains(eb.Error.Message, "all") {
			t.Errorf("delete of a source: %q does not name its dependant", eb.Error.Message)
		}
		e.do("DELETE", "/api/v1/boards/all", adm, "").wantStatus(t, 204)
		e.do("DELETE", "/api/v1/boards/moba", adm, "").wantStatus(t, 204)
	})
}
