package api_test

import (
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/auth"
)

// Hot boards over REST (R22): the config round-trips with its decay, a bad
// decay is a 400 naming it, and the scores answer and the top and member
// reads carry the decayed scores with 3 decimals.
func TestHotBoard(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		admin := adminToken(t)
		for body, field := range map[string]string{
			`{"decay":{"bucket":"7m","buckets":24,"factor":0.9}}`:                   "decay",
			`{"decay":{"bucket":"1h","buckets":24,"factor":1}}`:                     "decay",
			`{"decay":{"bucket":"1h","buckets":0,"factor":0.5}}`:                    "decay",
			`{"mode":"best","decay":{"bucket":"1h","buckets":2,"factor":0.5}}`:      "decay",
			`{"reset":"daily","decay":{"bucket":"1h","buckets":2,"factor":0.5}}`:    "decay",
			`{"decay":{"bucket":"1h","buckets":2,"factor":0.5,"half":1}}`:           "decay",
			`{"tiebreak":"first","decay":{"bucket":"1h","buckets":2,"factor":0.5}}`: "tiebreak",
		} {
			eb := e.do("PUT", "/api/v1/boards/bad", admin, body).wantError(t, 400, "bad_request")
			if !strings.Contains(eb.Error.Message, field) {
				t.Errorf("PUT %s: %q does not name %s", body, eb.Error.Message, field)
			}
		}
		e.do("GET", "/api/v1/boards/bad", admin, "").wantError(t, 404, "unknown_board")

		r := e.do("PUT", "/api/v1/boards/trend", admin, `{"decay":{"bucket":"1h","buckets":24,"factor":0.9}}`)
		r.wantStatus(t, 200)
		if s := string(r.body); !strings.Contains(s, `"decay":{"bucket":"1h0m0s","buckets":24,"factor":0.9}`) || !strings.Contains(s, `"tiebreak":"shared"`) {
			t.Fatalf("stored config %s: want the decay and tiebreak shared", s)
		}
		r = e.do("POST", "/api/v1/boards/trend/scores", serverToken(t),
			`[{"id":"1","member":"ann","delta":12},{"id":"2","member":"bob","delta":-3},{"id":"3","member":"cid","delta":12}]`)
		r.wantStatus(t, 200)
		for _, want := range []string{`"member":"ann","score":12.000,"rank":1,`, `"member":"bob","score":-3.000,"rank":2,`, `"member":"cid","score":12.000,"rank":1,`} {
			if !strings.Contains(string(r.body), want) {
				t.Errorf("scores answer %s: want %s", r.body, want)
			}
		}
		tok := token(t, "viewer", auth.Spectator, nil)
		top := e.do("GET", "/api/v1/boards/trend/top", tok, "")
		top.wantStatus(t, 200)
		if want := `"entries":[{"rank":1,"member":"cid","score":12.000},{"rank":1,"member":"ann","score":12.000},{"rank":3,"member":"bob","score":-3.000}],"total":3`; !strings.Contains(string(top.body), want) {
			t.Errorf("top %s: want %s", top.body, want)
		}
		if ct := top.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("top Content-Type %q", ct)
		}
		m := e.do("GET", "/api/v1/boards/trend/members/bob?around=1", tok, "")
		m.wantStatus(t, 200)
		if want := `"member":"bob","rank":3,"score":-3.000,"around":[{"rank":1,"member":"ann","score":12.000},{"rank":3,"member":"bob","score":-3.000}]`; !strings.Contains(string(m.body), want) {
			t.Errorf("member %s: want %s", m.body, want)
		}
	})
}
