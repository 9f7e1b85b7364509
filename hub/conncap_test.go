package hub_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// The connection caps over real sockets, in a node (the unit tests of the
// pieces are in limits_test.go).

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
	g := in.gateway(t, gwOptions{cfg: func(c *hub.Config) {
		c.MaxConnsPerIP = 2
		c.MaxConnsPerMember = -1
	}, proxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
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
	if got := g.metric("wsgateway_upgrades_refused_total"); got != 1 {
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
	testenv.Until(t, 5*time.Second, "the slot to free", func() bool { return g.Hub.HeldSlots(hub.SlotIP, "203.0.113.7") == 1 })
	if _, _, err := g.dialErr(tok, xff("203.0.113.7")); err != nil {
		t.Fatalf("dial after a slot freed: %v", err)
	}
	// A refused or failed upgrade holds nothing.
	if _, resp, err := g.dialErr("not-a-token", xff("192.0.2.50")); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad token: %v %v, want 401", err, resp)
	}
	if n := g.Hub.HeldSlots(hub.SlotIP, "192.0.2.50"); n != 0 {
		t.Fatalf("a 401 left %d slots held", n)
	}
}

// TestConnCapPerIPUsesPeer: without a trusted proxy the TCP peer is the
// client, whatever X-Forwarded-For claims. The refusal happens before the
// upgrade, so a recorder stands in for the socket.
func TestConnCapPerIPUsesPeer(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{cfg: func(c *hub.Config) { c.MaxConnsPerIP = 1 },
		proxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	if !g.Hub.AcquireSlot(hub.SlotIP, "198.51.100.1", 1) { // an open connection of that peer
		t.Fatal("acquire")
	}
	serve := func(peer, forwarded string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/ws", nil)
		r.RemoteAddr = peer
		if forwarded != "" {
			r.Header.Set("X-Forwarded-For", forwarded)
		}
		w := httptest.NewRecorder()
		g.Hub.ServeHTTP(w, r)
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
	if n := g.Hub.HeldSlots(hub.SlotIP, "198.51.100.2"); n != 0 {
		t.Fatalf("a refused upgrade left %d slots", n)
	}
}

func TestConnCapPerMember(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{cfg: func(c *hub.Config) {
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
			testenv.Until(t, 5*time.Second, "the member slot to free", func() bool { return g.Hub.HeldSlots(hub.SlotMember, sub) == 1 })
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
	if perIP, perMember := g.Hub.ConnCaps(); perIP != hub.DefaultMaxConnsPerIP || perMember != hub.DefaultMaxConnsPerMember {
		t.Fatalf("defaults %d/%d", perIP, perMember)
	}
	// Negative: no cap.
	u := in.gateway(t, gwOptions{node: "n2", cfg: func(c *hub.Config) { c.MaxConnsPerMember = -1 }})
	tok := in.token(t, "many", auth.Player)
	for i := range hub.DefaultMaxConnsPerMember + 1 {
		if _, _, err := u.dialErr(tok, dialOptions{}); err != nil {
			t.Fatalf("dial %d with no cap: %v", i, err)
		}
	}
}
