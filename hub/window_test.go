package hub_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// redisGateway is a gateway on its own Redis engine; its store timeout
// (the harness's 10s) lets a paused Redis hold events in flight without
// failing them.
func redisGateway(t *testing.T) (*infra, *gateway) {
	t.Helper()
	in := newInfra(t, redisKind)
	return in, in.gateway(t, gwOptions{})
}

// pauseRedis freezes redis-server (SIGSTOP: its connections stay open,
// nothing is answered) until the returned function thaws it. A pause that
// ended by itself after a fixed time (CLIENT PAUSE) could end, on a loaded
// machine, before the test saw what the pause is for.
func pauseRedis(t *testing.T, in *infra) (resume func()) {
	t.Helper()
	in.redis.Pause()
	var once sync.Once
	resume = func() { once.Do(in.redis.Resume) }
	t.Cleanup(resume)
	return resume
}

// maxWindow samples every connection's window until stop and returns the
// largest number of replies in flight seen.
func maxWindow(g *gateway, stop <-chan struct{}) <-chan int {
	out := make(chan int, 1)
	go func() {
		most := 0
		for {
			for _, n := range g.Hub.InFlight() {
				most = max(most, n)
			}
			select {
			case <-stop:
				out <- most
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return out
}

// Pipelined scores from several connections, with page and rank requests
// interleaved: every reply comes in request order, each connection's events
// are applied in its order (cumulative scores, strictly increasing seqs), and
// a read sees the connection's own earlier scores.
func TestPipelinedScoresInOrder(t *testing.T) {
	t.Parallel()
	in, g := redisGateway(t)
	g.board("pipe", nil)
	const conns, n = 4, 240
	clients := make([]*wsClient, conns)
	for i := range clients {
		clients[i] = g.dial(in.token(t, fmt.Sprintf("srv%d", i), auth.Server))
	}
	stop := make(chan struct{})
	most := maxWindow(g, stop)
	var wg sync.WaitGroup
	for ci, c := range clients {
		wg.Go(func() {
			member := fmt.Sprintf("m%d", ci)
			for i := range n {
				id := fmt.Sprintf("%sp%d", c.prefix, i)
				switch {
				case i%40 == 39:
					c.send(proto.TypeRank, id, map[string]any{"board": "pipe", "member": member})
				case i%40 == 19:
					c.send(proto.TypePage, id, map[string]any{"board": "pipe", "limit": 10})
				default:
					c.send(proto.TypeScore, id, map[string]any{"board": "pipe", "member": member, "delta": i%7 + 1})
				}
			}
		})
	}
	wg.Wait()
	for ci, c := range clients {
		var sum, seq int64
		for i := range n {
			m := c.next()
			if m.ID != fmt.Sprintf("%sp%d", c.prefix, i) || m.Type == proto.TypeError {
				t.Fatalf("conn %d reply %d: %s, want the reply to p%d", ci, i, m, i)
			}
			switch {
			case i%40 == 39:
				r := as[proto.RankReply](t, m)
				if r.Score == nil || *r.Score != sum {
					t.Fatalf("conn %d: rank after %d of its scores: %s, want score %d", ci, i, m, sum)
				}
			case i%40 == 19:
			default:
				a := as[proto.Ack](t, m)
				sum += int64(i%7 + 1)
				if a.Score != sum || a.Seq <= seq {
					t.Fatalf("conn %d ack %d: %s, want score %d and seq > %d", ci, i, m, sum, seq)
				}
				seq = a.Seq
			}
		}
	}
	close(stop)
	t.Logf("largest window seen: %d", <-most)
}

// A full window stops the reader: while Redis is paused, a connection that
// sent many scores has exactly hub.MaxInFlight in flight, never more; they are
// all answered, in order, once Redis is back.
func TestWindowBackpressure(t *testing.T) {
	t.Parallel()
	in, g := redisGateway(t)
	g.board("bp", nil)
	c := g.dial(in.token(t, "srv", auth.Server))
	c.score("bp", "x", 1) // the board's config is cached
	const n = 3 * hub.MaxInFlight
	stop := make(chan struct{})
	most := maxWindow(g, stop)
	unpause := pauseRedis(t, in)
	for i := range n {
		c.send(proto.TypeScore, fmt.Sprintf("b%d", i), map[string]any{"board": "bp", "member": "x", "delta": 1})
	}
	testenv.Until(t, 5*time.Second, "the window to fill", func() bool {
		for _, n := range g.Hub.InFlight() {
			if n == hub.MaxInFlight {
				return true
			}
		}
		return false
	})
	unpause()
	var seq int64
	for i := range n {
		m := c.next()
		a := as[proto.Ack](t, m)
		if m.ID != fmt.Sprintf("b%d", i) || a.Score != int64(i+2) || a.Seq <= seq {
			t.Fatalf("reply %d: %s, want the ack of b%d with score %d", i, m, i, i+2)
		}
		seq = a.Seq
	}
	close(stop)
	if got := <-most; got != hub.MaxInFlight {
		t.Fatalf("largest window %d, want %d", got, hub.MaxInFlight)
	}
}

// R14 with full windows: every score read is applied and acknowledged, in
// order, before the close with 1001; nothing is applied without its ack.
func TestDrainFullWindow(t *testing.T) {
	t.Parallel()
	in, g := redisGateway(t)
	g.board("dw", nil)
	const conns, n = 3, 3 * hub.MaxInFlight
	clients := make([]*wsClient, conns)
	for i := range clients {
		clients[i] = g.dial(in.token(t, fmt.Sprintf("srv%d", i), auth.Server))
		clients[i].score("dw", fmt.Sprintf("warm%d", i), 1)
	}
	unpause := pauseRedis(t, in)
	for ci, c := range clients {
		for i := range n {
			c.send(proto.TypeScore, fmt.Sprintf("%sd%d", c.prefix, i), map[string]any{"board": "dw", "member": fmt.Sprintf("m%d", ci), "delta": 1})
		}
	}
	testenv.Until(t, 5*time.Second, "every window to fill", func() bool {
		full := 0
		for _, n := range g.Hub.InFlight() {
			if n == hub.MaxInFlight {
				full++
			}
		}
		return full == conns
	})
	done := g.startShutdown(15 * time.Second)
	unpause()
	acked := int64(conns) // the warm-up scores
	for ci, c := range clients {
		got := c.readUntilGoingAway(func(i int, m msg) {
			a := as[proto.Ack](t, m)
			if m.ID != fmt.Sprintf("%sd%d", c.prefix, i) || a.Score != int64(i+1) {
				t.Fatalf("conn %d: %s, want the ack of d%d with score %d", ci, m, i, i+1)
			}
		})
		if got < hub.MaxInFlight {
			t.Fatalf("conn %d: %d acks, want at least the %d in flight", ci, got, hub.MaxInFlight)
		}
		acked += int64(got)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if p := g.top("dw", 10); sumScores(p) != acked {
		t.Fatalf("board sum %d, acks %d: an event was applied without its ack", sumScores(p), acked)
	}
}
