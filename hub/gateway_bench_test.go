package hub_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
)

// Benchmarks of the hub inside a node over real sockets (the benchmarks of
// its pieces are in bench_test.go and fanout_bench_test.go).

// BenchmarkScoreRoundTrip is score → ack on one connection over a real
// socket with the memory engine and with the Redis engine (a real
// redis-server and nats-server), one request in flight and 64 pipelined:
// the hub's per-event cost end to end (decode, checks, Apply, live and bus
// notification, encode, write).
func BenchmarkScoreRoundTrip(b *testing.B) {
	for _, kind := range []string{memoryKind, redisKind} {
		for _, inflight := range []int{1, 64} {
			name := fmt.Sprintf("inflight=%d", inflight)
			if kind == redisKind {
				name = "redis/" + name
			}
			b.Run(name, func(b *testing.B) { benchScoreRoundTrip(b, kind, inflight) })
		}
	}
}

func benchScoreRoundTrip(b *testing.B, kind string, inflight int) {
	in := newInfra(b, kind)
	g := in.gateway(b, gwOptions{})
	g.board("bench", nil)
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, g.URL, &websocket.DialOptions{
		HTTPHeader: map[string][]string{"Authorization": {"Bearer " + in.token(b, "srv", auth.Server)}},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.CloseNow()
	if _, _, err := ws.Read(ctx); err != nil { // welcome
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	sent, got := 0, 0
	for got < b.N {
		for sent < b.N && sent-got < inflight {
			m := fmt.Appendf(nil, `{"type":"score","id":"e%d","board":"bench","member":"m%d","delta":1}`, sent, sent%1000)
			if err := ws.Write(ctx, websocket.MessageText, m); err != nil {
				b.Fatal(err)
			}
			sent++
		}
		if _, _, err := ws.Read(ctx); err != nil {
			b.Fatal(err)
		}
		got++
	}
}

// BenchmarkHubFanout is one top frame through the whole hub to 200
// spectators over real sockets (memory engine, 10 ms interval): a score,
// the board's next scheduled read, the frame encoded once, offered to 200
// outboxes, each connection's writer woken, taking it and writing it. An op
// ends when every spectator has read a frame with the score's seq. The
// spectators' reads run in the same process, so ns/op is an upper bound of
// the gateway's part; compare runs, not absolute figures.
func BenchmarkHubFanout(b *testing.B) {
	const spectators = 200
	in := newInfra(b, memoryKind)
	g := in.gateway(b, gwOptions{interval: 10 * time.Millisecond})
	g.board("fan", nil)
	srv := g.dial(in.token(b, "srv", auth.Server))
	last := srv.score("fan", "m0", 1).Seq
	var behind atomic.Int64 // spectators that have not read the awaited seq
	var want atomic.Int64
	done := make(chan struct{}, 1)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); wg.Wait() }()
	for i := range spectators {
		c := g.dial(in.token(b, fmt.Sprint("spec", i), auth.Spectator))
		c.send(proto.TypeSubscribe, c.id(), map[string]any{"board": "fan", "top": 10})
		for m := c.next(); m.Type != proto.TypeTop; m = c.next() {
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []byte(`"seq":`)
			seen := int64(0)
			for {
				_, f, err := c.ws.Read(ctx)
				if err != nil {
					return
				}
				k := bytes.Index(f, key)
				if k < 0 {
					continue
				}
				rest := f[k+len(key):]
				seq, _ := strconv.ParseInt(string(rest[:max(bytes.IndexAny(rest, ",}"), 0)]), 10, 64)
				if w := want.Load(); seen < w && seq >= w {
					if behind.Add(-1) == 0 {
						done <- struct{}{}
					}
				}
				seen = max(seen, seq)
			}
		}()
	}
	b.ResetTimer()
	for i := range b.N {
		// One writer on the board: the score's seq is the next one, known
		// before it is sent so no spectator can read it first.
		behind.Store(spectators)
		want.Store(last + 1)
		ack := srv.score("fan", fmt.Sprint("m", i%20), int64(1000+i))
		// A schedule transition the store records (§15, the period's start
		// seen first) takes a seq of its own, so a score may skip one.
		if ack.Seq <= last {
			b.Fatalf("seq %d after %d", ack.Seq, last)
		}
		last = ack.Seq
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			b.Fatalf("op %d: %d spectators never read seq %d", i, behind.Load(), last)
		}
	}
	b.StopTimer()
	b.ReportMetric(spectators, "frames/op")
}
