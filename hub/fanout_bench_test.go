package hub

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
)

// BenchmarkFrameWrite is the socket end of a live frame: a 1 KB top frame
// written to one connection over loopback as the hub writes frames
// (rawframe.go: header and payload in one write(2), under the write
// deadline), alone ("one") and as a corked batch of 4 ("corked"); a plain
// TCP reader drains the socket.
func BenchmarkFrameWrite(b *testing.B) {
	frame := bytes.Repeat([]byte("x"), 1024)
	for _, batch := range []int{1, 4} {
		name := "one"
		if batch > 1 {
			name = "corked"
		}
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				io.Copy(io.Discard, c)
			}()
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			pool := &sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}
			cc := &corkConn{Conn: nc, timeout: 5 * time.Second, pool: pool, closed: make(chan struct{})}
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				if batch > 1 {
					cc.cork()
				}
				for range batch {
					if err := cc.writeText(frame); err != nil {
						b.Fatal(err)
					}
				}
				if batch > 1 {
					if err := cc.uncork(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			nc.Close()
			<-drained
		})
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
		if ack.Seq != last+1 {
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
