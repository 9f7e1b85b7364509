package api_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestMemberList: GET …/members?ids= (§11) answers the listed members that
// have an entry, in rank order with their ranks on the whole board, and
// the board's total; 1..100 ids, else 400.
func TestMemberList(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("ml", `{"mode":"best"}`)
		var evs []string
		for i := range 8 {
			evs = append(evs, fmt.Sprintf(`{"id":"s%d","member":"p%d","value":%d}`, i, i, 10*(i+1)))
		}
		evs = append(evs, `{"id":"m1","member":"p2","value":5,"meta":{"clip":"c2"}}`) // worse: p2 keeps 30 and no meta
		e.scores("ml", "["+strings.Join(evs, ",")+"]")
		tok := token(t, "p2", "player", []string{"ml"})
		r := e.do("GET", "/api/v1/boards/ml/members?ids=p2,p7,nobody,p5,p2", tok, "")
		r.wantStatus(t, 200)
		want := `{"board":"ml","entries":[{"rank":1,"member":"p7","score":80},{"rank":3,"member":"p5","score":60},{"rank":6,"member":"p2","score":30}],"total":8}`
		if string(r.body) != want {
			t.Fatalf("members: %s\nwant %s", r.body, want)
		}
		ids := make([]string, 101)
		for i := range ids {
			ids[i] = fmt.Sprintf("p%d", i)
		}
		e.do("GET", "/api/v1/boards/ml/members?ids="+strings.Join(ids, ","), tok, "").wantError(t, 400, "bad_request")
		r = e.do("GET", "/api/v1/boards/ml/members?ids="+strings.Join(ids[:100], ","), tok, "")
		r.wantStatus(t, 200)
		if !strings.Contains(string(r.body), `"total":8`) || strings.Count(string(r.body), `"rank"`) != 8 {
			t.Fatalf("100 ids: %s", r.body)
		}
		e.do("GET", "/api/v1/boards/ml/members", tok, "").wantError(t, 400, "bad_request")
		e.do("GET", "/api/v1/boards/ml/members?ids=p1,,p2", tok, "").wantError(t, 400, "invalid_member")
		e.do("GET", "/api/v1/boards/ml/members?ids=p1,a%20b", tok, "").wantError(t, 400, "invalid_member")
		e.do("GET", "/api/v1/boards/nope/members?ids=p1", adminToken(t), "").wantError(t, 404, "unknown_board")
	})
}

// TestHistory: a board with history keeps each member's last events
// (§11), read newest first from GET …/members/{member}/history; history
// is 0..100 and refused on a derived board, naming the field.
func TestHistory(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("hi", `{"history":2}`)
		e.scores("hi", `[{"id":"a","member":"ann","delta":5},{"id":"b","member":"ann","delta":-2,"meta":{"run":7},"at":1000000000000},{"id":"c","member":"ann","delta":4,"at":1000000000001},{"id":"b","member":"ann","delta":-2,"meta":{"run":7},"at":1000000000000},{"id":"d","member":"ann","delta":1.5},{"id":"e","member":"ann","delta":1,"meta":[1]}]`)
		r := e.do("GET", "/api/v1/boards/hi/members/ann/history", serverToken(t), "")
		r.wantStatus(t, 200)
		// The last two applied, newest first: b's resend (a duplicate) and
		// the refused d and e are not there; a fell off the cap.
		if want := `{"events":[{"id":"c","delta":4,"score":7,"at":1000000000001},{"id":"b","delta":-2,"score":3,"at":1000000000000,"meta":{"run":7}}]}`; string(r.body) != want {
			t.Fatalf("history: %s\nwant %s", r.body, want)
		}
		r = e.do("GET", "/api/v1/boards/hi/members/bob/history", serverToken(t), "")
		r.wantStatus(t, 200)
		if string(r.body) != `{"events":[]}` {
			t.Fatalf("no events: %s", r.body)
		}
		e.do("GET", "/api/v1/boards/hi/members/a%20b/history", serverToken(t), "").wantError(t, 400, "invalid_member")
		eb := e.do("PUT", "/api/v1/boards/hi2", adminToken(t), `{"history":101}`).wantError(t, 400, "bad_request")
		if !strings.Contains(eb.Error.Message, "history") {
			t.Fatalf("history 101: %q does not name the field", eb.Error.Message)
		}
		eb = e.do("PUT", "/api/v1/boards/hd", adminToken(t), `{"history":3,"source":{"kind":"union","boards":["hi"]}}`).wantError(t, 400, "bad_request")
		if !strings.Contains(eb.Error.Message, "history") {
			t.Fatalf("derived with history: %q does not name the field", eb.Error.Message)
		}
	})
}
