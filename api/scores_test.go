package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/auth"
)

// TestScoresArray posts one array mixing good and bad events: each element
// is answered in order with its ack or its own error (R3–R6, R15), and only
// the good ones change anything.
func TestScoresArray(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("s", `{"max_delta":1000000000000000}`)

		type want struct {
			id       string
			code     string // "" = an ack
			member   string
			score    int64
			rank     int64
			prevRank int64 // 0 = null
			dup      bool
		}
		cases := []struct {
			elem string
			want want
		}{
			{`{"id":"a1","member":"alice","delta":10}`, want{id: "a1", member: "alice", score: 10, rank: 1}},
			{`{"id":"b1","member":"bob","delta":20}`, want{id: "b1", member: "bob", score: 20, rank: 1}},
			{`{"id":"a2","member":"alice","delta":15}`, want{id: "a2", member: "alice", score: 25, rank: 1, prevRank: 2}},
			// A repeat of a2 with the same payload: the first result, duplicate.
			{`{"id":"a2","member":"alice","delta":15}`, want{id: "a2", member: "alice", score: 25, rank: 1, prevRank: 2, dup: true}},
			// The same id with another payload is a conflict.
			{`{"id":"a2","member":"alice","delta":16}`, want{id: "a2", code: "idempotency_conflict"}},
			{`{"id":"a3","member":"alice","delta":1.5}`, want{id: "a3", code: "invalid_score"}},
			{`{"id":"a4","member":"alice","delta":1e3}`, want{id: "a4", code: "invalid_score"}},
			{`{"id":"a5","member":"alice","delta":"10"}`, want{id: "a5", code: "invalid_score"}},
			{`{"id":"a6","member":"alice","delta":null}`, want{id: "a6", code: "invalid_score"}},
			{`{"id":"a7","member":"alice","delta":9007199254740992}`, want{id: "a7", code: "invalid_score"}},
			{`{"id":"a8","member":"alice","delta":1000000000000001}`, want{id: "a8", code: "delta_too_large"}},
			{`{"id":"a9","member":"alice","value":3}`, want{id: "a9", code: "bad_request"}},
			{`{"id":"a10","member":"alice","delta":1,"value":3}`, want{id: "a10", code: "bad_request"}},
			{`{"id":"a11","member":"alice"}`, want{id: "a11", code: "bad_request"}},
			{`{"id":"a12","delta":1}`, want{id: "a12", code: "bad_request"}},
			{`{"id":"a13","member":"al ice","delta":1}`, want{id: "a13", code: "invalid_member"}},
			{`{"id":"a14","member":7,"delta":1}`, want{id: "a14", code: "bad_request"}},
			{`{"id":"a15","member":"alice","delta":1,"extra":true}`, want{id: "a15", code: "bad_request"}},
			{`{"id":"a16","Member":"alice","delta":1}`, want{id: "a16", code: "bad_request"}},
			{`{"id":"a17","member":"alice","delta":1,"delta":2}`, want{id: "a17", code: "bad_request"}},
			{`{"ID":"a19","member":"alice","delta":1}`, want{id: "", code: "bad_request"}},
			{`{"id":"bad id","member":"alice","delta":1}`, want{id: "bad id", code: "bad_request"}},
			{`{"id":"","member":"alice","delta":1}`, want{id: "", code: "bad_request"}},
			{`{"id":42,"member":"alice","delta":1}`, want{id: "", code: "bad_request"}},
			{`{"member":"alice","delta":1}`, want{id: "", code: "bad_request"}},
			{`42`, want{id: "", code: "bad_request"}},
			{`[]`, want{id: "", code: "bad_request"}},
			// Still applied after all those failures, none of which counted:
			// bob reached 20 first, so he ranks ahead (tiebreak first).
			{`{"id":"a18","member":"alice","delta":-5}`, want{id: "a18", member: "alice", score: 20, rank: 2, prevRank: 1}},
			{`{"id":"c1","member":"carol","delta":20}`, want{id: "c1", member: "carol", score: 20, rank: 3}},
		}
		elems := make([]string, len(cases))
		for i, c := range cases {
			elems[i] = c.elem
		}
		got := e.scores("s", "[\n"+strings.Join(elems, ",\n")+"\n]")
		if len(got) != len(cases) {
			t.Fatalf("%d results for %d events", len(got), len(cases))
		}
		var lastSeq, firstA2Seq int64
		for i, c := range cases {
			g, w := got[i], c.want
			if g.ID != w.id {
				t.Errorf("%d %s: id %q, want %q", i, c.elem, g.ID, w.id)
			}
			if w.code != "" {
				if g.Error == nil || g.Error.Code != w.code || g.Error.Message == "" {
					t.Errorf("%d %s: got %+v, want error %s", i, c.elem, g, w.code)
				}
				continue
			}
			if g.Error != nil {
				t.Errorf("%d %s: error %+v", i, c.elem, *g.Error)
				continue
			}
			prev := int64(0)
			if g.PrevRank != nil {
				prev = *g.PrevRank
			}
			if g.Board != "s" || g.Member != w.member || g.Score != w.score || g.Rank != w.rank ||
				prev != w.prevRank || g.Duplicate != w.dup {
				t.Errorf("%d %s: got %+v prev %d, want %+v", i, c.elem, g, prev, w)
			}
			switch {
			case w.dup:
				if g.Seq != firstA2Seq {
					t.Errorf("duplicate seq %d, want the first's %d", g.Seq, firstA2Seq)
				}
			default:
				if lastSeq != 0 && g.Seq != lastSeq+1 {
					t.Errorf("%d: seq %d after %d", i, g.Seq, lastSeq)
				}
				lastSeq = g.Seq
				if g.ID == "a2" {
					firstA2Seq = g.Seq
				}
			}
		}
		// Five events applied, and only they were counted.
		if n := e.applied(); n != 5 {
			t.Errorf("%d events counted as applied, want 5", n)
		}
		var p page
		e.do("GET", "/api/v1/boards/s/top", serverToken(t), "").json(t, &p)
		if fmt.Sprint(p.Entries) != "[{1 bob 20    } {2 alice 20    } {3 carol 20    }]" {
			t.Errorf("board after the array: %v", p.Entries)
		}
	})
}

// TestScoresRange is R6: a result beyond ±(2^53-1) is out_of_range and
// changes nothing; the extremes round-trip exactly.
func TestScoresRange(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("big", "")
		got := e.scores("big", `[
			{"id":"1","member":"max","delta":9007199254740991},
			{"id":"2","member":"max","delta":1},
			{"id":"3","member":"min","delta":-9007199254740991},
			{"id":"4","member":"min","delta":-1}]`)
		if got[0].Score != 9007199254740991 || got[2].Score != -9007199254740991 {
			t.Errorf("extremes: %+v", got)
		}
		for _, i := range []int{1, 3} {
			if got[i].Error == nil || got[i].Error.Code != "out_of_range" {
				t.Errorf("element %d: %+v, want out_of_range", i, got[i])
			}
		}
		var m memberRank
		e.do("GET", "/api/v1/boards/big/members/max", serverToken(t), "").json(t, &m)
		if m.Score == nil || *m.Score != 9007199254740991 {
			t.Errorf("max after out_of_range: %+v", m)
		}
		e.putBoard("set", `{"mode":"set"}`)
		got = e.scores("set", `[{"id":"1","member":"x","value":-3},{"id":"2","member":"x","delta":1}]`)
		if got[0].Score != -3 || got[1].Error == nil || got[1].Error.Code != "bad_request" {
			t.Errorf("set board: %+v", got)
		}
	})
}

// TestScoresSingle: one event object instead of an array is answered with
// its ack, or with its error's own status — the REST 409 of a conflict.
func TestScoresSingle(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("one", "")
		tok := serverToken(t)
		path := "/api/v1/boards/one/scores"
		var a ack
		r := e.do("POST", path, tok, `{"id":"k1","member":"alice","delta":4}`)
		r.wantStatus(t, 200)
		r.json(t, &a)
		if a.ID != "k1" || a.Score != 4 || a.Rank != 1 || a.PrevRank != nil || a.Duplicate {
			t.Errorf("single ack %s", r.body)
		}
		if !strings.Contains(string(r.body), `"prev_rank":null`) || strings.Contains(string(r.body), `"type"`) {
			t.Errorf("ack shape %s", r.body)
		}
		e.do("POST", path, tok, `{"id":"k1","member":"alice","delta":4}`).json(t, &a)
		if !a.Duplicate || a.Score != 4 {
			t.Errorf("single duplicate %+v", a)
		}
		e.do("POST", path, tok, `{"id":"k1","member":"alice","delta":5}`).wantError(t, 409, "idempotency_conflict")
		e.do("POST", path, tok, `{"id":"k2","member":"alice","delta":0.5}`).wantError(t, 400, "invalid_score")
		e.do("POST", path, tok, `{"id":"k3","member":"a b","delta":1}`).wantError(t, 400, "invalid_member")
		if n := e.applied(); n != 1 {
			t.Errorf("%d events announced, want 1", n)
		}
	})
}

// TestScoresArrayErrors: a malformed or oversized array fails as a whole
// and applies nothing.
func TestScoresArrayErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memEngine().new(t))
	e.putBoard("x", "")
	tok := serverToken(t)
	elems := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf(`{"id":"e%d","member":"m%d","delta":1}`, i, i%50)
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	for _, tc := range []struct {
		name, body string
		status     int
	}{
		{"empty body", "", 400},
		{"a number", "7", 400},
		{"a string", `"[]"`, 400},
		{"unterminated", `[{"id":"1","member":"m","delta":1}`, 400},
		{"bad element JSON", `[{"id":"1","member":"m","delta":1},{"id":]`, 400},
		{"trailing data", `[{"id":"1","member":"m","delta":1}] []`, 400},
		{"1001 events", elems(1001), 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.do("POST", "/api/v1/boards/x/scores", tok, tc.body).wantError(t, tc.status, "bad_request")
		})
	}
	var p page
	e.do("GET", "/api/v1/boards/x/top", tok, "").json(t, &p)
	if p.Total != 0 || e.applied() != 0 {
		t.Fatalf("a rejected array applied something: %+v", p)
	}
	// Exactly 1000 is fine, and an empty array is an empty answer.
	if got := e.scores("x", elems(1000)); len(got) != 1000 || got[999].Error != nil {
		t.Errorf("1000 events: %d results, last %+v", len(got), got[len(got)-1])
	}
	if got := e.scores("x", `[]`); len(got) != 0 {
		t.Errorf("empty array: %v", got)
	}
	e.do("GET", "/api/v1/boards/x/top", tok, "").json(t, &p)
	if p.Total != 50 || p.Entries[0].Score != 20 {
		t.Errorf("after 1000 events: total %d, top %+v", p.Total, p.Entries[0])
	}
}

// TestScoresUnavailable: when the store stops answering mid-array, every
// remaining event is answered unavailable without being tried.
func TestScoresUnavailable(t *testing.T) {
	t.Parallel()
	f := &flaky{Store: memEngine().new(t)}
	e := newEnv(t, f)
	e.putBoard("u", "")
	f.applyDn.Store(true)
	got := e.scores("u", `[{"id":"1","member":"a","delta":1},{"id":"2","member":"b","delta":1},{"id":"3","member":"c","delta":1.5}]`)
	want := []string{"unavailable", "unavailable", "invalid_score"}
	for i, g := range got {
		if g.Error == nil || g.Error.Code != want[i] {
			t.Errorf("element %d: %+v, want %s", i, g, want[i])
		}
	}
	if n := f.applies.Load(); n != 1 {
		t.Errorf("store tried %d times, want 1", n)
	}
	f.applyDn.Store(false)
	if got := e.scores("u", `[{"id":"1","member":"a","delta":1}]`); got[0].Error != nil || got[0].Score != 1 {
		t.Errorf("after recovery: %+v", got[0])
	}
	// A player may not post scores over REST even on a client_writes board.
	e.do("POST", "/api/v1/boards/u/scores", token(t, "a", auth.Player, nil), `[{"id":"9","member":"a","delta":1}]`).
		wantError(t, 403, "forbidden")
}
