package api_test

import (
	"strings"
	"testing"
)

// TestScoreMeta: a REST score may carry meta (§11); the top page and the
// member read carry it as the object sent, and a meta over 512 bytes or
// not an object is that element's bad_request, changing nothing.
func TestScoreMeta(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("mt", `{"mode":"best"}`)
		const replay = `{"replay":"https://r.example/run/1","car":"red"}`
		big := `{"r":"` + strings.Repeat("x", 505) + `"}` // 513 bytes
		got := e.scores("mt", `[
			{"id":"a1","member":"ann","value":50,"meta":`+replay+`},
			{"id":"a2","member":"ann","value":70,"meta":`+big+`},
			{"id":"a3","member":"ann","value":70,"meta":[1]},
			{"id":"b1","member":"bob","value":40}
		]`)
		for i, want := range []string{"", "bad_request", "bad_request", ""} {
			code := ""
			if got[i].Error != nil {
				code = got[i].Error.Code
			}
			if code != want {
				t.Fatalf("element %d: error %q, want %q", i, code, want)
			}
		}
		top := e.do("GET", "/api/v1/boards/mt/top", serverToken(t), "")
		top.wantStatus(t, 200)
		want := `"entries":[{"rank":1,"member":"ann","score":50,"meta":` + replay + `},{"rank":2,"member":"bob","score":40}]`
		if !strings.Contains(string(top.body), want) {
			t.Fatalf("top: %s\nwant it to hold %s", top.body, want)
		}
		m := e.do("GET", "/api/v1/boards/mt/members/bob?around=1", serverToken(t), "")
		m.wantStatus(t, 200)
		if !strings.Contains(string(m.body), `{"rank":1,"member":"ann","score":50,"meta":`+replay+`}`) {
			t.Fatalf("member read: %s", m.body)
		}
	})
}
