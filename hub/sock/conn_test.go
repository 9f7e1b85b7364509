package sock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"syscall"
	"testing"
	"time"
)

// tcpPair is a real loopback TCP connection whose server side has a tiny
// send buffer and whose client side a tiny receive buffer, so that a peer
// that does not read fills them after a few KB.
func tcpPair(t *testing.T) (server *net.TCPConn, client *net.TCPConn) {
	t.Helper()
	// Set before the connection exists: set later, the buffers' sizes do
	// not shrink the window already offered.
	small := func(opt int) func(_, _ string, rc syscall.RawConn) error {
		return func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, opt, 2048)
			})
			return errors.Join(err, serr)
		}
	}
	lc := net.ListenConfig{Control: small(syscall.SO_SNDBUF)}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	d := &net.Dialer{Control: small(syscall.SO_RCVBUF)}
	cc, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sc := <-accepted
	if sc == nil {
		t.Fatal("accept failed")
	}
	server, client = sc.(*net.TCPConn), cc.(*net.TCPConn)
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

func newTCP(t *testing.T, nc *net.TCPConn, timeout time.Duration) *Conn {
	t.Helper()
	cc := New(nc, nil, timeout, NewBuffers())
	if cc.rc == nil {
		t.Fatal("a TCP connection has no RawConn")
	}
	return cc
}

// fillDirect writes numbered frames of about pad bytes directly until the
// socket leaves some owed; it returns the frames written (the last one at
// least partly owed).
func fillDirect(t *testing.T, cc *Conn, pad int) [][]byte {
	t.Helper()
	var frames [][]byte
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatal("the socket never pushed back")
		}
		f := []byte(fmt.Sprintf(`{"type":"top","seq":%d,"pad":"%s"}`, i, bytes.Repeat([]byte("x"), pad)))
		frames = append(frames, f)
		owed := direct(t, cc, f)
		if owed {
			if cc.werr != nil {
				t.Fatalf("direct write: %v", cc.werr)
			}
			if !cc.owes.Load() {
				t.Fatal("bytes owed but owes is not set")
			}
			return frames
		}
	}
}

// readFrames parses n server frames (unmasked, payload < 64 KiB) from r.
func readFrames(t *testing.T, r io.Reader, n int) (ops []byte, payloads [][]byte) {
	t.Helper()
	for range n {
		var h [2]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			t.Fatalf("read header: %v", err)
		}
		size := int(h[1] & 0x7f)
		if size == 126 {
			var ext [2]byte
			if _, err := io.ReadFull(r, ext[:]); err != nil {
				t.Fatal(err)
			}
			size = int(ext[0])<<8 | int(ext[1])
		}
		p := make([]byte, size)
		if _, err := io.ReadFull(r, p); err != nil {
			t.Fatalf("read payload: %v", err)
		}
		ops, payloads = append(ops, h[0]), append(payloads, p)
	}
	return ops, payloads
}

// TestConnOwedFirst: a direct write the socket takes only part of
// leaves the rest owed, and every later write (the library's pong, the
// writer's frame) goes after all of it: the peer reads whole frames, in
// order, nothing inside another.
func TestConnOwedFirst(t *testing.T) {
	t.Parallel()
	server, client := tcpPair(t)
	cc := newTCP(t, server, 5*time.Second)
	frames := fillDirect(t, cc, 300)
	t.Logf("%d frames written directly; %d bytes owed from offset %d", len(frames), len(*cc.owed)-cc.owedOff, cc.owedOff)

	pong := []byte{0x8a, 0x00} // the library's empty pong, in one Write
	after := []byte(`{"type":"top","seq":"after"}`)
	done := make(chan error, 1)
	go func() {
		// Blocks until the peer reads: the owed bytes go first.
		if _, err := cc.Write(pong); err != nil {
			done <- err
			return
		}
		done <- writeText(cc, after)
	}()
	ops, got := readFrames(t, client, len(frames)+2)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if ops[i] != 0x81 || !bytes.Equal(got[i], f) {
			t.Fatalf("frame %d: op %#x %.40q, want the direct frame %.40q", i, ops[i], got[i], f)
		}
	}
	if ops[len(frames)] != 0x8a || len(got[len(frames)]) != 0 {
		t.Fatalf("after the direct frames: op %#x, want the pong", ops[len(frames)])
	}
	if !bytes.Equal(got[len(frames)+1], after) {
		t.Fatalf("last frame %q, want %q", got[len(frames)+1], after)
	}
	if cc.owes.Load() || cc.owed != nil {
		t.Fatal("bytes still owed after they were written")
	}
}

// TestConnOwedFlush: the writer's Flush writes what is owed, and
// the next direct write goes straight to the socket again.
func TestConnOwedFlush(t *testing.T) {
	t.Parallel()
	server, client := tcpPair(t)
	cc := newTCP(t, server, 5*time.Second)
	// Frames larger than the socket's buffers: the first one is written
	// in part (a partial write, not EAGAIN).
	frames := fillDirect(t, cc, 40000)
	if len(frames) != 1 || cc.owedOff == 0 {
		t.Fatalf("%d frames, owed from offset %d: want the first frame written in part", len(frames), cc.owedOff)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- cc.Flush() }()
	_, got := readFrames(t, client, len(frames))
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if !bytes.Equal(got[i], f) {
			t.Fatalf("frame %d: %.40q, want %.40q", i, got[i], f)
		}
	}
	if cc.owes.Load() {
		t.Fatal("bytes still owed after the flush")
	}
	// The socket is drained: a direct write goes through whole again.
	next := []byte(`{"type":"top","seq":"next"}`)
	owed := direct(t, cc, next)
	if owed {
		t.Fatal("a direct write to a drained socket left bytes owed")
	}
	if _, got = readFrames(t, client, 1); !bytes.Equal(got[0], next) {
		t.Fatalf("read %q, want %q", got[0], next)
	}
}

// TestConnOwedBlocked: bytes owed to a peer that never reads end the
// connection through the writer's deadline (R12), not before the write
// timeout; a direct write itself never waits.
func TestConnOwedBlocked(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	server, _ := tcpPair(t)
	cc := newTCP(t, server, timeout)
	fillDirect(t, cc, 40000) // more than the socket's buffers hold
	start := time.Now()
	err := cc.Flush()
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("flushing to a peer that never reads: %v, want a deadline error", err)
	}
	if d := time.Since(start); d < timeout {
		t.Fatalf("the owed bytes' write failed after %v, before the write timeout %v", d, timeout)
	}
	if !cc.TimedOut() {
		t.Fatal("TimedOut is false after the write timed out")
	}
	// Nothing more is written: every later write returns the error.
	if err := writeText(cc, []byte("x")); err == nil {
		t.Fatal("a write after the owed bytes' deadline passed succeeded")
	}
}

// TestDirectLongAfterWriter: a writer's blocking write leaves no deadline
// on the socket (the write timeout is armed only while a write waits for
// the socket), so a direct write long after it, past the write timeout, is
// still written at once, and no timer runs for the idle connection.
func TestDirectLongAfterWriter(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	server, client := tcpPair(t)
	cc := newTCP(t, server, timeout)
	if err := writeText(cc, []byte(`{"type":"welcome"}`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * timeout) // what a deadline set by that write would have outlived
	f := []byte(`{"type":"top","seq":1}`)
	if owed := direct(t, cc, f); owed || cc.werr != nil {
		t.Fatalf("a direct write after the write timeout: owed %v, err %v; want it written", owed, cc.werr)
	}
	if cc.expiry != nil {
		t.Fatal("a write that never waited armed the write timeout")
	}
	if _, got := readFrames(t, client, 2); !bytes.Equal(got[1], f) {
		t.Fatalf("read %q, want %q", got[1], f)
	}
}

// testPool is the buffers of one hub's Conns.
func testPool() *Buffers { return NewBuffers() }

// direct writes f as a taker does (TryTake, Text, Give); it reports
// whether the writer must act.
func direct(t testing.TB, cc *Conn, f []byte) bool {
	t.Helper()
	if !cc.TryTake() {
		t.Fatal("TryTake failed with nothing owed")
	}
	if err := cc.Text(f); err != nil {
		t.Fatal(err)
	}
	return cc.Give()
}

// writeText writes p as the writer does: Text, then Flush.
func writeText(cc *Conn, p []byte) error {
	if err := cc.Text(p); err != nil {
		return err
	}
	return cc.Flush()
}

// TestTryTake: the socket can be taken only while the writer lets it go
// (Unhold), nothing is owed and the socket can be written without parking;
// a taker's frames reach the peer whole.
func TestTryTake(t *testing.T) {
	t.Parallel()
	server, client := tcpPair(t)
	cc := newTCP(t, server, 5*time.Second)
	cc.Hold()
	if cc.TryTake() {
		t.Fatal("taken while the writer holds it")
	}
	cc.Unhold()
	f := []byte(`{"type":"top","seq":1}`)
	if direct(t, cc, f) {
		t.Fatal("one small frame left bytes owed")
	}
	if _, got := readFrames(t, client, 1); !bytes.Equal(got[0], f) {
		t.Fatalf("read %q, want %q", got[0], f)
	}
	fillDirect(t, cc, 300)
	if cc.TryTake() {
		t.Fatal("taken with bytes owed: a frame would land inside the owed one")
	}
	go io.Copy(io.Discard, client)
	if err := cc.Flush(); err != nil {
		t.Fatal(err)
	}
	if !cc.TryTake() {
		t.Fatal("not taken once the owed bytes were written")
	}
	cc.Give()

	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if New(a, nil, time.Second, testPool()).TryTake() {
		t.Fatal("a socket without a RawConn was taken: its write could park")
	}
}

// TestSocketIsOwned: the socket under a Conn is reached only through it:
// the Conn exports no field (an embedded net.Conn would let any importer
// write around the write mutex and the batches), and a write deadline set
// from outside is refused (the Conn keeps its own).
func TestSocketIsOwned(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[Conn]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() {
			t.Errorf("Conn exports field %s (%s)", f.Name, f.Type)
		}
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := New(a, nil, time.Second, testPool())
	if err := c.SetWriteDeadline(time.Now()); err == nil {
		t.Error("SetWriteDeadline from outside was accepted")
	}
	if err := c.SetDeadline(time.Now()); err == nil {
		t.Error("SetDeadline from outside was accepted")
	}
}
