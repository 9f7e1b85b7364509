package hub_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// TestPanicEndsOneConnection: a panic in one connection's handling (its
// reader handling a request, or writing its reply in the writer's place;
// a writer goroutine writing a batch, here the token_expired that a 2 s
// token ends in) closes that connection with 1011 and nothing else:
// another connection keeps its frames, new connections are accepted, and
// the panic is counted and its stack logged once.
func TestPanicEndsOneConnection(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"handle", "direct", "write"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			in := newInfra(t, memoryKind)
			logs := &testenv.LogBuffer{}
			g := in.gateway(t, gwOptions{log: logs})
			g.board("b", nil)
			var armed atomic.Bool
			g.Hub.InjectPanic(func(w, member string) {
				if w == where && member == "victim" && armed.Load() {
					panic("injected for the test")
				}
			})
			watcher := g.dial(in.token(t, "watcher", auth.Spectator))
			watcher.expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "b", "top": 10})
			srv := g.dial(in.token(t, "srv", auth.Server))
			victim := g.dial(in.tokenTTL(t, "victim", auth.Player, 2*time.Second))
			armed.Store(true)

			if where != "write" {
				victim.send(proto.TypePage, victim.id(), map[string]any{"board": "b", "offset": 0, "limit": 10})
			}
			if code := victim.closeStatus(10 * time.Second); code != websocket.StatusInternalError {
				t.Fatalf("the panicking connection closed with %d, want 1011", code)
			}

			srv.score("b", "after", 7)
			for {
				m, ok := watcher.nextFrame(proto.TypeTop, 10*time.Second)
				if !ok {
					t.Fatal("the other connection got no frame after the panic")
				}
				if strings.Contains(m.String(), `"after"`) {
					break
				}
			}
			late := g.dial(in.token(t, "late", auth.Spectator))
			late.expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "b", "top": 10})

			testenv.Until(t, 5*time.Second, "the panic counted", func() bool {
				return g.metric("wsgateway_ws_panics_total") == 1
			})
			log := logs.String()
			if n := strings.Count(log, "panic serving a connection"); n != 1 {
				t.Errorf("the panic logged %d times, want once:\n%s", n, log)
			}
			if !strings.Contains(log, "injected for the test") || !strings.Contains(log, "hub.(*conn)") {
				t.Errorf("the log line lacks the panic or its stack:\n%s", log)
			}
		})
	}
}

// TestPanicInUpgrade: a panic while upgrading (the token accepted, the
// socket not yet taken) answers 500 internal and the node serves on.
func TestPanicInUpgrade(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{})
	g.Hub.InjectPanic(func(w, member string) {
		if w == "upgrade" && member == "boom" {
			panic("injected for the test")
		}
	})
	_, resp, err := g.dialErr(in.token(t, "boom", auth.Spectator), dialOptions{})
	if err == nil || resp == nil || resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("upgrade that panicked: err %v, response %v; want 500", err, resp)
	}
	var body proto.ErrorBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error.Code != proto.CodeInternal || body.Error.Message != "internal error" {
		t.Errorf("body %+v (%v), want the contract's internal error", body, err)
	}
	g.dial(in.token(t, "fine", auth.Spectator))
	if n := g.metric("wsgateway_ws_panics_total"); n != 1 {
		t.Errorf("panics counted %v, want 1", n)
	}
}

// TestPanicInStart: a panic after the upgrade, before the connection's
// reader runs, closes that connection with 1011 and ends it (it is not
// left registered), and the node serves on.
func TestPanicInStart(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{})
	g.Hub.InjectPanic(func(w, member string) {
		if w == "start" && member == "boom" {
			panic("injected for the test")
		}
	})
	c, _, err := g.dialErr(in.token(t, "boom", auth.Spectator), dialOptions{noWelcome: true})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if code := c.closeStatus(10 * time.Second); code != websocket.StatusInternalError {
		t.Fatalf("closed with %d, want 1011", code)
	}
	testenv.Until(t, 10*time.Second, "the connection ended", func() bool { return g.Hub.Conns() == 0 })
	g.dial(in.token(t, "fine", auth.Spectator))
	if n := g.metric("wsgateway_ws_panics_total"); n != 1 {
		t.Errorf("panics counted %v, want 1", n)
	}
}
