//go:build linux

package sock

import (
	"net"
	"testing"
	"time"
)

// parkedConn is a Conn over a real loopback socket whose wake reports on
// the returned channel.
func parkedConn(t *testing.T, bufs *Buffers) (*Conn, *net.TCPConn, chan struct{}) {
	t.Helper()
	server, client := tcpPair(t)
	c := New(server, nil, 5*time.Second, bufs)
	woke := make(chan struct{}, 4)
	c.SetWake(func() { woke <- struct{}{} })
	if !c.Park() {
		t.Fatal("an idle Conn did not park")
	}
	if !c.Parked() {
		t.Fatal("Parked false after Park")
	}
	return c, client, woke
}

func awaitWake(t *testing.T, woke chan struct{}, what string) {
	t.Helper()
	select {
	case <-woke:
	case <-time.After(10 * time.Second):
		t.Fatalf("no wake after %s", what)
	}
}

// TestParkWakesOnBytes: a parked Conn's wake runs once the client's bytes
// are in its socket, only its own, and the bytes are then there to read.
func TestParkWakesOnBytes(t *testing.T) {
	t.Parallel()
	bufs := NewBuffers()
	a, _, wokeA := parkedConn(t, bufs)
	b, clientB, wokeB := parkedConn(t, bufs)
	if _, err := clientB.Write([]byte{0x8A, 0x80, 1, 2, 3, 4}); err != nil { // a masked pong
		t.Fatal(err)
	}
	awaitWake(t, wokeB, "the client's bytes")
	if b.Parked() {
		t.Fatal("still parked after its wake")
	}
	if err := b.Fill(); err != nil {
		t.Fatalf("Fill after the wake: %v", err)
	}
	if !b.SkipPongs() {
		t.Fatal("the pong that woke it is not there to read")
	}
	select {
	case <-wokeA:
		t.Fatal("a Conn woke for another's bytes")
	default:
	}
	if !a.Parked() {
		t.Fatal("the other Conn left the poller")
	}
	// Parked again, it wakes again for the next bytes.
	if !b.Park() {
		t.Fatal("did not park again")
	}
	if _, err := clientB.Write([]byte{0x8A, 0x80, 1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	awaitWake(t, wokeB, "the second bytes")
}

// TestParkRefusesBufferedBytes: bytes already buffered are the caller's to
// read; parking would leave them unread.
func TestParkRefusesBufferedBytes(t *testing.T) {
	t.Parallel()
	server, client := tcpPair(t)
	c := New(server, nil, 5*time.Second, NewBuffers())
	c.SetWake(func() {})
	if _, err := client.Write([]byte{0x8A, 0x80, 1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	if err := c.Fill(); err != nil {
		t.Fatal(err)
	}
	if c.Park() {
		t.Fatal("parked with bytes buffered")
	}
}

// TestParkWakesOnCloseAndHangUp: a parked Conn wakes when it is closed
// (so its reader ends it) and when the client hangs up.
func TestParkWakesOnCloseAndHangUp(t *testing.T) {
	t.Parallel()
	bufs := NewBuffers()
	c, _, woke := parkedConn(t, bufs)
	c.Close()
	awaitWake(t, woke, "Close")
	if err := c.Wait(); err == nil {
		t.Fatal("Wait after Close: no error")
	}
	if c.Park() {
		t.Fatal("a closed Conn parked")
	}

	_, client, woke2 := parkedConn(t, bufs)
	client.Close()
	awaitWake(t, woke2, "the client's hang-up")
}

// TestPollerEndsWhenIdle: with nothing parked the poller's set and loop
// end (no goroutine stays for a hub without spectators), and the next
// Park starts them again.
func TestPollerEndsWhenIdle(t *testing.T) {
	t.Parallel()
	bufs := NewBuffers()
	c, _, woke := parkedConn(t, bufs)
	c.Close()
	awaitWake(t, woke, "Close")
	running := func() bool {
		bufs.poll.mu.Lock()
		defer bufs.poll.mu.Unlock()
		return bufs.poll.epfd >= 0
	}
	deadline := time.Now().Add(10 * time.Second)
	for running() {
		if time.Now().After(deadline) {
			t.Fatal("the poller still runs with nothing parked")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, client, woke2 := parkedConn(t, bufs)
	if !running() {
		t.Fatal("Park did not start the poller again")
	}
	if _, err := client.Write([]byte{0x8A, 0x80, 1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	awaitWake(t, woke2, "bytes, on the second poller")
}
