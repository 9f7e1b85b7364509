package sock

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// countConn counts the bytes read from the socket under a Conn.
type countConn struct {
	net.Conn
	read atomic.Int64
}

func (c *countConn) CloseWrite() error { return c.Conn.(*net.TCPConn).CloseWrite() }

func (c *countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// TestFloodedCloseReadsNothing: closing a connection the flood guard
// stopped reads nothing more of the flood while it lingers (reading it
// was a third of the gateway's CPU under two flooders), yet what was
// written before the close (the 1008 close frame) still reaches the peer,
// and the socket is released after closeLinger.
func TestFloodedCloseReadsNothing(t *testing.T) {
	t.Parallel()
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
	under := &countConn{Conn: sc}
	cc := New(under, nil, 5*time.Second, testPool())
	cc.in.flooded.Store(true) // the guard has asked for the close

	// The flood the guard left unread, and more of it during the linger.
	if _, err := client.Write(frame(0x9, true, 0)[:6]); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	released := make(chan struct{})
	go func() {
		defer close(released)
		ping := make([]byte, 0, 6*256)
		for range 256 {
			ping = append(ping, frame(0x9, true, 0)...)
		}
		for {
			select {
			case <-stop:
				return
			default:
			}
			client.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			if _, err := client.Write(ping); err != nil && !isTimeout(err) {
				return
			}
		}
	}()
	closeFrame := []byte{0x88, 0x02, 0x03, 0xF0} // 1008
	if _, err := cc.Write(closeFrame); err != nil {
		t.Fatal(err)
	}
	if err := cc.Close(); err != nil {
		t.Fatal(err)
	}
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, len(closeFrame))
	if _, err := io.ReadFull(client, got); err != nil || string(got) != string(closeFrame) {
		t.Fatalf("close frame: %x, %v", got, err)
	}
	// The server side ends (FIN, then the release after the linger).
	if _, err := client.Read(make([]byte, 1)); err == nil {
		t.Fatal("data after the close frame")
	}
	// Released after the linger: the flooder's writes fail (RST).
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the socket was not released after the linger")
	}
	if n := under.read.Load(); n != 0 {
		t.Fatalf("the lingering close read %d bytes of the flood; want none", n)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
