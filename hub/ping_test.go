package hub

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
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
	g := in.gateway(t, gwOptions{cfg: func(c *Config) {
		c.PingInterval = 50 * time.Millisecond
		c.WriteTimeout = 300 * time.Millisecond
	}})
	dial := func(sub string, onPing func()) *websocket.Conn {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, g.url, &websocket.DialOptions{
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
	testenv.Until(t, 5*time.Second, "two connections", func() bool { return g.hub.Conns() == 2 })

	testenv.Until(t, 5*time.Second, "the silent peer closed for not answering pings", func() bool { return g.hub.Conns() == 1 })
	// The answering peer was pinged all along and is still served.
	before := pings.Load()
	testenv.Until(t, 5*time.Second, "ten more pings to the answering peer", func() bool { return pings.Load() >= before+10 })
	if n := g.hub.Conns(); n != 1 {
		t.Errorf("%d connections after the pings; want the answering peer's only", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := alive.Ping(ctx); err != nil {
		t.Errorf("the answering peer's connection: %v", err)
	}
}
