package sock

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestFloodChunkNotHandedOn: of a flood written at once, the library (the
// reader of the Conn) gets no frame past the budget: the read that
// spends it is not handed on, and reads end when the connection closes.
func TestFloodChunkNotHandedOn(t *testing.T) {
	t.Parallel()
	server, client := net.Pipe()
	defer client.Close()
	cc := New(server, nil, 5*time.Second, testPool())
	flooded := make(chan struct{})
	cc.SetOnFlood(func() { close(flooded) })
	go func() {
		<-flooded
		cc.Close() // what the 1008 close ends in
	}()

	// 48 pings a write: over a pipe, a read gets at most one write's bytes.
	const perWrite = 48
	batch := bytes.Repeat(frame(0x9, true, 0), perWrite)
	go func() {
		for range 4 * floodBurst / perWrite {
			if _, err := client.Write(batch); err != nil {
				return // closed
			}
		}
	}()
	var got bytes.Buffer
	buf := make([]byte, 4096) // net/http's reader size, the library's reads
	start := time.Now()
	var err error
	for err == nil {
		var n int
		n, err = cc.Read(buf)
		got.Write(buf[:n])
	}
	if !errors.Is(err, net.ErrClosed) {
		t.Fatalf("reads ended with %v, want net.ErrClosed", err)
	}
	select {
	case <-flooded:
	default:
		t.Fatal("the flood was not noticed")
	}
	// The budget refills at floodRate while the reads go on (a slow run
	// under -race takes tens of milliseconds).
	budget := floodBurst + int(time.Since(start).Seconds()*floodRate)
	var s frameScanner
	if n := s.scan(got.Bytes()); n > budget || n <= floodBurst-perWrite {
		t.Fatalf("%d pings handed to the library; want the budget, %d, less what the last read held", n, budget)
	}
}

// TestPongDue: due says what allow would, and takes nothing.
func TestPongDue(t *testing.T) {
	t.Parallel()
	now := time.Unix(100, 0)
	var b pongBudget
	if !b.due(now) {
		t.Fatal("a fresh budget has no pong due")
	}
	for i := range pongBurst {
		if !b.due(now) || !b.allow(now) {
			t.Fatalf("pong %d of the burst: not due", i)
		}
	}
	for range 3 { // asking does not spend
		if b.due(now) {
			t.Fatal("due with the burst spent")
		}
	}
	if b.allow(now) {
		t.Fatal("allowed with the burst spent")
	}
	now = now.Add(time.Second / pongRate)
	if !b.due(now) || !b.due(now) || !b.allow(now) {
		t.Fatal("no pong due after a refill")
	}
}

// TestOnPingSkipsPongsOverBudget: the library's OnPingReceived says no to
// the pings whose pongs the budget would drop, so the library writes none.
func TestOnPingSkipsPongsOverBudget(t *testing.T) {
	t.Parallel()
	server, client := net.Pipe()
	defer client.Close()
	defer server.Close()
	go io.Copy(io.Discard, client)
	w := &pinger{c: New(server, nil, 5*time.Second, testPool())}
	yes := 0
	for range 4 * pongBurst {
		if w.onPing(context.Background(), nil) {
			yes++
			if _, err := w.c.Write([]byte{0x8A, 0}); err != nil { // the pong the library writes
				t.Fatal(err)
			}
		}
	}
	// A few may refill while the test runs; never the whole flood.
	if yes < pongBurst || yes > pongBurst+2 {
		t.Fatalf("%d of %d pings answered, want about %d", yes, 4*pongBurst, pongBurst)
	}
	if !(&pinger{}).onPing(context.Background(), nil) {
		t.Fatal("no Conn: the library must answer")
	}
}
