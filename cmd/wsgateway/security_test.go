package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/node"
)

const testSecret = "security-test-secret-0123456789abcdef"

// runningGateway is the real program run in-process on a free port.
type runningGateway struct {
	addr   string // host:port of --addr
	stdout *testenv.LogBuffer
	stderr *testenv.LogBuffer
	stop   func() // cancels (SIGTERM) and waits for run to return
}

// startGateway runs `wsgateway` with args plus a loopback --addr and the
// test secret, and waits for the start banner.
func startGateway(t *testing.T, args ...string) *runningGateway {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	g := &runningGateway{stdout: new(testenv.LogBuffer), stderr: new(testenv.LogBuffer)}
	done := make(chan error, 1)
	all := append([]string{"--addr", "127.0.0.1:0", "--jwt-secret", testSecret, "--drain-timeout", "2s"}, args...)
	go func() { done <- run(ctx, all, envMap(nil), g.stdout, g.stderr) }()
	stopped := false
	g.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("run did not return after cancel")
		}
	}
	t.Cleanup(g.stop)
	addrRe := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(15 * time.Second)
	for !addrRe.MatchString(g.stdout.String()) {
		select {
		case err := <-done:
			t.Fatalf("run ended before listening: %v\n%s", err, g.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no start banner; stderr:\n%s", g.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.addr = addrRe.FindStringSubmatch(g.stdout.String())[1]
	return g
}

func mint(t *testing.T, sub string, role auth.Role, ttl time.Duration) string {
	t.Helper()
	tok, err := auth.MintHS256([]byte(testSecret), auth.Claims{Sub: sub, Role: role, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func httpDo(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSlowlorisCutOff: a client that dribbles its upgrade request's headers
// (one line at a time, never finishing) is disconnected once
// --read-header-timeout passes; the token rides in those headers, so this
// is also the authentication deadline. A prompt client on the same gateway
// is served.
func TestSlowlorisCutOff(t *testing.T) {
	t.Parallel()
	const timeout = 400 * time.Millisecond
	g := startGateway(t, "--read-header-timeout", timeout.String())

	conn, err := net.Dial("tcp", g.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	head := "GET /ws HTTP/1.1\r\nHost: " + g.addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	stopDribble := make(chan struct{})
	dribbled := make(chan int, 1)
	go func() {
		n := 0
		defer func() { dribbled <- n }()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopDribble:
				return
			case <-tick.C:
			}
			if _, err := fmt.Fprintf(conn, "X-Dribble-%d: a\r\n", n); err != nil {
				return // the server hung up
			}
			n++
		}
	}()
	// The server must end the connection while the dribble goes on; our own
	// read deadline only keeps a broken gateway from hanging the test.
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = io.ReadAll(conn)
	lived := time.Since(start)
	close(stopDribble)
	n := <-dribbled
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("still connected after %s of dribbling (%d lines): no header timeout", lived, n)
	}
	if lived < timeout-50*time.Millisecond { // the server's clock starts at its accept, near ours

		t.Fatalf("cut off after %s, before the %s header timeout", lived, timeout)
	}
	if n < 2 {
		t.Fatalf("only %d header lines dribbled before the cut: the test did not exercise a slow client", n)
	}

	// A client that sends its headers at once is answered normally.
	if code, _ := httpDo(t, "GET", "http://"+g.addr+"/healthz", "", ""); code != 200 {
		t.Fatalf("prompt client got %d", code)
	}
}

// TestNoTokenInLogs runs the gateway at debug level through every token
// carrier (subprotocol, Authorization, access_token), failed upgrades, an
// in-band auth and REST calls, and then greps the whole log for every
// token, each of its segments, and the key.
func TestNoTokenInLogs(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "--log-level", "debug", "--public-read", "--max-conns-per-member", "1")
	base, wsURL := "http://"+g.addr, "ws://"+g.addr+"/ws"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	admin := mint(t, "ops", auth.Admin, time.Hour)
	player := mint(t, "alice", auth.Player, time.Hour)
	fresh := mint(t, "alice", auth.Player, 2*time.Hour)
	server := mint(t, "bot", auth.Server, time.Hour)
	spectator := mint(t, "watcher", auth.Spectator, time.Hour)
	expired := mint(t, "late", auth.Player, -time.Minute)
	forged, err := auth.MintHS256([]byte("another-secret-another-secret-0123"), auth.Claims{Sub: "eve", Role: auth.Admin, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{admin, player, fresh, server, spectator, expired, forged}

	// REST.
	if code, body := httpDo(t, "PUT", base+"/api/v1/boards/b1", admin, `{"client_writes":true}`); code != 200 {
		t.Fatalf("PUT board: %d %s", code, body)
	}
	httpDo(t, "GET", base+"/api/v1/boards", admin, "")
	httpDo(t, "GET", base+"/api/v1/boards/b1/top?access_token="+spectator, "", "") // query is no REST carrier: 401
	httpDo(t, "GET", base+"/api/v1/boards/b1", expired, "")
	httpDo(t, "POST", base+"/api/v1/boards/b1/scores", forged, `[{"id":"x","member":"m","delta":1}]`)
	httpDo(t, "POST", base+"/api/v1/boards/b1/scores", server, `[{"id":"x","member":"m","delta":1}]`)

	dial := func(url string, o *websocket.DialOptions) (*websocket.Conn, error) {
		c, _, err := websocket.Dial(ctx, url, o)
		return c, err
	}
	exchange := func(c *websocket.Conn, msgs ...string) {
		t.Helper()
		for _, m := range msgs {
			if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
				t.Fatal(err)
			}
		}
		for range len(msgs) + 1 { // welcome, then one reply each
			if _, _, err := c.Read(ctx); err != nil {
				t.Fatal(err)
			}
		}
		c.Close(websocket.StatusNormalClosure, "")
	}

	// The three carriers, each with some traffic.
	c, err := dial(wsURL, &websocket.DialOptions{Subprotocols: []string{"lb.v1", "bearer." + player}})
	if err != nil {
		t.Fatal(err)
	}
	// Refused by the member cap while alice is connected (429).
	if _, err := dial(wsURL, &websocket.DialOptions{Subprotocols: []string{"lb.v1", "bearer." + player}}); err == nil {
		t.Fatal("second alice connection accepted with --max-conns-per-member 1")
	}
	exchange(c, `{"type":"score","id":"s1","board":"b1","delta":3}`,
		`{"type":"auth","id":"a1","token":"`+fresh+`"}`,
		`{"type":"auth","id":"a2","token":"`+forged+`"}`)
	c, err = dial(wsURL, &websocket.DialOptions{Subprotocols: []string{"lb.v1"}, HTTPHeader: http.Header{"Authorization": {"Bearer " + server}}})
	if err != nil {
		t.Fatal(err)
	}
	exchange(c, `{"type":"score","id":"s2","board":"b1","member":"zed","delta":5}`)
	c, err = dial(wsURL+"?access_token="+spectator, &websocket.DialOptions{Subprotocols: []string{"lb.v1"}})
	if err != nil {
		t.Fatal(err)
	}
	exchange(c, `{"type":"subscribe","id":"u1","board":"b1"}`)

	// Failed upgrades: expired, forged, bad Origin, and a valid token on a
	// request that is no WebSocket handshake (the upgrade itself fails).
	for _, o := range []struct {
		url  string
		opts *websocket.DialOptions
	}{
		{wsURL + "?access_token=" + expired, &websocket.DialOptions{Subprotocols: []string{"lb.v1"}}},
		{wsURL, &websocket.DialOptions{Subprotocols: []string{"lb.v1", "bearer." + forged}}},
		{wsURL, &websocket.DialOptions{Subprotocols: []string{"lb.v1"}, HTTPHeader: http.Header{"Authorization": {"Bearer " + forged}}}},
		{wsURL + "?access_token=" + server, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}}},
	} {
		if _, err := dial(o.url, o.opts); err == nil {
			t.Fatalf("upgrade to %s accepted", o.url)
		}
	}
	code, _ := httpDo(t, "GET", base+"/ws?access_token="+server, "", "")
	if code == http.StatusSwitchingProtocols || code == 200 {
		t.Fatalf("plain GET /ws answered %d", code)
	}

	g.stop() // drain: every connection's close is logged
	logs := g.stderr.String()
	if !strings.Contains(logs, `"level":"DEBUG"`) || !strings.Contains(logs, "api request") ||
		!strings.Contains(logs, "hub: upgrade failed") || strings.Count(logs, "hub: upgrade unauthorized") < 3 || !strings.Contains(logs, "connections per member") {
		t.Fatalf("the log lacks the debug lines this test relies on:\n%s", logs)
	}
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, testSecret) {
			t.Errorf("the key is in a log line: %s", line)
		}
		for _, tok := range secrets {
			for i, part := range append([]string{tok}, strings.Split(tok, ".")[1:]...) {
				// Segment 0 (the JWT header) is the same for every token
				// and secret-free; the payload and signature are not.
				if strings.Contains(line, part) {
					t.Errorf("token (segment %d) in a log line: %s", i, line)
				}
			}
		}
		if strings.Contains(line, "access_token") {
			t.Errorf("access_token in a log line: %s", line)
		}
	}
}

// TestMetricsAddr: with --metrics-addr, /metrics and /debug/pprof/ answer
// on that address, and the main address no longer serves them.
func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	maddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	g := startGateway(t, "--metrics-addr", maddr)
	mbase := "http://" + maddr
	// The metrics listener starts beside the main one: poll for it.
	testenv.Until(t, 10*time.Second, "the metrics address to answer", func() bool {
		resp, err := http.Get(mbase + "/metrics")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	for _, tc := range []struct{ path, want string }{
		{"/metrics", "wsgateway_connections"},
		{"/metrics", "go_goroutines"},
		{"/debug/pprof/", "goroutine"},
		{"/debug/pprof/goroutine?debug=1", "goroutine profile"},
		{"/debug/pprof/cmdline", ""},
	} {
		code, body := httpDo(t, "GET", mbase+tc.path, "", "")
		if code != 200 || !strings.Contains(body, tc.want) {
			t.Errorf("metrics address GET %s = %d, want 200 with %q", tc.path, code, tc.want)
		}
	}
	for _, path := range []string{"/metrics", "/debug/pprof/"} {
		if code, _ := httpDo(t, "GET", "http://"+g.addr+path, "", ""); code != http.StatusNotFound {
			t.Errorf("main address GET %s = %d, want 404", path, code)
		}
	}
	if code, _ := httpDo(t, "GET", "http://"+g.addr+"/healthz", "", ""); code != 200 {
		t.Errorf("main address /healthz = %d", code)
	}
}

// TestConnCapFlags: the cap flags reach the hub. With 127.0.0.1 a trusted
// proxy, X-Forwarded-For names the client.
func TestConnCapFlags(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "--max-conns-per-ip", "1", "--max-conns-per-member", "2", "--trusted-proxies", "127.0.0.1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wsURL := "ws://" + g.addr + "/ws"
	dial := func(tok, ip string) (*http.Response, error) {
		h := http.Header{"Authorization": {"Bearer " + tok}}
		if ip != "" {
			h.Set("X-Forwarded-For", ip)
		}
		c, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{Subprotocols: []string{"lb.v1"}, HTTPHeader: h})
		if err == nil {
			t.Cleanup(func() { c.CloseNow() })
		}
		return resp, err
	}
	expect429 := func(resp *http.Response, err error) {
		t.Helper()
		if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("want 429 with Retry-After, got %v %v", resp, err)
		}
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		if json.NewDecoder(resp.Body).Decode(&body); body.Error.Code != "rate_limited" {
			t.Fatalf("429 body code %q", body.Error.Code)
		}
	}
	bot := mint(t, "bot", auth.Server, time.Hour)
	if _, err := dial(bot, "198.51.100.1"); err != nil {
		t.Fatal(err)
	}
	expect429(dial(bot, "198.51.100.1"))

	alice := mint(t, "alice", auth.Player, time.Hour)
	for i := range 2 {
		if _, err := dial(alice, fmt.Sprintf("198.51.100.%d", 10+i)); err != nil {
			t.Fatal(err)
		}
	}
	expect429(dial(alice, "198.51.100.20"))
	// Loopback itself is not counted per address.
	for range 3 {
		if _, err := dial(bot, ""); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSecurityFlags(t *testing.T) {
	t.Parallel()
	key := []string{"--jwt-secret", testSecret}
	o, err := parseServe(key, envMap(map[string]string{
		"LB_MAX_CONNS_PER_IP":     "9",
		"LB_MAX_CONNS_PER_MEMBER": "3",
		"LB_TRUSTED_PROXIES":      "10.0.0.0/8, 192.0.2.1",
		"LB_READ_HEADER_TIMEOUT":  "3s",
		"LB_LIST_BUDGET":          "500",
		"LB_MAX_LIST_IDS":         "0",
	}), new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxConnsPerIP != 9 || o.MaxConnsPerMember != 3 || o.ReadHeaderTimeout != 3*time.Second || o.ListBudget != 500 || o.MaxListIDs != 0 ||
		len(o.TrustedProxies) != 2 || o.TrustedProxies[1] != netip.MustParsePrefix("192.0.2.1/32") {
		t.Fatalf("env twins not applied: %+v", o)
	}
	o, err = parseServe(key, envMap(nil), new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxConnsPerIP != hub.DefaultMaxConnsPerIP || o.MaxConnsPerMember != hub.DefaultMaxConnsPerMember ||
		o.ReadHeaderTimeout != 10*time.Second || o.TrustedProxies != nil ||
		o.ListBudget != node.DefaultListBudget || o.MaxListIDs != node.DefaultMaxListIDs {
		t.Fatalf("defaults: %+v", o)
	}
	for _, args := range [][]string{
		{"--trusted-proxies", "10.0.0.0/40"},
		{"--trusted-proxies", "proxy.local"},
		{"--max-conns-per-ip", "-1"},
		{"--max-conns-per-member", "-2"},
		{"--list-budget", "-1"},
		{"--max-list-ids", "-1"},
		{"--read-header-timeout", "0s"},
	} {
		if _, err := parseServe(append(key, args...), envMap(nil), new(bytes.Buffer)); err == nil {
			t.Errorf("parseServe accepted %v", args)
		}
	}
	for in, want := range map[int]int{0: -1, 1: 1, 256: 256} {
		if got := connCap(in); got != want {
			t.Errorf("connCap(%d) = %d, want %d", in, got, want)
		}
	}
}
