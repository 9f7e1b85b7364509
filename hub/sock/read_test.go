package sock

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// observe accounts for the bytes p just read at now; false once the budget
// is spent: reads stop.
func (r *reader) observe(p []byte, now func() time.Time) bool {
	return r.count(r.scan.scan(p), now)
}

// scan consumes p and returns how many frames that do not end a message
// with data it completed the header of.
func (s *frameScanner) scan(p []byte) (n int) {
	for len(p) > 0 {
		k, f := s.scanFrame(p)
		n += f
		p = p[k:]
	}
	return n
}

// frame encodes a client frame: masked, with a payload of n bytes.
func frame(op byte, fin bool, n int) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	b := []byte{b0}
	switch {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n <= 0xFFFF:
		b = append(b, 0x80|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	b = append(b, 1, 2, 3, 4)
	return append(b, make([]byte, n)...)
}

// join is the frames fs one after the other, as a client sends them.
func join(fs ...[]byte) []byte { return slices.Concat(fs...) }

func TestFrameScanner(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		stream []byte
		want   int
	}{
		{"text message", frame(0x1, true, 20), 0},
		{"empty ping", frame(0x9, true, 0), 1},
		{"ping with payload", frame(0x9, true, 125), 1},
		{"pong", frame(0xA, true, 3), 1},
		{"close", frame(0x8, true, 2), 1},
		{"empty text frame", frame(0x1, true, 0), 1},
		{"empty continuation", frame(0x0, false, 0), 1},
		{"fragments with data", join(frame(0x1, false, 5), frame(0x0, false, 7), frame(0x0, true, 1)), 2},
		{"16-bit length", join(frame(0x1, true, 300), frame(0x9, true, 0)), 1},
		{"64-bit length", join(frame(0x1, true, 70000), frame(0x9, true, 0), frame(0x0, true, 0)), 2},
		{"mixed", join(frame(0x9, true, 0), frame(0x1, true, 4), frame(0xA, true, 0), frame(0x0, false, 0)), 3},
	} {
		// Whole, byte by byte, and in chunks of 7: the count is the same.
		for _, chunk := range []int{len(tc.stream), 1, 7} {
			var s frameScanner
			got := 0
			for p := tc.stream; len(p) > 0; {
				k := min(chunk, len(p))
				got += s.scan(p[:k])
				p = p[k:]
			}
			if got != tc.want {
				t.Errorf("%s in chunks of %d: %d frames without a message, want %d", tc.name, chunk, got, tc.want)
			}
			if s.hn != 0 || s.skip != 0 {
				t.Errorf("%s: the scanner stopped mid-frame (hn %d, skip %d)", tc.name, s.hn, s.skip)
			}
		}
	}
}

// FuzzFrameScanner: however a stream is cut, the scanner counts the same
// frames and ends in the same state (it never panics on garbage).
func FuzzFrameScanner(f *testing.F) {
	f.Add(frame(0x9, true, 0), uint16(1))
	f.Add(append(frame(0x1, true, 300), frame(0x0, false, 0)...), uint16(3))
	f.Add(append(frame(0x1, true, 70000), frame(0xA, true, 0)...), uint16(200))
	f.Add([]byte{0xff, 0xff, 0xff}, uint16(2))
	f.Fuzz(func(t *testing.T, stream []byte, cut uint16) {
		var whole, parts frameScanner
		n1 := whole.scan(stream)
		k := int(cut) % (len(stream) + 1)
		n2 := parts.scan(stream[:k]) + parts.scan(stream[k:])
		if n1 != n2 || whole != parts {
			t.Fatalf("cut at %d: %d frames vs %d (%+v vs %+v)", k, n1, n2, whole, parts)
		}
	})
}

func TestFloodGuard(t *testing.T) {
	t.Parallel()
	now := time.Unix(100, 0)
	clock := func() time.Time { return now }
	flooded := 0
	g := reader{onFlood: func() { flooded++ }}
	ping := frame(0x9, true, 0)
	for i := range floodBurst {
		if !g.observe(ping, clock) || flooded != 0 {
			t.Fatalf("ping %d of the burst: flooded %d", i, flooded)
		}
	}
	// A second later the bucket holds floodRate pings again.
	now = now.Add(time.Second)
	for range floodRate {
		g.observe(ping, clock)
	}
	if flooded != 0 {
		t.Fatal("flooded within the refill")
	}
	g.observe(ping, clock)
	if flooded != 1 {
		t.Fatalf("flooded %d times after the budget, want once", flooded)
	}
	// Going on for another burst stops the reads; onFlood is not called again.
	stop := false
	for range floodBurst {
		if !g.observe(ping, clock) {
			stop = true
		}
	}
	if !stop || flooded != 1 {
		t.Fatalf("reads stopped %v, flooded %d", stop, flooded)
	}
	// Messages with data never count.
	var q reader
	q.onFlood = func() { t.Fatal("data frames counted") }
	text := frame(0x1, true, 10)
	for range 3 * floodBurst {
		q.observe(text, clock)
	}
}

// TestConnCloseDelivers: a socket closed while the peer's bytes lie
// unread (a flood the guard stopped reading) still delivers everything
// written before the close, then EOF; a plain close sends RST instead and
// drops what was still queued, the close frame among it.
func TestConnCloseDelivers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	sc, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	cc := New(sc, nil, 5*time.Second, testPool())

	// Bytes the server never reads, then more written to the client than
	// the socket buffers hold at once: some is still queued at Close.
	if _, err := client.Write(make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	wrote := make(chan error, 1)
	go func() {
		_, err := cc.Write(want)
		if err == nil {
			err = cc.Close()
		}
		wrote <- err
	}()
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(client)
	if err != nil {
		t.Fatalf("read %d of %d bytes: %v", len(got), len(want), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want the %d written", len(got), len(want))
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
}

// TestReadHandsOneFrame: a read hands on at most the rest of the frame in
// progress, so the library's buffer never holds a byte of the next frame;
// the read buffer is borrowed while bytes wait in it and given back once
// they are read.
func TestReadHandsOneFrame(t *testing.T) {
	t.Parallel()
	server, client := tcpPair(t)
	cc := newTCP(t, server, 5*time.Second)
	a, b := frame(0x1, true, 10), frame(0x9, true, 0)
	if _, err := client.Write(append(append([]byte{}, a...), b...)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var got []byte
	for len(got) < len(a) {
		n, err := cc.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, a) {
		t.Fatalf("first reads gave %x, want the first frame %x alone", got, a)
	}
	if cc.in.buf == nil {
		t.Fatal("the second frame's bytes are not held")
	}
	n, err := cc.Read(buf)
	if err != nil || !bytes.Equal(buf[:n], b) {
		t.Fatalf("next read %x %v, want the second frame %x", buf[:n], err, b)
	}
	if cc.in.buf != nil {
		t.Fatal("the read buffer is kept with nothing in it")
	}
}

// TestNextMessageWaitsOutsideTheLibrary: between messages, even after the
// library answered a ping (NextMessage's ErrIdle), the hub's reader waits
// in the Conn (Wait) with no frame of the library on its stack (a
// goroutine's stack keeps the size of its deepest call), and holds no
// read buffer.
func TestNextMessageWaitsOutsideTheLibrary(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan string, 1)
	conns := make(chan *Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, cc, err := Accept(w, r, websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled}, 5*time.Second, testPool())
		if err != nil {
			t.Error(err)
			return
		}
		defer ws.CloseNow()
		conns <- cc
		for cc.Fill() == nil {
			_, rd, err := cc.NextMessage(ws)
			if errors.Is(err, ErrIdle) {
				continue
			}
			if err != nil {
				return
			}
			b, _ := io.ReadAll(rd)
			got <- string(b)
		}
	}))
	defer srv.Close()
	c, _, err := websocket.Dial(ctx, "ws"+srv.URL[len("http"):], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	go c.Read(ctx) // reads the pong for Ping
	cc := <-conns
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	waiting := func() bool {
		buf := make([]byte, 1<<20)
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "sock.TestNextMessageWaitsOutsideTheLibrary.func1") {
				return strings.Contains(g, "sock.(*Conn).Fill") && !strings.Contains(g, "coder/websocket")
			}
		}
		return false
	}
	for !waiting() {
		if ctx.Err() != nil {
			t.Fatal("the reader does not wait outside the library after a ping")
		}
		time.Sleep(time.Millisecond)
	}
	if n := cc.bufs.ReadsLent(); n != 0 {
		t.Fatalf("%d read buffers held between messages", n)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte("after the ping")); err != nil {
		t.Fatal(err)
	}
	if m := <-got; m != "after the ping" {
		t.Fatalf("message %q", m)
	}
}
