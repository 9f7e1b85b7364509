package hijack

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// serve runs Handler(h) on a fasthttp server as the gateway configures it
// (hijacked connections kept) and returns its address.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: Handler(h, slog.New(slog.DiscardHandler)), KeepHijackedConns: true}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Shutdown()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

// TestAnswerWithoutHijack: an answer given without taking the connection
// is fasthttp's response (status, headers, body), and the connection stays
// open for the next request.
func TestAnswerWithoutHijack(t *testing.T) {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Path", r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "teapot "+r.Header.Get("X-Who"))
	}))
	c, br := dial(t, addr)
	for i := range 2 {
		fmt.Fprintf(c, "GET /plain HTTP/1.1\r\nHost: x\r\nX-Who: w%d\r\n\r\n", i)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusTeapot || res.Header.Get("X-Path") != "/plain" || string(body) != fmt.Sprintf("teapot w%d", i) {
			t.Fatalf("request %d: %d %v %q", i, res.StatusCode, res.Header, body)
		}
	}
}

// TestHijack: the handler takes the connection after writing a 101 head;
// the client reads the head, then the bytes it sent right behind the
// request come back first (they were in fasthttp's buffer), then later
// ones. The request's strings outlive fasthttp's reuse of its buffers
// (other requests served meanwhile), and the connection reaches its
// descriptor (hub/sock writes without parking through it).
func TestHijack(t *testing.T) {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/take" {
			io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Upgrade", "echo")
		w.WriteHeader(http.StatusSwitchingProtocols)
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("Hijack: %v", err)
			return
		}
		if err := brw.Flush(); err != nil {
			t.Errorf("flush the head: %v", err)
			c.Close()
			return
		}
		_, sys := c.(syscall.Conn)
		go func() {
			defer c.Close()
			lines := bufio.NewScanner(brw.Reader)
			for lines.Scan() {
				reply := lines.Text()
				if reply == "who" {
					reply = fmt.Sprintf("%s %s %v", r.Header.Get("X-Keep"), r.URL.Query().Get("q"), sys)
				}
				io.WriteString(c, reply+"\n")
			}
		}()
	}))
	c, br := dial(t, addr)
	io.WriteString(c, "GET /take?q=query1 HTTP/1.1\r\nHost: x\r\nX-Keep: value1\r\n\r\nearly\n")
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols || res.Header.Get("Upgrade") != "echo" {
		t.Fatalf("head: %d %v", res.StatusCode, res.Header)
	}
	line := func() string {
		t.Helper()
		s, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v (got %q)", err, s)
		}
		return strings.TrimSuffix(s, "\n")
	}
	if got := line(); got != "early" {
		t.Fatalf("the bytes sent behind the request: %q", got)
	}
	// Other requests reuse fasthttp's buffers meanwhile.
	for i := range 20 {
		o, obr := dial(t, addr)
		fmt.Fprintf(o, "GET /other?q=QUERYx HTTP/1.1\r\nHost: x\r\nX-Keep: VALUE%d\r\n\r\n", i%10)
		if _, err := http.ReadResponse(obr, nil); err != nil {
			t.Fatal(err)
		}
	}
	io.WriteString(c, "later\nwho\n")
	if got := line(); got != "later" {
		t.Fatalf("a later line: %q", got)
	}
	if got := line(); got != "value1 query1 true" {
		t.Fatalf("the request as the handler kept it: %q, want %q", got, "value1 query1 true")
	}
}

// TestProtocolVersion: the handler's request carries the request line's
// version, as net/http parses it (coder/websocket refuses an upgrade below
// HTTP/1.1 by it): a line without a version is HTTP/1.0, an unparseable
// version is answered 400 and a major version other than 1 505, both
// before the handler.
func TestProtocolVersion(t *testing.T) {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %d.%d", r.Proto, r.ProtoMajor, r.ProtoMinor)
	}))
	for _, tc := range []struct {
		line   string
		status int
		body   string
	}{
		{"GET /v HTTP/1.1", 200, "HTTP/1.1 1.1"},
		{"GET /v HTTP/1.0", 200, "HTTP/1.0 1.0"},
		{"GET /v", 200, "HTTP/1.0 1.0"},
		{"GET /v HTTP/2.0", http.StatusHTTPVersionNotSupported, ""},
		{"GET /v HTTP/x.y", http.StatusBadRequest, ""},
	} {
		c, br := dial(t, addr)
		fmt.Fprintf(c, "%s\r\nHost: x\r\nConnection: close\r\n\r\n", tc.line)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != tc.status || (tc.body != "" && string(body) != tc.body) {
			t.Errorf("%q: %d %q, want %d %q", tc.line, res.StatusCode, body, tc.status, tc.body)
		}
	}
}

// TestPanicEscapingTheHandler: a panic the handler does not recover is
// logged with its stack and answered 500 with the connection closed, or,
// when the handler had taken the connection, the connection is closed;
// the server serves on.
func TestPanicEscapingTheHandler(t *testing.T) {
	logs := &strings.Builder{}
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, logs}, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{KeepHijackedConns: true, Handler: Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/before":
			panic("before the hijack")
		case "/after":
			w.WriteHeader(http.StatusSwitchingProtocols)
			if _, _, err := http.NewResponseController(w).Hijack(); err != nil {
				t.Errorf("Hijack: %v", err)
			}
			panic("after the hijack")
		}
		io.WriteString(w, "ok")
	}), log)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	addr := ln.Addr().String()

	c, br := dial(t, addr)
	io.WriteString(c, "GET /before HTTP/1.1\r\nHost: x\r\n\r\n")
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusInternalServerError || !res.Close {
		t.Fatalf("a panic before the hijack: %v %v, want 500 closing the connection", res, err)
	}
	c, br = dial(t, addr)
	io.WriteString(c, "GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := br.ReadString(0); err != io.EOF {
		t.Fatalf("a panic after the hijack: read %v, want the connection closed", err)
	}
	c, br = dial(t, addr)
	io.WriteString(c, "GET /fine HTTP/1.1\r\nHost: x\r\n\r\n")
	if res, err := http.ReadResponse(br, nil); err != nil || res.StatusCode != 200 {
		t.Fatalf("after the panics: %v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"before the hijack", "after the hijack", "hijack.TestPanicEscapingTheHandler"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
