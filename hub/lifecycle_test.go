package hub_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// TestPings: the writer pings every PingInterval, whatever else it is doing.
// A peer that answers (it reads, so its library pongs) stays connected
// across many pings; a peer that stops reading never pongs and is closed
// within PingInterval + WriteTimeout, freeing its slot.
func TestPings(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{cfg: func(c *hub.Config) {
		c.PingInterval = 50 * time.Millisecond
		c.WriteTimeout = time.Second // generous: the answering peer may be slow to be scheduled under -race
	}})
	dial := func(sub string, onPing func()) *websocket.Conn {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, g.URL, &websocket.DialOptions{
			HTTPHeader:   http.Header{"Authorization": {"Bearer " + in.token(t, sub, auth.Spectator)}},
			Subprotocols: []string{proto.Subprotocol},
			OnPingReceived: func(context.Context, []byte) bool {
				onPing()
				return true // answer with a pong
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.CloseNow() })
		return ws
	}

	var pings atomic.Int64
	alive := dial("alive", func() { pings.Add(1) })
	go func() {
		for {
			if _, _, err := alive.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	silent := dial("silent", func() {})
	_ = silent // never read: the library never sees a ping, so never pongs
	testenv.Until(t, 5*time.Second, "two connections", func() bool { return g.Hub.Conns() == 2 })

	testenv.Until(t, 5*time.Second, "the silent peer closed for not answering pings", func() bool { return g.Hub.Conns() == 1 })
	// The answering peer was pinged all along and is still served.
	before := pings.Load()
	testenv.Until(t, 5*time.Second, "ten more pings to the answering peer", func() bool { return pings.Load() >= before+10 })
	if n := g.Hub.Conns(); n != 1 {
		t.Errorf("%d connections after the pings; want the answering peer's only", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := alive.Ping(ctx); err != nil {
		t.Errorf("the answering peer's connection: %v", err)
	}
}

// TestWelcomeFirstForAnExpiringToken: a token whose exp has just passed is
// still accepted within the verifier's leeway, and its connection expires
// at once. The welcome is nevertheless the first frame, then
// token_expired, then close 4001: the expiry timer is armed only once the
// welcome is queued.
func TestWelcomeFirstForAnExpiringToken(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{})
	for i := range 30 {
		tok := in.tokenTTL(t, fmt.Sprintf("late%d", i), auth.Player, -2*time.Second)
		c, _, err := g.dialErr(tok, dialOptions{noWelcome: true})
		if err != nil {
			t.Fatalf("dial %d: %v; a token 2 s past exp is within the leeway", i, err)
		}
		var types []string
		for range 2 {
			m, err := c.read(5 * time.Second)
			if err != nil {
				t.Fatalf("dial %d: after %v: %v", i, types, err)
			}
			types = append(types, m.Type+"/"+m.Code)
		}
		if types[0] != proto.TypeWelcome+"/" || types[1] != proto.TypeError+"/"+proto.CodeTokenExpired {
			t.Fatalf("dial %d: frames %v; want the welcome, then token_expired", i, types)
		}
		if code := c.closeStatus(5 * time.Second); code != proto.CloseTokenExpired {
			t.Fatalf("dial %d: close %d, want 4001", i, code)
		}
	}
}
