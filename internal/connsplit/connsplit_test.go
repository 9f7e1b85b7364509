package connsplit

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func newSplit(t *testing.T, timeout time.Duration) (*Splitter, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(ln, Config{First: func(target []byte) bool { return bytes.HasPrefix(target, []byte("/api/")) }, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ln.Addr().String()
}

// accept is one Accept on l, failing the test after 5s.
func accept(t *testing.T, l net.Listener) net.Conn {
	t.Helper()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := l.Accept()
		ch <- res{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		t.Cleanup(func() { r.c.Close() })
		return r.c
	case <-time.After(5 * time.Second):
		t.Fatal("no connection accepted")
		return nil
	}
}

func dial(t *testing.T, addr, send string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if send != "" {
		if _, err := io.WriteString(c, send); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// readN reads exactly n bytes of c.
func readN(t *testing.T, c net.Conn, n int) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read %d bytes: %v (got %q)", n, err, b)
	}
	return string(b)
}

func TestRoutesByFirstRequest(t *testing.T) {
	s, addr := newSplit(t, time.Second)
	api := "POST /api/v1/boards/b/scores HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
	page := "GET /ws HTTP/1.1\r\nHost: x\r\n\r\n"
	dial(t, addr, api)
	if got := readN(t, accept(t, s.First()), len(api)); got != api {
		t.Fatalf("first side read %q, want the request replayed whole", got)
	}
	// A request line split over several writes is routed once its target is complete.
	c := dial(t, addr, "GET /w")
	io.WriteString(c, page[len("GET /w"):])
	if got := readN(t, accept(t, s.Second()), len(page)); got != page {
		t.Fatalf("second side read %q, want %q", got, page)
	}
	// Garbage without a target goes to the second server, which answers 400.
	dial(t, addr, "nonsense\r\n")
	if got := readN(t, accept(t, s.Second()), len("nonsense\r\n")); got != "nonsense\r\n" {
		t.Fatalf("second side read %q", got)
	}
}

func TestHandReplaysBeforeTheRest(t *testing.T) {
	s, addr := newSplit(t, time.Second)
	c := dial(t, addr, "GET /api/x HTTP/1.1\r\n\r\nGET /page HTTP/1.1\r\n")
	fc := accept(t, s.First())
	first := readN(t, fc, len("GET /api/x HTTP/1.1\r\n\r\n")) // what the first server parsed
	if !strings.HasPrefix(first, "GET /api/x") {
		t.Fatalf("first side read %q", first)
	}
	// The first server read part of the next request, then hands it over.
	part := readN(t, fc, len("GET /page"))
	s.Hand(fc, []byte(part))
	io.WriteString(c, "\r\n")
	sc := accept(t, s.Second())
	want := "GET /page HTTP/1.1\r\n\r\n"
	if got := readN(t, sc, len(want)); got != want {
		t.Fatalf("second side read %q, want %q", got, want)
	}
	// Both directions still work on the handed-over connection.
	io.WriteString(sc, "pong")
	if got := readN(t, c, 4); got != "pong" {
		t.Fatalf("client read %q", got)
	}
}

func TestSilentClientClosed(t *testing.T) {
	s, addr := newSplit(t, 100*time.Millisecond)
	go s.First().Accept()     // accepting starts with the servers' first Accept
	c := dial(t, addr, "GET") // never finishes its request line
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := bufio.NewReader(c).ReadByte()
	if !errors.Is(err, io.EOF) {
		t.Fatalf("read: %v, want EOF (closed by the splitter)", err)
	}
}

func TestSidesCloseApart(t *testing.T) {
	s, addr := newSplit(t, time.Second)
	if err := s.First().Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.First().Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on a closed side: %v, want net.ErrClosed", err)
	}
	// The other side still serves, and a connection for the closed side is closed.
	dial(t, addr, "GET / HTTP/1.1\r\n\r\n")
	accept(t, s.Second())
	c := dial(t, addr, "GET /api/x HTTP/1.1\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection routed to a closed side was served")
	}
	if err := s.Second().Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("the raw listener still accepts after both sides closed")
	}
}

func TestRequestTarget(t *testing.T) {
	for _, tc := range []struct {
		in     string
		target string
		ok     bool
	}{
		{"GET /api/v1 HTTP/1.1\r\n", "/api/v1", true},
		{"GET /api/v1?x=1 HTTP/1.1", "/api/v1?x=1", true},
		{"GET /api/v", "", false},
		{"GET", "", false},
		{"junk\r\n", "", true},
		{"GET /x\r\n", "/x", true},
	} {
		target, ok := requestTarget([]byte(tc.in))
		if string(target) != tc.target || ok != tc.ok {
			t.Errorf("requestTarget(%q) = %q, %v; want %q, %v", tc.in, target, ok, tc.target, tc.ok)
		}
	}
}

// failingListener fails its first n accepts with err, then accepts for real.
type failingListener struct {
	net.Listener
	mu  sync.Mutex
	n   int
	err error
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.n > 0 {
		l.n--
		l.mu.Unlock()
		return nil, l.err
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// TestAcceptFailuresSurvived is R32 at the listener: out of descriptors,
// the splitter counts each failure, backs off and accepts again; it does
// not close the listener (which would end both servers).
func TestAcceptFailuresSurvived(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED} {
		t.Run(errno.Error(), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			fl := &failingListener{Listener: ln, n: 4, err: &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}}
			var refused atomic.Int32
			s, err := New(fl, Config{
				First:   func([]byte) bool { return false },
				Refused: func(err error) { refused.Add(1) },
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			dial(t, ln.Addr().String(), "GET / HTTP/1.1\r\n\r\n")
			accept(t, s.Second()) // after four failures, the waiting connection is taken
			if n := refused.Load(); n != 4 {
				t.Fatalf("%d refusals counted, want 4", n)
			}
		})
	}
}
