package client_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/proto"
)

// echoAcks is an in-process server answering each score with an ack of the
// gateway's shape, at as little cost as it can: the benchmark then measures
// the client's own work per call (and the WebSocket framing both sides
// share), not a store's.
func echoAcks(b *testing.B) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{proto.Subprotocol}})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		ctx := r.Context()
		if conn.Write(ctx, websocket.MessageText, []byte(`{"type":"welcome","member":"bench","role":"server","node":"echo","server_time":1,"exp":0,"limits":{}}`)) != nil {
			return
		}
		var in bytes.Buffer
		var out []byte
		var seq int64
		for {
			_, rd, err := conn.Reader(ctx)
			if err != nil {
				return
			}
			in.Reset()
			if _, err := in.ReadFrom(rd); err != nil {
				return
			}
			id := field(in.Bytes(), `"id":"`)
			seq++
			ack := proto.Ack{Type: proto.TypeAck, ID: string(id), Board: "bench", Member: "m1", Score: 42, Rank: 7, Seq: seq}
			out = proto.AppendAck(out[:0], &ack)
			if conn.Write(ctx, websocket.MessageText, out) != nil {
				return
			}
		}
	}))
	b.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
}

// field is the string value after key (no escapes in the benchmark's ids).
func field(b []byte, key string) []byte {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return nil
	}
	b = b[i+len(key):]
	if j := bytes.IndexByte(b, '"'); j >= 0 {
		return b[:j]
	}
	return nil
}

// BenchmarkScore is the cost of one Score call, as `wsgateway load` makes
// them: one caller, and 16 callers sharing a connection (the bench's
// --inflight 16). ns/op, cpu-ns/op (the process's user and system CPU,
// which unlike ns/op does not count waiting) and allocs/op include the
// echo server's share, which is the same before and after a change to the
// client.
func BenchmarkScore(b *testing.B) {
	for _, callers := range []int{1, 16} {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			url := echoAcks(b)
			ctx := context.Background()
			c, err := client.Dial(ctx, url, "", &client.Options{MaxPending: callers})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			delta := int64(3)
			var wg sync.WaitGroup
			per := b.N / callers
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for k := range callers {
				n := per
				if k == 0 {
					n += b.N % callers
				}
				wg.Go(func() {
					for range n {
						if _, err := c.Score(ctx, client.ScoreReq{Board: "bench", Member: "m1", Delta: &delta}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the user and system CPU this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
