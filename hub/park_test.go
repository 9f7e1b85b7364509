package hub_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// TestIdleSpectatorsPark: an idle spectator waits on the hub's poller with
// no goroutine of its own; its next request wakes it and is answered, it
// parks again, and a parked spectator the gateway closes (here: its token
// expires) still gets its close and leaves the registry.
func TestIdleSpectatorsPark(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{})
	g.board("park", nil)
	const n = 12
	clients := make([]*wsClient, n)
	for i := range clients {
		clients[i] = g.dial(in.token(t, fmt.Sprint("spec", i), auth.Spectator))
		clients[i].expectOK("subscribed", "subscribe", map[string]any{"board": "park", "top": 10})
		for m := clients[i].next(); m.Type != proto.TypeBoard; m = clients[i].next() {
		}
	}
	testenv.Until(t, 10*time.Second, "every idle spectator parked", func() bool { return g.Hub.Parked() == n })

	for round := range 3 {
		clients[3].expectOK("page", "page", map[string]any{"board": "park", "offset": 0, "limit": 5})
		testenv.Until(t, 10*time.Second, fmt.Sprintf("parked again after request %d", round), func() bool { return g.Hub.Parked() == n })
	}

	late := g.dial(in.tokenTTL(t, "late", auth.Spectator, 2*time.Second))
	late.expectOK("subscribed", "subscribe", map[string]any{"board": "park", "top": 10})
	testenv.Until(t, 10*time.Second, "the short-lived spectator parked", func() bool { return g.Hub.Parked() == n+1 })
	if got := late.closeStatus(15 * time.Second); got != websocket.StatusCode(proto.CloseTokenExpired) {
		t.Fatalf("a parked spectator whose token expired closed with %d", got)
	}
	testenv.Until(t, 10*time.Second, "the expired spectator gone", func() bool { return g.Hub.Conns() == n })
}
