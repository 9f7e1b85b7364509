package hub

import (
	"context"
	"fmt"
	"testing"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
)

func BenchmarkDecode(b *testing.B) {
	msg := []byte(`{"type":"score","id":"c1-r12345","board":"run_hero","member":"alice","delta":42}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode(msg); err != nil {
			b.Fatal(err)
		}
	}
}

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
	ws, _, err := websocket.Dial(ctx, g.url, &websocket.DialOptions{
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
