package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// Hostile tokens and clients of issue "what a hostile client can do today":
// each test starts its own gateway (memory engine, in-process NATS) and
// talks to it over real sockets.

// rawHS signs payload, a JSON text taken byte for byte (repeated or
// case-variant claim names, which no JSON encoder produces), with the
// suite's secret.
func rawHS(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	signing := enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc([]byte(payload))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(signing))
	return signing + "." + enc(mac.Sum(nil))
}

// upgradeOutcome dials /ws with tok: the HTTP status and error code of a
// refused upgrade, or 101 and the open connection.
func upgradeOutcome(t testing.TB, g *gateway, tok string) (int, string, *rawWS) {
	t.Helper()
	ws, resp, body, err := rawDial(g.Addr, "/ws", bearer(tok))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if ws != nil {
		return http.StatusSwitchingProtocols, "", ws
	}
	var eb proto.ErrorBody
	json.Unmarshal(body, &eb)
	return resp.StatusCode, eb.Error.Code, nil
}

// restOutcome is GET /api/v1/boards with tok: the status and error code.
func restOutcome(t testing.TB, g *gateway, tok string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, b, err := rest(ctx, "GET", g.HTTP()+"/api/v1/boards", tok, nil, nil)
	if err != nil {
		t.Fatalf("rest: %v", err)
	}
	var eb proto.ErrorBody
	json.Unmarshal(b, &eb)
	return st, eb.Error.Code
}

// TestClaimNamesExact (issue item 1): claim names are matched exactly and a
// payload that repeats a name is refused, on /ws and on REST alike; a
// lenient decoder would have read each of these as an admin token.
func TestClaimNamesExact(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t, gwOpts{})
	exp := time.Now().Add(time.Hour).Unix()
	bad := map[string]string{
		"case-variant role":       fmt.Sprintf(`{"sub":"alice","exp":%d,"rOlE":"admin"}`, exp),
		"role then Role":          fmt.Sprintf(`{"sub":"alice","exp":%d,"role":"player","Role":"admin"}`, exp),
		"role twice":              fmt.Sprintf(`{"sub":"alice","exp":%d,"role":"player","role":"admin"}`, exp),
		"SUB overrides sub":       fmt.Sprintf(`{"sub":"alice","exp":%d,"SUB":"admin"}`, exp),
		"EXP beside exp":          fmt.Sprintf(`{"sub":"alice","exp":%d,"EXP":%d}`, exp, exp+3600),
		"BOARDS beside boards":    fmt.Sprintf(`{"sub":"alice","exp":%d,"boards":["a"],"BOARDS":["a","b"]}`, exp),
		"Unicode-folded sub":      fmt.Sprintf(`{"ſub":"admin","exp":%d}`, exp),
		"unknown claim twice":     fmt.Sprintf(`{"sub":"alice","exp":%d,"scope":"a","scope":"b"}`, exp),
		"sub twice, same value":   fmt.Sprintf(`{"sub":"alice","sub":"alice","exp":%d}`, exp),
		"escaped duplicate name":  fmt.Sprintf(`{"sub":"alice","exp":%d,"role":"player","\u0072ole":"admin"}`, exp),
		"case-variant name claim": fmt.Sprintf(`{"sub":"alice","exp":%d,"Name":"Admin"}`, exp),
	}
	for name, payload := range bad {
		t.Run(name, func(t *testing.T) {
			tok := rawHS(payload)
			if st, code, ws := upgradeOutcome(t, g, tok); st != 401 || code != proto.CodeUnauthorized {
				if ws != nil {
					ws.Close()
				}
				t.Errorf("/ws: %d %s, want 401 unauthorized", st, code)
			}
			if st, code := restOutcome(t, g, tok); st != 401 || code != proto.CodeUnauthorized {
				t.Errorf("REST: %d %s, want 401 unauthorized", st, code)
			}
		})
	}
	// The control: the same construction with exact, unique names (and an
	// unknown claim, which issuers add) is accepted.
	ok := rawHS(fmt.Sprintf(`{"sub":"alice","exp":%d,"role":"player","scope":"x"}`, exp))
	st, _, ws := upgradeOutcome(t, g, ok)
	if ws != nil {
		ws.Close()
	}
	if st != 101 {
		t.Errorf("/ws with exact claims: %d, want 101", st)
	}
	if st, code := restOutcome(t, g, ok); st != 200 {
		t.Errorf("REST with exact claims: %d %s, want 200", st, code)
	}
}

// TestHostileDisplayNames (issue item 10): a `name` claim carrying control
// or invisible characters is refused (401 unauthorized) on /ws and REST, as
// docs/protocol.md says; ordinary Unicode names are accepted.
func TestHostileDisplayNames(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t, gwOpts{})
	exp := time.Now().Add(time.Hour).Unix()
	tok := func(name string) string {
		b, _ := json.Marshal(map[string]any{"sub": "alice", "exp": exp, "name": name})
		return rawHS(string(b))
	}
	for _, name := range []string{
		"al\x00ice", "\x1b[31mRED\x1b[0m", "a\r\nb", "evil\u202etxt.exe", "ze\u200bro",
		"bom\ufeff", "line\u2028sep", "tab\there", "del\x7f", "c1\u0085", "iso\u2066late", "\u2069",
	} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			tk := tok(name)
			if st, code, ws := upgradeOutcome(t, g, tk); st != 401 || code != proto.CodeUnauthorized {
				if ws != nil {
					ws.Close()
				}
				t.Errorf("/ws: %d %s, want 401 unauthorized", st, code)
			}
			if st, code := restOutcome(t, g, tk); st != 401 || code != proto.CodeUnauthorized {
				t.Errorf("REST: %d %s, want 401 unauthorized", st, code)
			}
		})
	}
	for _, name := range []string{"Zoë", "李小龍", "Ana María", "🎮 pro", strings.Repeat("é", 32)} {
		tk := tok(name)
		st, _, ws := upgradeOutcome(t, g, tk)
		if ws != nil {
			ws.Close()
		}
		if st != 101 {
			t.Errorf("/ws with name %q: %d, want 101", name, st)
		}
		if st, code := restOutcome(t, g, tk); st != 200 {
			t.Errorf("REST with name %q: %d %s, want 200", name, st, code)
		}
	}
}

// TestFarFutureExpiry (issue item 11): a token expiring after 2262 (past
// int64 nanoseconds) is valid on /ws as on REST: the connection answers a
// request after its welcome instead of getting token_expired and 4001.
func TestFarFutureExpiry(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t, gwOpts{})
	exp := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	tk := rawHS(fmt.Sprintf(`{"sub":"alice","exp":%d}`, exp))
	if st, code := restOutcome(t, g, tk); st != 200 {
		t.Fatalf("REST: %d %s, want 200", st, code)
	}
	st, code, ws := upgradeOutcome(t, g, tk)
	if ws == nil {
		t.Fatalf("/ws: %d %s, want 101", st, code)
	}
	defer ws.Close()
	f, err := ws.read(5 * time.Second)
	var w proto.Welcome
	if err != nil || json.Unmarshal(f.payload, &w) != nil || w.Type != proto.TypeWelcome {
		t.Fatalf("welcome: %v %q", err, f.payload)
	}
	if w.Exp != exp {
		t.Errorf("welcome exp = %d, want %d", w.Exp, exp)
	}
	if err := ws.write(opText, []byte(`{"type":"page","id":"probe","board":"nosuch","limit":1}`)); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := ws.read(5 * time.Second)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if f.op == opClose {
			t.Fatalf("closed with %d %q", f.closeCode(), f.payload)
		}
		if f.op != opText {
			continue
		}
		var m struct{ Type, ID, Code string }
		json.Unmarshal(f.payload, &m)
		if m.Code == proto.CodeTokenExpired {
			t.Fatalf("got %s", f.payload)
		}
		if m.ID == "probe" {
			return // answered (unknown_board): the connection lives on
		}
	}
}

// leaks are what a client must never read: addresses, engine and package
// names, JWT library wording, error chains. The fault of a refused token is
// named in the contract's words ("malformed token", R30), never the
// library's ("could not base64 decode").
var leaks = []string{"127.0.0.1", "dial", "connection refused", "redis", "memstore", "nats", "api:", "auth:", "rank:", "hub:", "jwt", "base64", "decode"}

func leaked(b []byte) string {
	low := strings.ToLower(string(b))
	for _, l := range leaks {
		if strings.Contains(low, l) {
			return l
		}
	}
	return ""
}

// TestNoInternalDetails (issue item 9): with Redis down, an anonymous
// /readyz names the failing part and nothing more (an admin token gets the
// details), and player-facing REST and WebSocket errors say what happened
// in the contract's words: no address, engine, package chain or JWT
// library internals.
func TestNoInternalDetails(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	e := startEnv(t)
	g := startGateway(t, gwOpts{RedisURL: e.Redis.URL(), NATSURL: e.NATS.URL()})
	putBoard(t, g, "lk", nil)
	admin, srv := adminToken(t), token(t, auth.Claims{Sub: "srv", Role: auth.Server})
	alice := token(t, auth.Claims{Sub: "alice"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	check := func(what string, b []byte) {
		t.Helper()
		if l := leaked(b); l != "" {
			t.Errorf("%s leaks %q: %s", what, l, b)
		}
	}

	// Error chains of the engine on a healthy store.
	_, b, _ := rest(ctx, "POST", g.HTTP()+"/api/v1/boards/lk/scores", srv, []map[string]any{{"id": "x", "member": "m", "delta": 1}, {"id": "x", "member": "m", "delta": 2}, {"id": "y", "member": "m", "delta": rankMax}}, nil)
	check("scores conflict", b)
	if !strings.Contains(string(b), "idempotency_conflict") {
		t.Errorf("scores: %s", b)
	}
	_, b, _ = rest(ctx, "GET", g.HTTP()+"/api/v1/boards/lk/top?period=previous", alice, nil, nil)
	check("top of a board without periods", b)
	// Tokens the JWT library refuses.
	for _, tk := range []string{"abc.def.ghi", "a.b", rawHS(`{"sub":1}`), rawHS(`not json`)} {
		_, b, _ = rest(ctx, "GET", g.HTTP()+"/api/v1/boards", tk, nil, nil)
		check("REST 401", b)
		st, code, ws := upgradeOutcome(t, g, tk)
		if ws != nil {
			ws.Close()
		}
		ws2, _, body, _ := rawDial(g.Addr, "/ws", bearer(tk))
		if ws2 != nil {
			ws2.Close()
		}
		if st != 401 || code != proto.CodeUnauthorized {
			t.Errorf("/ws: %d %s", st, code)
		}
		check("/ws 401", body)
	}

	ws, _, _, err := rawDial(g.Addr, "/ws", bearer(alice))
	if err != nil || ws == nil {
		t.Fatalf("dial: %v", err)
	}
	defer ws.Close()
	if _, err := ws.read(5 * time.Second); err != nil {
		t.Fatal(err)
	}

	e.Redis.Kill()
	testenv.Eventually(t, 10*time.Second, "/readyz 503", func() error {
		st, b, err := rest(ctx, "GET", g.HTTP()+"/readyz", "", nil, nil)
		if err != nil || st != 503 {
			return fmt.Errorf("%d %s %v", st, b, err)
		}
		check("anonymous /readyz", b)
		if !strings.Contains(string(b), `"store"`) {
			t.Errorf("anonymous /readyz does not name the store: %s", b)
		}
		return nil
	})
	st, b, _ := rest(ctx, "GET", g.HTTP()+"/readyz", admin, nil, nil)
	if st != 503 || !strings.Contains(string(b), "127.0.0.1") {
		t.Errorf("admin /readyz: %d %s, want the details", st, b)
	}
	_, b, _ = rest(ctx, "GET", g.HTTP()+"/readyz", alice, nil, nil)
	check("player /readyz", b)
	_, b, _ = rest(ctx, "GET", g.HTTP()+"/api/v1/boards/lk/top", alice, nil, nil)
	check("REST top, store down", b)
	_, b, _ = rest(ctx, "POST", g.HTTP()+"/api/v1/boards/lk/scores", srv, []map[string]any{{"id": "z", "member": "m", "delta": 1}}, nil)
	check("REST scores, store down", b)
	for i, m := range []string{`{"type":"page","id":"p1","board":"lk","limit":1}`, `{"type":"score","id":"s1","board":"lk","delta":1}`} {
		if err := ws.write(opText, []byte(m)); err != nil {
			t.Fatal(err)
		}
		f, err := ws.read(10 * time.Second)
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		check("WebSocket error, store down", f.payload)
	}
}

// burst sends n requests over 8 connections at once and counts statuses;
// every 429 must carry rate_limited and a Retry-After of at least 1 s.
func burst(t *testing.T, n int, method, url, tok string, body []byte) map[int]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	for range 8 {
		wg.Go(func() {
			for range next {
				req, _ := http.NewRequest(method, url, bytes.NewReader(body))
				if tok != "" {
					req.Header.Set("Authorization", "Bearer "+tok)
				}
				resp, err := httpClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 429 {
					var eb proto.ErrorBody
					json.Unmarshal(b, &eb)
					if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); eb.Error.Code != proto.CodeRateLimited || ra < 1 {
						t.Errorf("429 %s with Retry-After %q", b, resp.Header.Get("Retry-After"))
					}
				}
				mu.Lock()
				counts[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return counts
}

// TestRESTRateLimit (issue item 7): REST is limited per player member (the
// WebSocket's 50/s, burst 100, by default) and per address without a
// token: 429 rate_limited with Retry-After; a server token is not limited.
func TestRESTRateLimit(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t, gwOpts{})
	putBoard(t, g, "rl", nil)
	top := g.HTTP() + "/api/v1/boards/rl/top?limit=100"
	const n = 600
	began := time.Now()
	player := burst(t, n, "GET", top, token(t, auth.Claims{Sub: "alice"}), nil)
	// The budget: a burst of 100, then 50 a second for as long as the
	// burst took (a loaded box sends it slowly).
	most := 100 + int(50*time.Since(began).Seconds()) + 1
	if player[429] == 0 || player[200] == 0 || player[200] > most {
		t.Errorf("player: %v, want some 200 (at most %d) then 429s", player, most)
	}
	anon := burst(t, n, "GET", g.HTTP()+"/api/v1/boards", "", nil)
	if anon[429] == 0 || anon[401] == 0 {
		t.Errorf("token-less: %v, want 401s then 429s", anon)
	}
	srv := burst(t, n, "GET", top, token(t, auth.Claims{Sub: "srv", Role: auth.Server}), nil)
	if srv[200] != n {
		t.Errorf("server: %v, want %d × 200", srv, n)
	}
	// Another player has a bucket of its own.
	if st, code := restOutcome(t, g, token(t, auth.Claims{Sub: "bob"})); st != 200 {
		t.Errorf("bob after alice's burst: %d %s", st, code)
	}
}

// rchar is the bytes a process has passed to read(2) and friends, sockets
// included (/proc/<pid>/io): what the gateway really read, whatever it
// then kept in memory.
func rchar(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatalf("read /proc/%d/io: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatalf("no rchar in /proc/%d/io", pid)
	return 0
}

// TestBodiesAfterAuth (issue item 8): 300 parallel token-less 1 MiB POSTs
// (and 300 with a refused token) are answered 401 (or 429) without the
// gateway reading their bodies: the bytes it read stay far below the
// 600 MiB sent. A valid server token's body is still read and applied.
func TestBodiesAfterAuth(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t, gwOpts{})
	putBoard(t, g, "bd", nil)
	url := g.HTTP() + "/api/v1/boards/bd/scores"
	body := bytes.Repeat([]byte(" "), 1<<20-64)
	body = append(body, []byte(`[{"id":"x","member":"m","delta":1}]`)...)
	before := rchar(t, g.Pid())
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := range 600 {
		tok := ""
		if i%2 == 1 {
			tok = "not-a-token"
		}
		wg.Go(func() {
			req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			resp, err := httpClient.Do(req)
			if err != nil {
				return // the gateway may close before the client finished sending
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			statuses[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	read := rchar(t, g.Pid()) - before
	t.Logf("600 × 1 MiB POSTs without a valid token: statuses %v, gateway read %.1f MiB", statuses, float64(read)/(1<<20))
	for st := range statuses {
		if st != 401 && st != 429 {
			t.Errorf("status %d, want 401 or 429 only (%v)", st, statuses)
		}
	}
	if read > 60<<20 {
		t.Errorf("the gateway read %d MiB of the 600 MiB of refused bodies", read>>20)
	}
	// The same body with a server token is read and applied.
	srv := token(t, auth.Claims{Sub: "srv", Role: auth.Server})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+srv)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"score":1`) {
		t.Errorf("server token: %d %s", resp.StatusCode, b)
	}
}

// TestControlFrameFlood (issue item 2): frames that carry no message (pings,
// pongs, zero-length continuation fragments) count against a budget per
// connection; a client that keeps sending them is closed with 1008 within
// seconds, as a player and as a token-less --public-read spectator.
func TestControlFrameFlood(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t, gwOpts{Args: []string{"--public-read"}})
	alice := token(t, auth.Claims{Sub: "alice"})
	for _, tc := range []struct {
		name  string
		tok   string
		start []rawFrame // sent once, then the flood
		flood rawFrame
	}{
		{"empty pings", alice, nil, rawFrame{op: opPing}},
		{"empty pongs", alice, nil, rawFrame{op: opPong}},
		{"empty pings, no token", "", nil, rawFrame{op: opPing}},
		{"empty continuation fragments", alice, []rawFrame{{op: opText, payload: []byte("{")}}, rawFrame{op: opCont}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws, resp, body, err := rawDial(g.Addr, "/ws", bearer(tc.tok))
			if err != nil || ws == nil {
				t.Fatalf("dial: %v %v %s", err, resp, body)
			}
			defer ws.Close()
			if f, err := ws.read(5 * time.Second); err != nil || !strings.Contains(string(f.payload), "welcome") {
				t.Fatalf("welcome: %v %q", err, f.payload)
			}
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for _, f := range tc.start {
					if ws.writeFrame(false, f.op, f.payload, uint64(len(f.payload))) != nil {
						return
					}
				}
				fin := tc.flood.op != opCont
				batch := bytes.Buffer{}
				for range 256 {
					batch.Write([]byte{tc.flood.op | boolBit(fin), 0x80, 0, 0, 0, 0})
				}
				for {
					select {
					case <-stop:
						return
					default:
					}
					ws.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
					if _, err := ws.c.Write(batch.Bytes()); err != nil {
						return // closed: expected
					}
				}
			}()
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				f, err := ws.read(time.Until(deadline))
				if err != nil {
					t.Fatalf("read: %v, want a close frame 1008", err)
				}
				if f.op == opClose {
					if f.closeCode() != 1008 {
						t.Fatalf("closed with %d %q, want 1008", f.closeCode(), f.payload)
					}
					return
				}
			}
			t.Fatal("still open after 10 s of flooding")
		})
	}
}

func boolBit(fin bool) byte {
	if fin {
		return 0x80
	}
	return 0
}

// TestConnCapGaps (issue item 12): --max-conns is a per-node ceiling (503
// unavailable with Retry-After past it, a slot again once a connection
// ends); behind a trusted proxy an unparseable X-Forwarded-For hop counts
// as the proxy's own client slot, loopback proxy or not.
func TestConnCapGaps(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	alice := token(t, auth.Claims{Sub: "alice"})
	t.Run("max-conns", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, gwOpts{Args: []string{"--max-conns", "3"}})
		var open []*rawWS
		defer func() {
			for _, ws := range open {
				ws.Close()
			}
		}()
		for i := range 3 {
			ws, resp, body, err := rawDial(g.Addr, "/ws", bearer(token(t, auth.Claims{Sub: fmt.Sprintf("m%d", i)})))
			if err != nil || ws == nil {
				t.Fatalf("connection %d: %v %v %s", i, err, resp, body)
			}
			open = append(open, ws)
		}
		ws, resp, body, err := rawDial(g.Addr, "/ws", bearer(alice))
		if err != nil || ws != nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), proto.CodeUnavailable) {
			if ws != nil {
				ws.Close()
			}
			t.Fatalf("4th connection: %v %v %s, want 503 unavailable with Retry-After", err, resp, body)
		}
		open[0].Close()
		testenv.Eventually(t, 5*time.Second, "a slot after a close", func() error {
			ws, resp, body, err := rawDial(g.Addr, "/ws", bearer(alice))
			if err != nil || ws == nil {
				return fmt.Errorf("%v %v %s", err, resp, body)
			}
			open = append(open, ws)
			return nil
		})
	})
	t.Run("unparseable X-Forwarded-For", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, gwOpts{Args: []string{"--trusted-proxies", "127.0.0.1", "--max-conns-per-ip", "2", "--max-conns-per-member", "0"}})
		var open []*rawWS
		defer func() {
			for _, ws := range open {
				ws.Close()
			}
		}()
		hdr := bearer(alice)
		hdr.Set("X-Forwarded-For", "unknown")
		for i := range 3 {
			ws, resp, body, err := rawDial(g.Addr, "/ws", hdr)
			if err != nil {
				t.Fatal(err)
			}
			if ws != nil {
				open = append(open, ws)
			}
			if i < 2 && ws == nil {
				t.Fatalf("connection %d refused: %d %s", i, resp.StatusCode, body)
			}
			if i == 2 && (ws != nil || resp.StatusCode != 429) {
				t.Fatalf("3rd connection behind an unparseable hop: %v, want 429", resp.Status)
			}
		}
		// A parseable client behind the same proxy has its own slots.
		hdr.Set("X-Forwarded-For", "203.0.113.7")
		ws, resp, body, _ := rawDial(g.Addr, "/ws", hdr)
		if ws == nil {
			t.Fatalf("a known client refused: %d %s", resp.StatusCode, body)
		}
		open = append(open, ws)
	})
}
