package hub_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// TestDrainHints (§15, R14): on Shutdown every connection is told at once
// when to reconnect, the times spread evenly over the first half of the
// drain; it is served until then and closed with 1001 no earlier. A
// subscriber keeps getting frames while it waits.
func TestDrainHints(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{})
	g.board("dh", nil)
	const n = 20
	type seen struct {
		after      time.Duration // reconnect_after_ms
		hintAt     time.Time
		closedAt   time.Time
		code       websocket.StatusCode
		frameAfter bool // a top frame arrived between the hint and the close
	}
	clients := make([]*wsClient, n)
	for i := range clients {
		clients[i] = g.dial(in.token(t, fmt.Sprintf("s%d", i), auth.Spectator))
		clients[i].expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "dh", "top": 3})
	}
	const drain = 4 * time.Second
	start := time.Now()
	done := g.startShutdown(drain)
	results := make(chan seen, n)
	for _, c := range clients {
		go func() {
			var s seen
			for {
				m, err := c.read(drain)
				if err != nil {
					s.closedAt, s.code = time.Now(), websocket.CloseStatus(err)
					results <- s
					return
				}
				switch m.Type {
				case proto.TypeDraining:
					if !s.hintAt.IsZero() {
						s.code = -2 // two hints
					}
					s.hintAt = time.Now()
					var d proto.Draining
					if json.Unmarshal(m.raw, &d) != nil {
						s.code = -3
					}
					s.after = time.Duration(d.ReconnectAfterMS) * time.Millisecond
				case proto.TypeTop:
					s.frameAfter = s.frameAfter || !s.hintAt.IsZero()
				}
			}
		}()
	}
	// Scores keep coming while the connections wait for their turn. They go
	// to the node's store, not through a connection: a scorer connection
	// would be drained in its turn too, maybe first, and leave nothing to
	// show.
	go func() {
		for i := 0; time.Since(start) < drain; i++ {
			g.Store.Apply(t.Context(), rank.Event{Board: "dh", ID: fmt.Sprintf("e%d", i), Member: "m",
				Op: rank.OpDelta, Amount: 1}, func(rank.Result, error) {})
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var all []seen
	for range n {
		all = append(all, <-results)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// The node counts each connection's time from when it began, which no
	// client sees; the first close (reconnect_after 0) comes right after.
	first := all[0]
	for _, s := range all {
		if s.after < first.after {
			first = s
		}
	}
	var afters []time.Duration
	frames := 0
	for i, s := range all {
		switch {
		case s.code == -2:
			t.Fatalf("client %d got two hints", i)
		case s.code == -3:
			t.Fatalf("client %d got a malformed hint", i)
		case s.hintAt.IsZero():
			t.Fatalf("client %d was closed (%d) without a hint", i, s.code)
		case s.code != websocket.StatusGoingAway:
			t.Fatalf("client %d was closed with %d, want 1001", i, s.code)
		case s.closedAt.Sub(first.closedAt) < s.after-100*time.Millisecond:
			t.Fatalf("client %d was closed %s after the first, before its reconnect_after %s", i, s.closedAt.Sub(first.closedAt), s.after)
		}
		afters = append(afters, s.after)
		if s.frameAfter {
			frames++
		}
	}
	slices.Sort(afters)
	// The shutdown began after its 503 was seen; its window is half of what
	// its context left: within (drain - that wait) / 2 and drain / 2.
	window := drain / 2
	step := afters[1] - afters[0]
	if afters[0] != 0 || afters[n-1] >= window || step < window/n*3/4 {
		t.Fatalf("reconnect_after %v: want 0, then even steps of about %s, all below %s", afters, window/n, window)
	}
	for i := 1; i < n; i++ {
		if d := afters[i] - afters[i-1]; d < step-time.Millisecond || d > step+time.Millisecond {
			t.Fatalf("reconnect_after %v: uneven step %s at %d (first %s)", afters, d, i, step)
		}
	}
	if frames == 0 {
		t.Fatal("no subscriber got a frame between its hint and its close: the node stopped serving at the hint")
	}
}
