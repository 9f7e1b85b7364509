package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// hostileCase is one malformed or malicious input to /ws, with the
// contract's answer: a refused upgrade (wantHTTP, wantCode), an error frame
// (wantErr, "a|b" for either) after which the connection still answers, a
// close code (wantClose), or, for flooding cases, alive: the connection
// still answers. Every case must leave Redis unchanged.
type hostileCase struct {
	name   string
	tok    string
	hdr    http.Header
	query  string
	frames []rawFrame
	// big, when set, sends a text frame header claiming this many bytes and
	// streams them (the 10 MB frame).
	big uint64

	wantHTTP  int
	wantCode  string
	wantErr   string
	wantClose int
	alsoSee   string // an error code that must appear before the close
	alive     bool
	wantDup   bool // the answer is an ack with duplicate:true (a retry)
}

func text(s string) rawFrame { return rawFrame{op: opText, payload: []byte(s)} }

func score(id, member, num string) string {
	m := ""
	if member != "" {
		m = `,"member":"` + member + `"`
	}
	return `{"type":"score","id":"` + id + `","board":"hb"` + m + `,"delta":` + num + `}`
}

// noneToken is an unsigned token (alg none) for sub.
func noneToken(sub string) string {
	enc := base64.RawURLEncoding.EncodeToString
	h := enc([]byte(`{"alg":"none","typ":"JWT"}`))
	p := enc(fmt.Appendf(nil, `{"sub":%q,"role":"admin","exp":%d}`, sub, time.Now().Add(time.Hour).Unix()))
	return h + "." + p + "."
}

// hsToken signs arbitrary claims with key (HS256), for claims MintHS256
// does not make (nbf in the future) and for wrong keys.
func hsToken(t testing.TB, key []byte, claims jwt.MapClaims, hdr map[string]any) string {
	t.Helper()
	tk := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	for k, v := range hdr {
		tk.Header[k] = v
	}
	s, err := tk.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bearer(tok string) http.Header {
	h := http.Header{}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	return h
}

// TestHostileInput is the hostile-input table (issue item 2): each input
// gets the contract's error or close code and changes nothing in Redis.
func TestHostileInput(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	e := startEnv(t)
	g := startGateway(t, gwOpts{RedisURL: e.Redis.URL(), NATSURL: e.NATS.URL()})
	putBoard(t, g, "hb", nil)
	putBoard(t, g, "capped", map[string]any{"max_delta": 100})
	putBoard(t, g, "srvonly", map[string]any{"client_writes": false})

	srv := token(t, auth.Claims{Sub: "srv", Role: auth.Server})
	alice := token(t, auth.Claims{Sub: "alice", Name: "Alice"})
	spec := token(t, auth.Claims{Sub: "spec", Role: auth.Spectator})
	otherBoard := token(t, auth.Claims{Sub: "alice", Boards: []string{"other"}})
	expired := token(t, auth.Claims{Sub: "alice", TTL: -time.Minute})
	bob := token(t, auth.Claims{Sub: "bob"})
	notYet := hsToken(t, []byte(secret), jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix(), "nbf": time.Now().Add(10 * time.Minute).Unix()}, nil)
	wrongKey := hsToken(t, []byte("another-secret-of-at-least-32-bytes!!"), jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()}, nil)
	noExp := hsToken(t, []byte(secret), jwt.MapClaims{"sub": "alice"}, nil)
	badSub := hsToken(t, []byte(secret), jwt.MapClaims{"sub": "a{b}", "exp": time.Now().Add(time.Hour).Unix()}, nil)

	// Seeds: an applied id to reuse, and a member at the top of the range.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seed := []map[string]any{{"id": "seed-1", "member": "alice", "delta": 5}, {"id": "seed-big", "member": "big", "delta": rankMax}}
	var res []json.RawMessage
	if st, b, err := rest(ctx, "POST", g.HTTP()+"/api/v1/boards/hb/scores", srv, seed, &res); err != nil || st != 200 || bytes.Contains(b, []byte(`"error"`)) {
		t.Fatalf("seed: %d %s %v", st, b, err)
	}

	long := strings.Repeat("x", 300)
	deep := strings.Repeat("[", 1500) + strings.Repeat("]", 1500)
	pings := make([]rawFrame, 200) // at once: within the budget of message-less frames (256, R10)
	for i := range pings {
		pings[i] = rawFrame{op: opPing, payload: []byte("p")}
	}
	flood := make([]rawFrame, 400)
	for i := range flood {
		flood[i] = text(fmt.Sprintf(`{"type":"page","id":"f%d","board":"hb","limit":1}`, i))
	}
	bad10 := make([]rawFrame, 10)
	for i := range bad10 {
		bad10[i] = text("not json")
	}

	cases := []hostileCase{
		// Before the upgrade (R1, Origin).
		{name: "no token", wantHTTP: 401, wantCode: "unauthorized"},
		{name: "malformed token", tok: "abc.def", wantHTTP: 401, wantCode: "unauthorized"},
		{name: "alg none", tok: noneToken("alice"), wantHTTP: 401, wantCode: "unauthorized"},
		{name: "signed with another key", tok: wrongKey, wantHTTP: 401, wantCode: "unauthorized"},
		{name: "expired token", tok: expired, wantHTTP: 401, wantCode: "token_expired"},
		{name: "not yet valid token", tok: notYet, wantHTTP: 401, wantCode: "unauthorized"},
		{name: "token without exp", tok: noExp, wantHTTP: 401, wantCode: "unauthorized"},
		{name: "token with a hostile sub", tok: badSub, wantHTTP: 401, wantCode: "unauthorized"},
		{name: "expired token in query", query: "?access_token=" + expired, wantHTTP: 401, wantCode: "token_expired"},
		{name: "foreign origin", tok: alice, hdr: http.Header{"Origin": {"https://evil.example"}}, wantHTTP: 403, wantCode: "forbidden"},
		{name: "8 KB token", tok: strings.Repeat("a", 9000), wantHTTP: 401, wantCode: "unauthorized"},

		// Malformed frames (R10): bad_request, connection stays open.
		{name: "non-JSON", tok: alice, frames: []rawFrame{text("hello")}, wantErr: "bad_request"},
		{name: "truncated JSON", tok: alice, frames: []rawFrame{text(`{"type":"score","id":"t1","board":"hb","delta":`)}, wantErr: "bad_request"},
		{name: "JSON array", tok: alice, frames: []rawFrame{text(`[1,2]`)}, wantErr: "bad_request"},
		{name: "empty object", tok: alice, frames: []rawFrame{text(`{}`)}, wantErr: "bad_request"},
		{name: "trailing data", tok: alice, frames: []rawFrame{text(score("t2", "", "1") + ` {}`)}, wantErr: "bad_request"},
		{name: "byte order mark", tok: alice, frames: []rawFrame{text("\ufeff" + score("t3", "", "1"))}, wantErr: "bad_request"},
		{name: "case-variant key", tok: alice, frames: []rawFrame{text(`{"Type":"score","id":"t4","board":"hb","delta":1}`)}, wantErr: "bad_request"},
		{name: "case-variant type", tok: alice, frames: []rawFrame{text(`{"type":"SCORE","id":"t5","board":"hb","delta":1}`)}, wantErr: "bad_request"},
		{name: "duplicate key", tok: alice, frames: []rawFrame{text(`{"type":"score","id":"t6","board":"hb","delta":1,"delta":1000}`)}, wantErr: "bad_request"},
		{name: "duplicate key, other case", tok: alice, frames: []rawFrame{text(`{"type":"score","id":"t7","board":"hb","delta":1,"Delta":1000}`)}, wantErr: "bad_request"},
		{name: "unknown field", tok: alice, frames: []rawFrame{text(`{"type":"score","id":"t8","board":"hb","delta":1,"admin":true}`)}, wantErr: "bad_request"},
		{name: "deep nesting in a field", tok: alice, frames: []rawFrame{text(`{"type":"page","id":"t9","board":"hb","period":` + deep + `}`)}, wantErr: "bad_request"},
		{name: "deep nesting at top", tok: alice, frames: []rawFrame{text(deep)}, wantErr: "bad_request"},
		{name: "bad request id", tok: alice, frames: []rawFrame{text(`{"type":"score","id":"a b","board":"hb","delta":1}`)}, wantErr: "bad_request"},
		{name: "65-char request id", tok: alice, frames: []rawFrame{text(`{"type":"score","id":"` + strings.Repeat("i", 65) + `","board":"hb","delta":1}`)}, wantErr: "bad_request"},
		{name: "numeric request id", tok: alice, frames: []rawFrame{text(`{"type":"score","id":7,"board":"hb","delta":1}`)}, wantErr: "bad_request"},
		{name: "delta and value", tok: alice, frames: []rawFrame{text(`{"type":"score","id":"t10","board":"hb","delta":1,"value":1}`)}, wantErr: "bad_request"},
		{name: "value on an incr board", tok: alice, frames: []rawFrame{text(`{"type":"score","id":"t11","board":"hb","value":1}`)}, wantErr: "bad_request"},
		{name: "subscribe top 101", tok: alice, frames: []rawFrame{text(`{"type":"subscribe","id":"t12","board":"hb","top":101}`)}, wantErr: "bad_request"},
		{name: "page offset -1", tok: alice, frames: []rawFrame{text(`{"type":"page","id":"t13","board":"hb","offset":-1}`)}, wantErr: "bad_request"},

		// Scores (R6): invalid_score (or bad_request where it is not JSON).
		{name: "NaN", tok: alice, frames: []rawFrame{text(score("s1", "", "NaN"))}, wantErr: "bad_request|invalid_score"},
		{name: "Infinity", tok: alice, frames: []rawFrame{text(score("s2", "", "Infinity"))}, wantErr: "bad_request|invalid_score"},
		{name: "1e309", tok: alice, frames: []rawFrame{text(score("s3", "", "1e309"))}, wantErr: "invalid_score"},
		{name: "1e2", tok: alice, frames: []rawFrame{text(score("s4", "", "1e2"))}, wantErr: "invalid_score"},
		{name: "1.5", tok: alice, frames: []rawFrame{text(score("s5", "", "1.5"))}, wantErr: "invalid_score"},
		{name: "1.0", tok: alice, frames: []rawFrame{text(score("s6", "", "1.0"))}, wantErr: "invalid_score"},
		{name: `"10"`, tok: alice, frames: []rawFrame{text(score("s7", "", `"10"`))}, wantErr: "invalid_score"},
		{name: "null", tok: alice, frames: []rawFrame{text(score("s8", "", "null"))}, wantErr: "invalid_score"},
		{name: "true", tok: alice, frames: []rawFrame{text(score("s9", "", "true"))}, wantErr: "invalid_score"},
		{name: "2^53", tok: alice, frames: []rawFrame{text(score("s10", "", "9007199254740992"))}, wantErr: "invalid_score"},
		{name: "2^53+1", tok: alice, frames: []rawFrame{text(score("s11", "", "9007199254740993"))}, wantErr: "invalid_score"},
		{name: "-2^53", tok: alice, frames: []rawFrame{text(score("s12", "", "-9007199254740992"))}, wantErr: "invalid_score"},
		{name: "2^64", tok: alice, frames: []rawFrame{text(score("s13", "", "18446744073709551616"))}, wantErr: "invalid_score"},
		{name: "hex", tok: alice, frames: []rawFrame{text(score("s14", "", "0x10"))}, wantErr: "bad_request|invalid_score"},
		{name: "result out of range", tok: srv, frames: []rawFrame{text(score("s15", "big", "1"))}, wantErr: "out_of_range"},
		{name: "delta above max_delta", tok: alice, frames: []rawFrame{text(`{"type":"score","id":"s16","board":"capped","delta":101}`)}, wantErr: "delta_too_large"},

		// Permissions (R11, R15).
		{name: "spectator writes", tok: spec, frames: []rawFrame{text(score("p1", "", "1"))}, wantErr: "forbidden"},
		{name: "player for a foreign member", tok: alice, frames: []rawFrame{text(score("p2", "bob", "1"))}, wantErr: "forbidden"},
		{name: "player on a server-only board", tok: alice, frames: []rawFrame{text(`{"type":"score","id":"p3","board":"srvonly","delta":1}`)}, wantErr: "forbidden"},
		{name: "token for another board: score", tok: otherBoard, frames: []rawFrame{text(score("p4", "", "1"))}, wantErr: "forbidden"},
		{name: "token for another board: subscribe", tok: otherBoard, frames: []rawFrame{text(`{"type":"subscribe","id":"p5","board":"hb"}`)}, wantErr: "forbidden"},
		{name: "token for another board: page", tok: otherBoard, frames: []rawFrame{text(`{"type":"page","id":"p6","board":"hb"}`)}, wantErr: "forbidden"},
		{name: "server without member", tok: srv, frames: []rawFrame{text(score("p7", "", "1"))}, wantErr: "bad_request"},
		{name: "auth with another member's token", tok: alice, frames: []rawFrame{text(`{"type":"auth","id":"p8","token":"` + bob + `"}`)}, wantErr: "forbidden"},
		{name: "auth with alg none", tok: alice, frames: []rawFrame{text(`{"type":"auth","id":"p9","token":"` + noneToken("alice") + `"}`)}, wantErr: "unauthorized"},
		{name: "auth with an expired token", tok: alice, frames: []rawFrame{text(`{"type":"auth","id":"p10","token":"` + expired + `"}`)}, wantErr: "token_expired|unauthorized"},
		{name: "unknown board", tok: alice, frames: []rawFrame{text(`{"type":"score","id":"p11","board":"nosuch","delta":1}`)}, wantErr: "unknown_board"},

		// Hostile ids (R15).
		{name: "board with braces", tok: srv, frames: []rawFrame{text(`{"type":"score","id":"b1","board":"{hb}","member":"m","delta":1}`)}, wantErr: "invalid_board"},
		{name: "board with colon", tok: alice, frames: []rawFrame{text(`{"type":"page","id":"b2","board":"hb:idem"}`)}, wantErr: "invalid_board"},
		{name: "board star", tok: alice, frames: []rawFrame{text(`{"type":"subscribe","id":"b3","board":"*"}`)}, wantErr: "invalid_board"},
		{name: "board with space", tok: alice, frames: []rawFrame{text(`{"type":"page","id":"b4","board":"h b"}`)}, wantErr: "invalid_board"},
		{name: "board of 300 chars", tok: alice, frames: []rawFrame{text(`{"type":"page","id":"b5","board":"` + long + `"}`)}, wantErr: "invalid_board"},
		{name: "empty board", tok: alice, frames: []rawFrame{text(`{"type":"page","id":"b6","board":""}`)}, wantErr: "invalid_board"},
		{name: "member with braces", tok: srv, frames: []rawFrame{text(score("b7", "{alice}", "1"))}, wantErr: "invalid_member"},
		{name: "member star", tok: srv, frames: []rawFrame{text(score("b8", "*", "1"))}, wantErr: "invalid_member"},
		{name: "member with space", tok: srv, frames: []rawFrame{text(score("b9", "a b", "1"))}, wantErr: "invalid_member"},
		{name: "member of 300 chars", tok: srv, frames: []rawFrame{text(score("b10", long, "1"))}, wantErr: "invalid_member"},
		{name: "empty member", tok: srv, frames: []rawFrame{text(`{"type":"score","id":"b11","board":"hb","member":"","delta":1}`)}, wantErr: "invalid_member|bad_request"},
		{name: "view of a hostile member", tok: alice, frames: []rawFrame{text(`{"type":"subscribe","id":"b12","board":"hb","member":"x}*","around":2}`)}, wantErr: "invalid_member"},
		{name: "rank of a 300-char member", tok: alice, frames: []rawFrame{text(`{"type":"rank","id":"b13","board":"hb","member":"` + long + `"}`)}, wantErr: "invalid_member"},

		// Idempotency (R4).
		{name: "request id reused with another payload", tok: srv, frames: []rawFrame{text(score("seed-1", "alice", "6"))}, wantErr: "idempotency_conflict"},
		// Another member's same id is not hostile since R4 v1.1 (ids are per
		// member): it is a new event, rank/ranktest IdempotencyPerMember.
		{name: "request id reused, same payload", tok: alice, frames: []rawFrame{text(score("seed-1", "", "5"))}, wantDup: true},

		// Frame-level abuse (R10): close codes.
		{name: "binary frame", tok: alice, frames: []rawFrame{{op: opBinary, payload: []byte(score("c1", "", "1"))}}, wantClose: 1003},
		{name: "invalid UTF-8", tok: alice, frames: []rawFrame{text(`{"type":"page","id":"c2","board":"h` + "\xff\xfe" + `"}`)}, wantClose: 1007},
		{name: "frame just over max-message", tok: alice, frames: []rawFrame{text(`{"type":"page","id":"c3","board":"hb","period":"` + strings.Repeat("x", 4100) + `"}`)}, wantClose: 1009},
		{name: "10 MB frame", tok: alice, big: 10 << 20, wantClose: 1009},
		{name: "oversized ping", tok: alice, frames: []rawFrame{{op: opPing, payload: bytes.Repeat([]byte("p"), 200)}}, wantClose: 1002},
		{name: "continuation without start", tok: alice, frames: []rawFrame{{op: opCont, payload: []byte("x")}}, wantClose: 1002},
		{name: "ten bad requests in a row", tok: alice, frames: bad10, wantClose: 1008, alsoSee: "bad_request"},
		{name: "flood at 8x the rate", tok: alice, frames: flood, wantClose: 1008, alsoSee: "rate_limited"},
		{name: "flooded pings", tok: alice, frames: pings, alive: true},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := redisDigest(t, e.Redis)
			runHostile(t, g, tc)
			if after := redisDigest(t, e.Redis); after != before {
				t.Errorf("e2e: %s changed Redis (digest %s → %s)", tc.name, before, after)
			}
		})
	}
	t.Logf("%d hostile cases", len(cases))
}

// rankMax is 2^53-1.
const rankMax = 1<<53 - 1

func runHostile(t *testing.T, g *gateway, tc hostileCase) {
	hdr := bearer(tc.tok)
	for k, v := range tc.hdr {
		hdr[k] = v
	}
	ws, resp, body, err := rawDial(g.Addr, "/ws"+tc.query, hdr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if tc.wantHTTP != 0 {
		if ws != nil {
			ws.Close()
			t.Fatalf("upgrade accepted, want HTTP %d", tc.wantHTTP)
		}
		var eb proto.ErrorBody
		json.Unmarshal(body, &eb)
		if resp.StatusCode != tc.wantHTTP || eb.Error.Code != tc.wantCode {
			t.Errorf("HTTP %d %s, want %d with code %s", resp.StatusCode, body, tc.wantHTTP, tc.wantCode)
		}
		return
	}
	if ws == nil {
		t.Fatalf("upgrade refused: %d %s", resp.StatusCode, body)
	}
	defer ws.Close()
	f, err := ws.read(5 * time.Second)
	if err != nil || f.op != opText || !bytes.Contains(f.payload, []byte(`"welcome"`)) {
		t.Fatalf("welcome: %v %q", err, f.payload)
	}
	if tc.big > 0 {
		go func() {
			chunk := make([]byte, 64<<10)
			for i := range chunk {
				chunk[i] = 'x'
			}
			if ws.writeFrame(true, opText, chunk, tc.big) != nil {
				return
			}
			for sent := uint64(len(chunk)); sent < tc.big; sent += uint64(len(chunk)) {
				ws.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if _, err := ws.c.Write(chunk); err != nil {
					return // the gateway closed: expected
				}
			}
		}()
	}
	go func() {
		for _, fr := range tc.frames {
			if ws.write(fr.op, fr.payload) != nil {
				return
			}
		}
		if tc.alive {
			ws.write(opText, []byte(`{"type":"page","id":"probe","board":"hb","limit":1}`))
		}
	}()

	var codes []string
	probed := false
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		f, err := ws.read(time.Until(deadline))
		if err != nil {
			t.Fatalf("read: %v (errors so far %v)", err, codes)
		}
		switch f.op {
		case opClose:
			code := f.closeCode()
			if tc.wantClose == 0 {
				t.Fatalf("closed with %d %q (errors %v), want %s", code, f.payload[min(2, len(f.payload)):], codes, want(tc))
			}
			if code != tc.wantClose {
				t.Errorf("closed with %d %q, want %d", code, f.payload[min(2, len(f.payload)):], tc.wantClose)
			}
			if tc.alsoSee != "" && !slices.Contains(codes, tc.alsoSee) {
				t.Errorf("closed without a %s error first (errors %v)", tc.alsoSee, codes)
			}
			return
		case opText:
		default:
			continue // pongs, pings
		}
		var m struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			Code      string `json:"code"`
			Duplicate bool   `json:"duplicate"`
		}
		if err := json.Unmarshal(f.payload, &m); err != nil {
			t.Fatalf("reply is not JSON: %q", f.payload)
		}
		if m.ID == "probe" {
			if !tc.alive && !probed {
				t.Fatalf("probe answered before the expected outcome (errors %v)", codes)
			}
			return // the connection still answers
		}
		switch {
		case m.Type == proto.TypeError:
			codes = append(codes, m.Code)
			if tc.wantErr != "" {
				if !slices.Contains(strings.Split(tc.wantErr, "|"), m.Code) {
					t.Errorf("error %s %q, want %s", m.Code, f.payload, tc.wantErr)
				}
				if !probed {
					probed = true
					go ws.write(opText, []byte(`{"type":"page","id":"probe","board":"hb","limit":1}`))
				}
			}
		case m.Type == proto.TypeAck && tc.wantDup:
			if !m.Duplicate {
				t.Errorf("ack %s, want duplicate:true", f.payload)
			}
			return
		case tc.wantClose != 0 || tc.alive:
			// replies to the flood before the close; pongs for pings
		default:
			t.Errorf("unexpected reply %s, want %s", f.payload, want(tc))
		}
	}
	t.Fatalf("no outcome within 10s (errors %v), want %s", codes, want(tc))
}

func want(tc hostileCase) string {
	switch {
	case tc.wantErr != "":
		return "error " + tc.wantErr
	case tc.wantClose != 0:
		return fmt.Sprintf("close %d", tc.wantClose)
	case tc.wantDup:
		return "a duplicate ack"
	}
	return "the connection to stay open"
}
