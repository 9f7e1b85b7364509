package hijack

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
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
	srv := &fasthttp.Server{Handler: Handler(h), KeepHijackedConns: true}
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
