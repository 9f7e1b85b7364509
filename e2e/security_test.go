package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestTokensNeverLogged uses tokens every way a client can carry them —
// Authorization header, subprotocol, access_token query, REST bearer, the
// auth message; valid, expired and badly signed — with the gateway at
// debug level, then greps everything it wrote for any token's signature.
func TestTokensNeverLogged(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	e := startEnv(t)
	g := startGateway(t, gwOpts{RedisURL: e.Redis.URL(), NATSURL: e.NATS.URL()})
	putBoard(t, g, "logs", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var used []string
	mint := func(c auth.Claims) string {
		tok := token(t, c)
		used = append(used, tok)
		return tok
	}
	alice := mint(auth.Claims{Sub: "alice"})
	fresh := mint(auth.Claims{Sub: "alice", TTL: 2 * time.Hour})
	expired := mint(auth.Claims{Sub: "alice", TTL: -time.Minute})
	wrong := hsToken(t, []byte("another-secret-of-at-least-32-bytes!!"), jwt.MapClaims{"sub": "eve", "exp": time.Now().Add(time.Hour).Unix()}, nil)
	used = append(used, wrong)

	// Header carrier, then an auth message, a score and a bad request.
	cl, err := client.Dial(ctx, g.URL(), alice, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Auth(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Auth(ctx, expired); err == nil {
		t.Error("auth with an expired token succeeded")
	}
	if _, err := cl.Score(ctx, client.ScoreReq{Board: "logs", Delta: client.Int(1)}); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	// Subprotocol carrier.
	cl, err = client.Dial(ctx, g.URL(), alice, &client.Options{SubprotocolToken: true})
	if err != nil {
		t.Fatal(err)
	}
	cl.Close()
	// Query carrier, valid and not.
	for _, tok := range []string{alice, expired, wrong} {
		ws, _, _, err := rawDial(g.Addr, "/ws?access_token="+tok, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ws != nil {
			ws.Close()
		}
	}
	// Refused upgrades with each bad token, and REST.
	for _, tok := range []string{expired, wrong} {
		if _, err := client.Dial(ctx, g.URL(), tok, nil); err == nil {
			t.Errorf("dial with a bad token succeeded")
		}
		rest(ctx, "GET", g.HTTP()+"/api/v1/boards", tok, nil, nil)
	}
	rest(ctx, "GET", g.HTTP()+"/api/v1/boards/logs/top", alice, nil, nil)
	rest(ctx, "GET", g.HTTP()+"/api/v1/boards/logs/top?access_token="+alice, "", nil, nil)

	// The gateway logs each request; wait until it logged the last one.
	testenv.Eventually(t, 5*time.Second, "the gateway's request log", func() error {
		if strings.Count(g.Logs(), "/top") >= 2 {
			return nil
		}
		return errNotYet
	})
	g.Term(15 * time.Second)
	logs := g.Logs()
	if len(logs) < 200 {
		t.Fatalf("the gateway wrote almost nothing (%d bytes): the grep would prove nothing", len(logs))
	}
	for _, tok := range used {
		sig := tok[strings.LastIndexByte(tok, '.')+1:]
		if strings.Contains(logs, sig) {
			i := strings.Index(logs, sig)
			t.Errorf("e2e: a token's signature is in the gateway's output: …%s…", logs[max(i-200, 0):min(i+20, len(logs))])
		}
		if p := strings.Split(tok, "."); len(p) == 3 && strings.Contains(logs, p[1]) {
			t.Errorf("e2e: a token's payload is in the gateway's output")
		}
	}
	t.Logf("grepped %d bytes of gateway output for %d tokens", len(logs), len(used))
}

// TestMetricsAddr: with --metrics-addr, /metrics and /debug/pprof/ are
// served there, and neither pprof nor /metrics on the public --addr.
func TestMetricsAddr(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	e := startEnv(t)
	maddr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	g := startGateway(t, gwOpts{RedisURL: e.Redis.URL(), NATSURL: e.NATS.URL(), Args: []string{"--metrics-addr", maddr}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var st int
	var body []byte
	testenv.Eventually(t, 5*time.Second, "pprof on --metrics-addr", func() error {
		var err error
		st, body, err = rest(ctx, "GET", "http://"+maddr+"/debug/pprof/", "", nil, nil)
		if err != nil {
			return err
		}
		return nil
	})
	if st != 200 || !strings.Contains(string(body), "goroutine") {
		t.Errorf("GET %s/debug/pprof/: %d", maddr, st)
	}
	st, body, _ = rest(ctx, "GET", "http://"+maddr+"/metrics", "", nil, nil)
	if st != 200 || !strings.Contains(string(body), "go_goroutines") {
		t.Errorf("GET %s/metrics: %d", maddr, st)
	}
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=2", "/metrics"} {
		st, body, _ = rest(ctx, "GET", g.HTTP()+p, "", nil, nil)
		if st == 200 && (strings.Contains(string(body), "goroutine") || strings.Contains(string(body), "go_goroutines")) {
			t.Errorf("e2e: %s is served on the public address", p)
		}
	}
}

// TestSlowHeaders: a client that sends its request headers slowly
// (slowloris) is cut by ReadHeaderTimeout and holds nothing.
func TestSlowHeaders(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	e := startEnv(t)
	g := startGateway(t, gwOpts{RedisURL: e.Redis.URL(), NATSURL: e.NATS.URL()})
	c, err := net.Dial("tcp", g.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	closed := make(chan time.Duration, 1)
	go func() {
		c.SetReadDeadline(time.Now().Add(40 * time.Second))
		io.Copy(io.Discard, c) // returns when the gateway closes the socket
		closed <- time.Since(start)
	}()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case d := <-closed:
			t.Logf("a client trickling its headers was cut after %s", d.Round(100*time.Millisecond))
			if d > 20*time.Second {
				t.Errorf("e2e: cut only after %s", d)
			}
			return
		case <-tick.C:
			// One header byte at a time, never finishing the headers.
			if _, err := fmt.Fprintf(c, "X-%d: y\r\n", i); err != nil {
				t.Logf("write failed after %s: %v (the gateway closed)", time.Since(start).Round(100*time.Millisecond), err)
				return
			}
			if time.Since(start) > 35*time.Second {
				t.Fatalf("e2e: a client trickling headers was not cut within 35s")
			}
		}
	}
}

// TestOriginAllowList: browser upgrades from an allowed origin pass, from
// any other origin get 403 (R1).
func TestOriginAllowList(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	e := startEnv(t)
	g := startGateway(t, gwOpts{RedisURL: e.Redis.URL(), NATSURL: e.NATS.URL(), Args: []string{"--allowed-origins", "game.example,*.game.example"}})
	tok := token(t, auth.Claims{Sub: "alice"})
	for _, tc := range []struct {
		origin string
		want   int
	}{
		{"", 101},
		{"https://game.example", 101},
		{"https://eu.game.example", 101},
		{"http://" + g.Addr, 101},
		{"https://evil.example", 403},
		{"https://game.example.evil.example", 403},
		{"https://evilgame.example", 403},
		{"null", 403},
	} {
		h := bearer(tok)
		if tc.origin != "" {
			h.Set("Origin", tc.origin)
		}
		ws, resp, body, err := rawDial(g.Addr, "/ws", h)
		if err != nil {
			t.Fatal(err)
		}
		if ws != nil {
			ws.Close()
		}
		if resp.StatusCode != tc.want {
			t.Errorf("Origin %q: %d %s, want %d", tc.origin, resp.StatusCode, body, tc.want)
		}
	}
}

// jwksServer serves one RSA key as kid k1 and counts fetches.
type jwksServer struct {
	*httptest.Server
	key   *rsa.PrivateKey
	hits  atomic.Int64
	pemPK []byte
}

func startJWKS(t testing.TB) *jwksServer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	j := &jwksServer{key: key, pemPK: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}
	enc := base64.RawURLEncoding.EncodeToString
	set, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
		"n": enc(key.N.Bytes()), "e": enc(big.NewInt(int64(key.E)).Bytes()),
	}}})
	j.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(set)
	}))
	t.Cleanup(j.Close)
	return j
}

// TestHostileKeys: a gateway verifying RS256 tokens from a JWKS endpoint
// with a configured issuer refuses algorithm confusion (HS256 signed with
// the RSA public key), forged kids, foreign keys, alg none, jku headers;
// and never fetches keys for a token of another issuer.
func TestHostileKeys(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	e := startEnv(t)
	j := startJWKS(t)
	var evilHits atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { evilHits.Add(1) }))
	defer evil.Close()
	const iss = "https://issuer.test"
	g := startGateway(t, gwOpts{RedisURL: e.Redis.URL(), NATSURL: e.NATS.URL(),
		Auth: []string{"--jwks-url", j.URL, "--jwt-issuer", iss}})
	attacker, _ := rsa.GenerateKey(rand.Reader, 2048)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	claims := func(issuer string) jwt.MapClaims {
		return jwt.MapClaims{"sub": "alice", "iss": issuer, "exp": time.Now().Add(time.Hour).Unix()}
	}
	sign := func(m jwt.SigningMethod, key any, c jwt.MapClaims, hdr map[string]any) string {
		tk := jwt.NewWithClaims(m, c)
		for k, v := range hdr {
			tk.Header[k] = v
		}
		s, err := tk.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	k1 := map[string]any{"kid": "k1"}
	for _, tc := range []struct {
		name string
		tok  string
		want int
	}{
		{"valid RS256 (control)", sign(jwt.SigningMethodRS256, j.key, claims(iss), k1), 101},
		{"HS256 signed with the RSA public key", sign(jwt.SigningMethodHS256, j.pemPK, claims(iss), k1), 401},
		{"HS256 signed with the raw modulus", sign(jwt.SigningMethodHS256, j.key.N.Bytes(), claims(iss), k1), 401},
		{"forged kid, attacker key", sign(jwt.SigningMethodRS256, attacker, claims(iss), map[string]any{"kid": "evil"}), 401},
		{"right kid, attacker key", sign(jwt.SigningMethodRS256, attacker, claims(iss), k1), 401},
		{"ES256 under an RSA kid", sign(jwt.SigningMethodES256, ec, claims(iss), k1), 401},
		{"PS256 under an RS256 kid", sign(jwt.SigningMethodPS256, j.key, claims(iss), k1), 401},
		{"path-like kid", sign(jwt.SigningMethodRS256, attacker, claims(iss), map[string]any{"kid": "../../../../dev/null"}), 401},
		{"jku to an attacker set", sign(jwt.SigningMethodRS256, attacker, claims(iss), map[string]any{"kid": "k1", "jku": evil.URL}), 401},
		{"alg none", noneToken("alice"), 401},
		{"valid key, other issuer", sign(jwt.SigningMethodRS256, j.key, claims("https://evil.test"), k1), 401},
		{"no issuer", sign(jwt.SigningMethodRS256, j.key, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()}, k1), 401},
	} {
		ws, resp, body, err := rawDial(g.Addr, "/ws", bearer(tc.tok))
		if err != nil {
			t.Fatal(err)
		}
		if ws != nil {
			ws.Close()
		}
		if resp.StatusCode != tc.want {
			t.Errorf("%s: HTTP %d %s, want %d", tc.name, resp.StatusCode, body, tc.want)
		}
	}
	if evilHits.Load() != 0 {
		t.Errorf("e2e: the gateway fetched a jku URL from a token")
	}
	// A forged kid under a foreign issuer must not make the gateway fetch
	// the JWKS (an attacker could otherwise make it hammer the IdP).
	before := j.hits.Load()
	for i := range 5 {
		tok := sign(jwt.SigningMethodRS256, attacker, claims("https://evil.test"), map[string]any{"kid": fmt.Sprintf("forged-%d", i)})
		ws, resp, _, err := rawDial(g.Addr, "/ws", bearer(tok))
		if err != nil {
			t.Fatal(err)
		}
		if ws != nil {
			ws.Close()
		}
		if resp.StatusCode != 401 {
			t.Errorf("forged kid, foreign issuer: %d", resp.StatusCode)
		}
	}
	if after := j.hits.Load(); after != before {
		t.Errorf("e2e: tokens of a foreign issuer made the gateway fetch the JWKS %d times", after-before)
	}
}

// TestConnsPerMemberCap: one player member cannot hold more than
// --max-conns-per-member connections; a closed one frees its slot. (The
// per-IP cap exempts loopback, so it cannot be seen from these tests.)
func TestConnsPerMemberCap(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	help, _ := execHelp()
	if !strings.Contains(help, "-max-conns-per-member") {
		t.Fatal("e2e: the gateway has no --max-conns-per-member flag")
	}
	e := startEnv(t)
	g := startGateway(t, gwOpts{RedisURL: e.Redis.URL(), NATSURL: e.NATS.URL(), Args: []string{"--max-conns-per-member", "3"}})
	tok := token(t, auth.Claims{Sub: "greedy"})
	var open []*rawWS
	defer func() {
		for _, w := range open {
			w.Close()
		}
	}()
	for i := range 4 {
		ws, resp, body, err := rawDial(g.Addr, "/ws", bearer(tok))
		if err != nil {
			t.Fatal(err)
		}
		if ws != nil {
			open = append(open, ws)
		}
		if want := 101; i == 3 {
			if resp.StatusCode != 429 || !strings.Contains(string(body), "rate_limited") {
				t.Errorf("connection 4 of a member capped at 3: %d %s, want 429 rate_limited", resp.StatusCode, body)
			}
		} else if resp.StatusCode != want {
			t.Errorf("connection %d: %d %s", i+1, resp.StatusCode, body)
		}
	}
	open[0].Close()
	open = open[1:]
	testenv.Eventually(t, 5*time.Second, "the freed slot", func() error {
		ws, resp, _, err := rawDial(g.Addr, "/ws", bearer(tok))
		if err != nil {
			return err
		}
		if ws == nil {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		open = append(open, ws)
		return nil
	})
}
