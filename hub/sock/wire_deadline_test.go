package sock

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// deadlineConn records the write deadlines set on it and, at each write,
// how much of the deadline was left.
type deadlineConn struct {
	net.Conn
	mu       sync.Mutex
	deadline time.Time
	sets     int
	left     []time.Duration
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline, c.sets = t, c.sets+1
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.left = append(c.left, time.Until(c.deadline))
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// TestConnDeadline: every socket write starts with at least the write
// timeout and at most 1/8 more of it before its deadline (R12's bound with
// its slack), while the deadline is moved far less often than once per
// write.
func TestConnDeadline(t *testing.T) {
	t.Parallel()
	const timeout = 160 * time.Millisecond
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go io.Copy(io.Discard, b)
	dc := &deadlineConn{Conn: a}
	cc := New(dc, nil, timeout, NewBuffers())
	// Writes back to back (each a few µs) until the deadline has moved
	// three times, about timeout/8 apart.
	writes, sets := 0, 0
	for end := time.Now().Add(10 * time.Second); sets < 3; writes++ {
		if time.Now().After(end) {
			t.Fatalf("the deadline moved %d times in %d writes over 10s", sets, writes)
		}
		if err := writeText(cc, []byte(`{"type":"top"}`)); err != nil {
			t.Fatal(err)
		}
		dc.mu.Lock()
		sets = dc.sets
		dc.mu.Unlock()
	}
	dc.mu.Lock()
	defer dc.mu.Unlock()
	for i, left := range dc.left {
		// Less than timeout only by the moment between the check and the
		// write (generous: a loaded box can pause a goroutine there).
		if left < timeout-timeout/8 || left > timeout+timeout/8 {
			t.Fatalf("write %d began with %v of its deadline left, want %v to %v", i, left, timeout, timeout+timeout/8)
		}
	}
	if writes < 2*dc.sets {
		t.Fatalf("%d writes moved the deadline %d times: not fewer than once per write", writes, dc.sets)
	}
}

// TestConnBlockedWrite: a write the peer never reads fails with the
// deadline error, not before the write timeout (the slow consumer, R12).
func TestConnBlockedWrite(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	a, b := net.Pipe() // unbuffered: a write blocks until read
	defer a.Close()
	defer b.Close()
	cc := New(a, nil, timeout, NewBuffers())
	start := time.Now()
	err := writeText(cc, []byte("never read"))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blocked write: %v, want a deadline error", err)
	}
	if d := time.Since(start); d < timeout {
		t.Fatalf("a blocked write failed after %v, before the write timeout %v", d, timeout)
	}
	if !cc.TimedOut() {
		t.Fatal("TimedOut is false after the write timed out")
	}
}
