package api_test

import (
	"strings"
	"testing"
)

// TestAckRank is R24 v1.3 over REST on both engines: a sharded board's
// ack_rank is none unless told otherwise (absent from its config, as
// shards 1 is), and its acks then carry no rank and no prev_rank; PATCH to
// global puts them back (and to none again, null or "none"); an unsharded
// board refuses ack_rank (400 naming it) and changes nothing.
func TestAckRank(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		admin, tok := adminToken(t), serverToken(t)
		e.putBoard("wide", `{"shards":4}`)
		e.putBoard("flat", `{}`)
		// Absent: the default, none (as an absent shards is 1).
		if got, ok := storedBoard(t, e, "wide")["ack_rank"]; ok {
			t.Fatalf("a sharded board's default ack_rank shows: %v", got)
		}
		score := func(id string, d int) string {
			r := e.do("POST", "/api/v1/boards/wide/scores", tok, `{"id":"`+id+`","member":"alice","delta":`+string(rune('0'+d))+`}`)
			r.wantStatus(t, 200)
			return string(r.body)
		}
		if b := score("n1", 4); strings.Contains(b, `"rank"`) || strings.Contains(b, `"prev_rank"`) || !strings.Contains(b, `"score":4`) {
			t.Errorf("ack with ack_rank none: %s", b)
		}
		e.do("PATCH", "/api/v1/boards/wide", admin, `{"ack_rank":"global"}`).wantStatus(t, 200)
		if b := score("g1", 3); !strings.Contains(b, `"rank":1,"prev_rank":1`) || !strings.Contains(b, `"score":7`) {
			t.Errorf("ack with ack_rank global: %s", b)
		}
		if b := score("n1", 4); strings.Contains(b, `"rank"`) || !strings.Contains(b, `"duplicate":true`) {
			t.Errorf("a duplicate of an ack without ranks: %s, want the first result", b)
		}
		e.do("PATCH", "/api/v1/boards/wide", admin, `{"ack_rank":null}`).wantStatus(t, 200)
		if got, ok := storedBoard(t, e, "wide")["ack_rank"]; ok {
			t.Fatalf("ack_rank after null: %v, want the default (absent)", got)
		}
		if b := score("n2", 1); strings.Contains(b, `"rank"`) || !strings.Contains(b, `"score":8`) {
			t.Errorf("ack with ack_rank none again: %s", b)
		}
		e.do("PATCH", "/api/v1/boards/wide", admin, `{"ack_rank":"global"}`).wantStatus(t, 200)
		e.do("PATCH", "/api/v1/boards/wide", admin, `{"ack_rank":"none"}`).wantStatus(t, 200)
		if got := storedBoard(t, e, "wide")["ack_rank"]; got != "none" {
			t.Fatalf("ack_rank after none: %v", got)
		}
		if b := score("n3", 1); strings.Contains(b, `"rank"`) || !strings.Contains(b, `"score":9`) {
			t.Errorf("ack with ack_rank none said: %s", b)
		}
		for _, tc := range []struct{ board, method, body string }{
			{"flat", "PATCH", `{"ack_rank":"none"}`},
			{"flat", "PATCH", `{"ack_rank":"global"}`},
			{"wide", "PATCH", `{"ack_rank":"exact"}`},
			{"flat", "PUT", `{"ack_rank":"global"}`},
			{"fresh", "PUT", `{"shards":1,"ack_rank":"none"}`},
		} {
			before := storedBoard(t, e, tc.board)
			eb := e.do(tc.method, "/api/v1/boards/"+tc.board, admin, tc.body).wantError(t, 400, "bad_request")
			if !strings.Contains(eb.Error.Message, "ack_rank") {
				t.Errorf("%s %s %s: message %q does not name ack_rank", tc.method, tc.board, tc.body, eb.Error.Message)
			}
			if tc.board != "fresh" {
				sameConfig(t, tc.method+" "+tc.board+" "+tc.body, before, storedBoard(t, e, tc.board))
			}
		}
	})
}
