package api_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/rank"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memEngine().new(t))
	e.putBoard("b1", "")
	expired, err := auth.MintHS256(testSecret, auth.Claims{Sub: "alice", TTL: -time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	other, err := auth.MintHS256([]byte(strings.Repeat("x", 40)), auth.Claims{Sub: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		header string
		code   string
	}{
		{"no header", "", "unauthorized"},
		{"basic scheme", "Basic YWxpY2U6cHc=", "unauthorized"},
		{"bearer without token", "Bearer ", "unauthorized"},
		{"garbage", "Bearer not.a.jwt", "unauthorized"},
		{"other secret", "Bearer " + other, "unauthorized"},
		{"expired", "Bearer " + expired, "token_expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, path := range []string{"/api/v1/boards", "/api/v1/boards/b1", "/api/v1/boards/b1/top"} {
				req := newRequest(t, e, "GET", path, "")
				if tc.header != "" {
					req.Header.Set("Authorization", tc.header)
				}
				e.send(req).wantError(t, 401, tc.code)
			}
		})
	}
	t.Run("lower-case scheme", func(t *testing.T) {
		t.Parallel()
		req := newRequest(t, e, "GET", "/api/v1/boards", "")
		req.Header.Set("Authorization", "bearer "+token(t, "alice", auth.Player, nil))
		e.send(req).wantStatus(t, 200)
	})
	if strings.Contains(e.logs.String(), expired) {
		t.Error("a token reached the log")
	}
}

// TestRoles is the role table of docs/protocol.md §3 over REST.
func TestRoles(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		type call struct{ method, path, body string }
		calls := map[string]call{
			"list":   {"GET", "/api/v1/boards", ""},
			"get":    {"GET", "/api/v1/boards/r", ""},
			"top":    {"GET", "/api/v1/boards/r/top", ""},
			"member": {"GET", "/api/v1/boards/r/members/alice", ""},
			"scores": {"POST", "/api/v1/boards/r/scores", `[{"id":"x-%s","member":"alice","delta":1}]`},
			"put":    {"PUT", "/api/v1/boards/r", `{"title":"by %s"}`},
			"delete": {"DELETE", "/api/v1/boards/r", ""},
		}
		for _, tc := range []struct {
			role auth.Role
			may  map[string]bool
		}{
			{auth.Player, map[string]bool{"list": true, "get": true, "top": true, "member": true}},
			{auth.Spectator, map[string]bool{"list": true, "get": true, "top": true, "member": true}},
			{auth.Server, map[string]bool{"list": true, "get": true, "top": true, "member": true, "scores": true}},
			{auth.Admin, map[string]bool{"list": true, "get": true, "top": true, "member": true, "scores": true, "put": true, "delete": true}},
		} {
			// Sequential: delete must come last and the board is shared.
			e.putBoard("r", "")
			tok := token(t, "alice", tc.role, nil)
			for _, name := range []string{"list", "get", "top", "member", "scores", "put", "delete"} {
				c := calls[name]
				body := c.body
				if strings.Contains(body, "%s") {
					body = fmt.Sprintf(body, tc.role)
				}
				r := e.do(c.method, c.path, tok, body)
				switch {
				case !tc.may[name]:
					r.wantError(t, 403, "forbidden")
				case name == "delete":
					r.wantStatus(t, 204)
				default:
					r.wantStatus(t, 200)
				}
			}
		}
	})
}

// TestBoardsClaim is R11: a board outside the token's boards claim is forbidden.
func TestBoardsClaim(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		for _, id := range []string{"a", "b", "c"} {
			e.putBoard(id, "")
		}
		for _, tc := range []struct {
			name   string
			boards []string
			want   []string
		}{
			{"absent = all", nil, []string{"a", "b", "c"}},
			{"some", []string{"a", "c", "zz"}, []string{"a", "c"}},
			{"empty = none", []string{}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, role := range []auth.Role{auth.Spectator, auth.Server, auth.Admin} {
					tok := token(t, "bot", role, tc.boards)
					var list struct{ Boards []rank.Board }
					e.do("GET", "/api/v1/boards", tok, "").json(t, &list)
					var got []string
					for _, b := range list.Boards {
						got = append(got, b.ID)
					}
					if fmt.Sprint(got) != fmt.Sprint(tc.want) {
						t.Errorf("%s: list %v, want %v", role, got, tc.want)
					}
					for _, id := range []string{"a", "b", "c"} {
						allowed := strings.Contains(fmt.Sprint(tc.want), id)
						for _, c := range [][2]string{
							{"GET", "/api/v1/boards/" + id},
							{"GET", "/api/v1/boards/" + id + "/top"},
							{"GET", "/api/v1/boards/" + id + "/members/bot"},
						} {
							r := e.do(c[0], c[1], tok, "")
							if allowed {
								r.wantStatus(t, 200)
							} else {
								r.wantError(t, 403, "forbidden")
							}
						}
						if role == auth.Player || role == auth.Spectator {
							continue
						}
						r := e.do("POST", "/api/v1/boards/"+id+"/scores", tok, `[]`)
						if allowed {
							r.wantStatus(t, 200)
						} else {
							r.wantError(t, 403, "forbidden")
						}
						if role == auth.Admin && !allowed {
							e.do("PUT", "/api/v1/boards/"+id, tok, `{"title":"x"}`).wantError(t, 403, "forbidden")
							e.do("DELETE", "/api/v1/boards/"+id, tok, "").wantError(t, 403, "forbidden")
						}
					}
				}
			})
		}
	})
}

func TestPutBoard(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		adm := adminToken(t)

		// An empty body is a board with every default.
		var got rank.Board
		r := e.do("PUT", "/api/v1/boards/defaults", adm, "")
		r.wantStatus(t, 200)
		r.json(t, &got)
		if want := rank.DefaultBoard("defaults"); got != want {
			t.Errorf("defaults: got %+v, want %+v", got, want)
		}

		full := `{"id":"full","title":"Run hero","order":"asc","mode":"best","tiebreak":"shared",
			"reset":"weekly","tz":"Europe/Paris","top":25,"max_delta":1000,"client_writes":false,
			"public":true,"idempotency_window":"30s"}`
		r = e.do("PUT", "/api/v1/boards/full", adm, full)
		r.wantStatus(t, 200)
		r.json(t, &got)
		want := rank.Board{ID: "full", Title: "Run hero", Order: rank.Asc, Mode: rank.Best,
			Tiebreak: rank.Shared, Reset: rank.Weekly, TZ: "Europe/Paris", Top: 25, MaxDelta: 1000,
			ClientWrites: false, Public: true, IdempotencyWindow: rank.Duration(30 * time.Second), Retain: rank.DefaultRetain, Group: "full"}
		if got != want {
			t.Errorf("full: got %+v, want %+v", got, want)
		}
		var gb struct {
			Board   rank.Board `json:"board"`
			Members int64      `json:"members"`
			State   string     `json:"state"`
		}
		e.do("GET", "/api/v1/boards/full", adm, "").json(t, &gb)
		if gb.Board != want || gb.Members != 0 || gb.State != "open" {
			t.Errorf("GET after PUT: %+v", gb)
		}
		if ev := e.boardEvents(); len(ev) != 2 || ev[1] != (boardEvent{"full", false}) {
			t.Errorf("BoardChanged calls %v", ev)
		}

		// Invalid configs: 400 naming the field, and the stored board unchanged.
		for _, tc := range []struct {
			body, code, field string
		}{
			{`{"order":"up"}`, "bad_request", "order"},
			{`{"mode":"max"}`, "bad_request", "mode"},
			{`{"tiebreak":"coin"}`, "bad_request", "tiebreak"},
			{`{"reset":"yearly"}`, "bad_request", "reset"},
			{`{"tz":"Mars/Olympus"}`, "bad_request", "tz"},
			{`{"top":0}`, "bad_request", "top"},
			{`{"top":101}`, "bad_request", "top"},
			{`{"top":"ten"}`, "bad_request", "top"},
			{`{"max_delta":-1}`, "bad_request", "max_delta"},
			{`{"idempotency_window":"1ms"}`, "bad_request", "idempotency_window"},
			{`{"idempotency_window":600}`, "bad_request", "idempotency_window"},
			{`{"colour":"red"}`, "bad_request", "colour"},
			{`{"id":"other"}`, "bad_request", "id"},
			{`{"title":"` + strings.Repeat("t", 129) + `"}`, "bad_request", "title"},
			{`{"order":"desc"} {}`, "bad_request", "trailing"},
			{`[1]`, "bad_request", "JSON object"},
		} {
			r := e.do("PUT", "/api/v1/boards/full", adm, tc.body)
			eb := r.wantError(t, 400, tc.code)
			if !strings.Contains(eb.Error.Message, tc.field) {
				t.Errorf("%s: message %q does not name %q", tc.body, eb.Error.Message, tc.field)
			}
		}
		e.do("GET", "/api/v1/boards/full", adm, "").json(t, &gb)
		if gb.Board != want {
			t.Errorf("a rejected PUT changed the board: %+v", gb.Board)
		}

		// The id in the body may be given when it matches the path.
		e.do("PUT", "/api/v1/boards/full", adm, `{"id":"full","top":5}`).json(t, &got)
		if got.Top != 5 || got.Order != rank.Desc {
			t.Errorf("update: %+v (an update replaces the whole config)", got)
		}

		for _, id := range []string{"bad*id", strings.Repeat("x", 65), "a,b"} {
			e.do("PUT", "/api/v1/boards/"+id, adm, "").wantError(t, 400, "invalid_board")
			e.do("GET", "/api/v1/boards/"+id, adm, "").wantError(t, 400, "invalid_board")
			e.do("GET", "/api/v1/boards/"+id+"/top", adm, "").wantError(t, 400, "invalid_board")
		}
	})
}

func TestGetAndDeleteBoard(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		adm := adminToken(t)
		e.do("GET", "/api/v1/boards/nope", adm, "").wantError(t, 404, "unknown_board")
		e.do("DELETE", "/api/v1/boards/nope", adm, "").wantError(t, 404, "unknown_board")
		e.do("GET", "/api/v1/boards/nope/top", adm, "").wantError(t, 404, "unknown_board")
		e.do("GET", "/api/v1/boards/nope/members/alice", adm, "").wantError(t, 404, "unknown_board")
		e.do("POST", "/api/v1/boards/nope/scores", adm, `[]`).wantError(t, 404, "unknown_board")

		e.putBoard("g", "")
		e.scores("g", `[{"id":"1","member":"alice","delta":5},{"id":"2","member":"bob","delta":7},{"id":"3","member":"alice","delta":1}]`)
		var gb struct {
			Board   rank.Board `json:"board"`
			Members int64      `json:"members"`
		}
		e.do("GET", "/api/v1/boards/g", token(t, "alice", auth.Player, nil), "").json(t, &gb)
		if gb.Board.ID != "g" || gb.Members != 2 {
			t.Errorf("GET board: %+v, want g with 2 members", gb)
		}

		r := e.do("DELETE", "/api/v1/boards/g", adm, "")
		r.wantStatus(t, 204)
		if len(r.body) != 0 {
			t.Errorf("204 with body %q", r.body)
		}
		e.do("GET", "/api/v1/boards/g", adm, "").wantError(t, 404, "unknown_board")
		ev := e.boardEvents()
		if last := ev[len(ev)-1]; last != (boardEvent{"g", true}) {
			t.Errorf("last BoardChanged %v, want g deleted", last)
		}
		// Re-created, the board starts empty.
		e.putBoard("g", "")
		e.do("GET", "/api/v1/boards/g", adm, "").json(t, &gb)
		if gb.Members != 0 {
			t.Errorf("re-created board has %d members", gb.Members)
		}
	})
}

type page struct {
	Board   string       `json:"board"`
	Period  int64        `json:"period"`
	Offset  int          `json:"offset"`
	Entries []rank.Entry `json:"entries"`
	Total   int64        `json:"total"`
}

func TestTop(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("t", "")
		var events []string
		for i := range 30 {
			events = append(events, fmt.Sprintf(`{"id":"e%d","member":"m%02d","delta":%d}`, i, i, i*10))
		}
		e.scores("t", "["+strings.Join(events, ",")+"]")
		tok := token(t, "viewer", auth.Spectator, nil)

		for _, tc := range []struct {
			query       string
			offset, n   int
			first, last string
		}{
			{"", 0, 10, "m29", "m20"},
			{"?limit=1", 0, 1, "m29", "m29"},
			{"?offset=5&limit=3", 5, 3, "m24", "m22"},
			{"?offset=25&limit=100", 25, 5, "m04", "m00"},
			{"?offset=30", 30, 0, "", ""},
			{"?offset=1000&limit=5", 1000, 0, "", ""},
			{"?period=current&limit=2", 0, 2, "m29", "m28"},
		} {
			var p page
			r := e.do("GET", "/api/v1/boards/t/top"+tc.query, tok, "")
			r.wantStatus(t, 200)
			r.json(t, &p)
			if p.Board != "t" || p.Offset != tc.offset || len(p.Entries) != tc.n || p.Total != 30 || p.Period != 0 {
				t.Errorf("%s: %+v", tc.query, p)
				continue
			}
			if !strings.Contains(string(r.body), `"entries":[`) {
				t.Errorf("%s: entries not an array: %s", tc.query, r.body)
			}
			if strings.Contains(string(r.body), `"period"`) {
				t.Errorf("%s: period on a board that never resets: %s", tc.query, r.body)
			}
			if tc.n > 0 {
				if p.Entries[0].Member != tc.first || p.Entries[tc.n-1].Member != tc.last {
					t.Errorf("%s: entries %v", tc.query, p.Entries)
				}
				if p.Entries[0].Rank != int64(tc.offset+1) {
					t.Errorf("%s: first rank %d", tc.query, p.Entries[0].Rank)
				}
			}
		}
		for _, q := range []string{"?limit=0", "?limit=101", "?limit=-1", "?limit=x", "?offset=-1",
			"?offset=1.5", "?period=previous", "?period=2024"} {
			e.do("GET", "/api/v1/boards/t/top"+q, tok, "").wantError(t, 400, "bad_request")
		}
	})
}

// TestPeriods is R16 over REST: a resetting board names the period read.
func TestPeriods(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("daily", `{"reset":"daily"}`)
		before := rank.PeriodAt(rank.Board{Reset: rank.Daily}, time.Now()).Index
		e.scores("daily", `[{"id":"1","member":"alice","delta":3}]`)
		tok := serverToken(t)
		var p page
		e.do("GET", "/api/v1/boards/daily/top", tok, "").json(t, &p)
		after := rank.PeriodAt(rank.Board{Reset: rank.Daily}, time.Now()).Index
		if (p.Period != before && p.Period != after) || p.Total != 1 {
			t.Errorf("current period page: %+v, want period %d", p, before)
		}
		e.do("GET", "/api/v1/boards/daily/top?period=previous", tok, "").json(t, &p)
		if p.Total != 0 || p.Period >= after || p.Period == 0 {
			t.Errorf("previous period page: %+v", p)
		}
		var m memberRank
		e.do("GET", fmt.Sprintf("/api/v1/boards/daily/members/alice?period=%d", after), tok, "").json(t, &m)
		if m.Period != after || m.Rank == nil || *m.Score != 3 {
			t.Errorf("rank by period index: %+v", m)
		}
		e.do("GET", "/api/v1/boards/daily/top?period=yesterday", tok, "").wantError(t, 400, "bad_request")
	})
}

type memberRank struct {
	Board  string       `json:"board"`
	Period int64        `json:"period"`
	Member string       `json:"member"`
	Rank   *int64       `json:"rank"`
	Score  *int64       `json:"score"`
	Around []rank.Entry `json:"around"`
}

func TestMember(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("m", "")
		var events []string
		for i := range 20 {
			events = append(events, fmt.Sprintf(`{"id":"e%d","member":"p%02d","delta":%d}`, i, i, 100-i))
		}
		e.scores("m", "["+strings.Join(events, ",")+"]")
		tok := token(t, "p05", auth.Player, nil)

		for _, tc := range []struct {
			path       string
			rank       int64
			score      int64
			aroundFrom string
			aroundN    int
		}{
			{"p05", 6, 95, "p00", 11},
			{"p05?around=0", 6, 95, "p05", 1},
			{"p05?around=1", 6, 95, "p04", 3},
			{"p00?around=2", 1, 100, "p00", 3},
			{"p19?around=25", 20, 81, "p00", 20},
		} {
			var m memberRank
			r := e.do("GET", "/api/v1/boards/m/members/"+tc.path, tok, "")
			r.wantStatus(t, 200)
			r.json(t, &m)
			if m.Board != "m" || m.Rank == nil || *m.Rank != tc.rank || *m.Score != tc.score ||
				len(m.Around) != tc.aroundN || m.Around[0].Member != tc.aroundFrom {
				t.Errorf("%s: %s", tc.path, r.body)
			}
		}
		// Absent member: rank and score are null, around empty.
		r := e.do("GET", "/api/v1/boards/m/members/ghost", tok, "")
		r.wantStatus(t, 200)
		for _, want := range []string{`"rank":null`, `"score":null`, `"around":[]`, `"member":"ghost"`} {
			if !strings.Contains(string(r.body), want) {
				t.Errorf("absent member: %s lacks %s", r.body, want)
			}
		}
		// Member ids may hold the characters of a `sub`.
		e.scores("m", `[{"id":"odd","member":"a.b:c@d-e_f","delta":1}]`)
		var m memberRank
		e.do("GET", "/api/v1/boards/m/members/a.b:c@d-e_f", tok, "").json(t, &m)
		if m.Member != "a.b:c@d-e_f" || m.Rank == nil || *m.Rank != 21 {
			t.Errorf("odd member id: %+v", m)
		}
		for _, p := range []string{"a*b", strings.Repeat("m", 65), "x!"} {
			e.do("GET", "/api/v1/boards/m/members/"+p, tok, "").wantError(t, 400, "invalid_member")
		}
		for _, q := range []string{"?around=26", "?around=-1", "?around=x"} {
			e.do("GET", "/api/v1/boards/m/members/p01"+q, tok, "").wantError(t, 400, "bad_request")
		}
	})
}
