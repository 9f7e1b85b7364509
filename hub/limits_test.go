package hub

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// held is how many slots key holds.
func (r *registry) held(kind slotKind, key string) int {
	s := r.keyShard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slots[kind][key]
}

// expectCapRefusal checks a refused upgrade: 429, rate_limited JSON, Retry-After.
func expectCapRefusal(t *testing.T, resp *http.Response, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("upgrade accepted past the cap")
	}
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("refusal: %v, response %v; want 429", err, resp)
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" {
		t.Fatal("429 without Retry-After")
	}
	var body proto.ErrorBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("429 body: %v", err)
	}
	if body.Error.Code != proto.CodeRateLimited || body.Error.Message == "" {
		t.Fatalf("429 body %+v, want code rate_limited with a message", body)
	}
}

// xff dials as if through a trusted proxy on loopback for client ip.
func xff(ip string) dialOptions {
	return dialOptions{header: http.Header{"X-Forwarded-For": {ip}}}
}

func TestConnCapPerIP(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{cfg: func(c *Config) {
		c.MaxConnsPerIP = 2
		c.MaxConnsPerMember = -1
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}})
	tok := in.token(t, "bot", auth.Server)

	a, _, err := g.dialErr(tok, xff("203.0.113.7"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.dialErr(tok, xff("198.51.100.1, 203.0.113.7")); err != nil {
		t.Fatal(err) // the left hop is the client's own claim: still 203.0.113.7
	}
	_, resp, err := g.dialErr(tok, xff("203.0.113.7"))
	expectCapRefusal(t, resp, err)
	if got := counterValue(g.metrics.refusedCap); got != 1 {
		t.Fatalf("refused counter = %v, want 1", got)
	}
	// Another address has its own slots; a token is not even looked at
	// before the address cap (a bad one still gets 429).
	if _, _, err := g.dialErr(tok, xff("203.0.113.8")); err != nil {
		t.Fatal(err)
	}
	_, resp, err = g.dialErr("not-a-token", xff("203.0.113.7"))
	expectCapRefusal(t, resp, err)

	// A connection that ends frees its slot.
	a.ws.Close(websocket.StatusNormalClosure, "")
	testenv.Until(t, 5*time.Second, "the slot to free", func() bool { return g.hub.reg.held(slotIP, "203.0.113.7") == 1 })
	if _, _, err := g.dialErr(tok, xff("203.0.113.7")); err != nil {
		t.Fatalf("dial after a slot freed: %v", err)
	}
	// A refused or failed upgrade holds nothing.
	if _, resp, err := g.dialErr("not-a-token", xff("192.0.2.50")); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad token: %v %v, want 401", err, resp)
	}
	if n := g.hub.reg.held(slotIP, "192.0.2.50"); n != 0 {
		t.Fatalf("a 401 left %d slots held", n)
	}
}

// TestConnCapPerIPUsesPeer: without a trusted proxy the TCP peer is the
// client, whatever X-Forwarded-For claims. The refusal happens before the
// upgrade, so a recorder stands in for the socket.
func TestConnCapPerIPUsesPeer(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{cfg: func(c *Config) {
		c.MaxConnsPerIP = 1
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	}})
	if !g.hub.reg.acquire(slotIP, "198.51.100.1", 1) { // an open connection of that peer
		t.Fatal("acquire")
	}
	serve := func(peer, forwarded string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/ws", nil)
		r.RemoteAddr = peer
		if forwarded != "" {
			r.Header.Set("X-Forwarded-For", forwarded)
		}
		w := httptest.NewRecorder()
		g.hub.ServeHTTP(w, r)
		return w
	}
	for _, tc := range []struct {
		peer, forwarded string
		want            int
	}{
		{"198.51.100.1:4000", "", http.StatusTooManyRequests},
		{"198.51.100.1:4001", "192.0.2.9", http.StatusTooManyRequests}, // forged: the peer is not trusted
		{"198.51.100.2:4000", "198.51.100.1", http.StatusUnauthorized}, // forged the other way
		{"10.1.2.3:4000", "198.51.100.1", http.StatusTooManyRequests},  // a trusted proxy speaks for it
		{"10.1.2.3:4000", "192.0.2.9", http.StatusUnauthorized},
	} {
		w := serve(tc.peer, tc.forwarded)
		if w.Code != tc.want {
			t.Errorf("peer %s XFF %q: %d %s, want %d", tc.peer, tc.forwarded, w.Code, w.Body, tc.want)
		}
		if tc.want == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "" {
			t.Errorf("peer %s: 429 without Retry-After", tc.peer)
		}
	}
	if n := g.hub.reg.held(slotIP, "198.51.100.2"); n != 0 {
		t.Fatalf("a refused upgrade left %d slots", n)
	}
}

func TestClientIP(t *testing.T) {
	t.Parallel()
	h := &Hub{cfg: Config{TrustedProxies: normPrefixes([]netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("::ffff:172.16.0.0/108"), // 4in6 spelling of 172.16.0.0/12
		netip.MustParsePrefix("fd00::/8"),
	})}}
	for _, tc := range []struct {
		name   string
		peer   string
		xff    []string
		wantIP string // "" = unknown
	}{
		{"plain peer", "192.0.2.1:80", nil, "192.0.2.1"},
		{"untrusted peer ignores XFF", "192.0.2.1:80", []string{"198.51.100.7"}, "192.0.2.1"},
		{"trusted peer, one hop", "10.0.0.1:80", []string{"198.51.100.7"}, "198.51.100.7"},
		{"right-most untrusted hop wins", "10.0.0.1:80", []string{"6.6.6.6, 198.51.100.7, 10.9.9.9"}, "198.51.100.7"},
		{"several header lines", "10.0.0.1:80", []string{"6.6.6.6", "198.51.100.7", "172.16.3.4"}, "198.51.100.7"},
		{"every hop trusted: left-most", "10.0.0.1:80", []string{"10.1.1.1, 10.2.2.2"}, "10.1.1.1"},
		{"no XFF: the proxy", "10.0.0.1:80", nil, "10.0.0.1"},
		{"garbage stops at the last trusted hop", "10.0.0.1:80", []string{"198.51.100.7, junk, 10.3.3.3"}, "10.3.3.3"},
		{"hop with port", "10.0.0.1:80", []string{"198.51.100.7:5555"}, "198.51.100.7"},
		{"ipv6 hop with port", "[fd00::1]:80", []string{"[2001:db8::5]:443"}, "2001:db8::5"},
		{"mapped peer", "[::ffff:10.0.0.1]:80", []string{"198.51.100.7"}, "198.51.100.7"},
		{"4in6 prefix trusts v4 peer", "172.16.0.9:80", []string{"198.51.100.7"}, "198.51.100.7"},
		{"unparsable peer", "pipe", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/ws", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			got := h.ClientIP(r)
			if tc.wantIP == "" {
				if got.IsValid() {
					t.Fatalf("ClientIP = %v, want unknown", got)
				}
				return
			}
			if got != netip.MustParseAddr(tc.wantIP) {
				t.Fatalf("ClientIP = %v, want %s", got, tc.wantIP)
			}
		})
	}
}

func TestAddrKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"192.0.2.1":            "192.0.2.1",
		"127.0.0.1":            "", // loopback: not counted
		"::1":                  "",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2::9":      "2001:db8:1:2::/64", // same /64, same key
	} {
		if got := addrKey(netip.MustParseAddr(in)); got != want {
			t.Errorf("addrKey(%s) = %q, want %q", in, got, want)
		}
	}
	if addrKey(netip.Addr{}) != "" {
		t.Error("the zero Addr must not be counted")
	}
}

func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	got, err := ParseTrustedProxies(" 10.0.0.0/8, 192.0.2.7 ,fd00::/8,")
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("fd00::/8")}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0.1/x"} {
		if _, err := ParseTrustedProxies(bad); err == nil {
			t.Errorf("ParseTrustedProxies(%q) accepted", bad)
		}
	}
}

func TestConnCapPerMember(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{cfg: func(c *Config) {
		c.MaxConnsPerMember = 2
		c.PublicRead = true
	}})
	for _, tc := range []struct {
		role   auth.Role
		capped bool
	}{
		{auth.Player, true},
		{auth.Spectator, true},
		{auth.Server, false}, // bots multiplex
		{auth.Admin, false},
	} {
		t.Run(string(tc.role), func(t *testing.T) {
			sub := "m-" + string(tc.role)
			tok := in.token(t, sub, tc.role)
			var first *wsClient
			for i := range 2 {
				c, _, err := g.dialErr(tok, dialOptions{})
				if err != nil {
					t.Fatalf("dial %d: %v", i, err)
				}
				first = c
			}
			_, resp, err := g.dialErr(tok, dialOptions{})
			if !tc.capped {
				if err != nil {
					t.Fatalf("%s must not be capped per member: %v", tc.role, err)
				}
				return
			}
			expectCapRefusal(t, resp, err)
			// Another member of the same role is not affected.
			if _, _, err := g.dialErr(in.token(t, sub+"-2", tc.role), dialOptions{}); err != nil {
				t.Fatal(err)
			}
			first.ws.Close(websocket.StatusNormalClosure, "")
			testenv.Until(t, 5*time.Second, "the member slot to free", func() bool { return g.hub.reg.held(slotMember, sub) == 1 })
			if _, _, err := g.dialErr(tok, dialOptions{}); err != nil {
				t.Fatalf("dial after a slot freed: %v", err)
			}
		})
	}
	// Anonymous spectators have random member ids: not capped per member.
	for i := range 3 {
		if _, _, err := g.dialErr("", dialOptions{}); err != nil {
			t.Fatalf("anonymous dial %d: %v", i, err)
		}
	}
}

func TestConnCapDefaults(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{})
	if g.hub.cfg.MaxConnsPerIP != DefaultMaxConnsPerIP || g.hub.cfg.MaxConnsPerMember != DefaultMaxConnsPerMember {
		t.Fatalf("defaults %d/%d", g.hub.cfg.MaxConnsPerIP, g.hub.cfg.MaxConnsPerMember)
	}
	// Negative: no cap.
	u := in.gateway(t, gwOptions{node: "n2", cfg: func(c *Config) { c.MaxConnsPerMember = -1 }})
	tok := in.token(t, "many", auth.Player)
	for i := range DefaultMaxConnsPerMember + 1 {
		if _, _, err := u.dialErr(tok, dialOptions{}); err != nil {
			t.Fatalf("dial %d with no cap: %v", i, err)
		}
	}
}

func TestExpiryMillis(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		exp  time.Time
		want int64
	}{
		{time.UnixMilli(1_700_000_000_123), 1_700_000_000_123},
		{time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), 10413792000000}, // past int64 ns
		{time.Unix(1<<62, 0), maxExpiryMillis},
	} {
		if got := expiryMillis(tc.exp); got != tc.want {
			t.Errorf("expiryMillis(%v) = %d, want %d", tc.exp, got, tc.want)
		}
	}
}

func TestExposureWarning(t *testing.T) {
	t.Parallel()
	proxies, _ := ParseTrustedProxies("10.0.0.1")
	for _, tc := range []struct {
		addr  string
		cfg   Config
		warns bool
	}{
		{":8080", Config{}, true},
		{"0.0.0.0:8080", Config{}, true},
		{"[::]:8080", Config{}, true},
		{"192.0.2.10:8080", Config{}, true},
		{"127.0.0.1:8080", Config{}, false},
		{"[::1]:8080", Config{}, false},
		{"localhost:8080", Config{}, false},
		{":8080", Config{TrustedProxies: proxies}, false},
		{":8080", Config{MaxConnsPerIP: -1}, false},
	} {
		h := &Hub{cfg: tc.cfg}
		if got := h.ExposureWarning(tc.addr); (got != "") != tc.warns {
			t.Errorf("ExposureWarning(%q, %+v) = %q, want a warning: %v", tc.addr, tc.cfg, got, tc.warns)
		}
	}
}
