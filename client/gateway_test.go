package client_test

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/gwtest"
)

// testSecret signs every token of these tests.
const testSecret = "client-tests-secret-0123456789abcdef"

func startGateway(t testing.TB) *gwtest.Gateway {
	t.Helper()
	g, stop, err := newGateway()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return g
}

// newGateway starts an in-process gateway wired as --dev (boards created
// on first use); stop ends it.
func newGateway() (*gwtest.Gateway, func(), error) {
	return gwtest.Start(gwtest.Options{Secret: []byte(testSecret), AutoCreate: true})
}

// mint signs a token for sub.
func mint(sub string, role auth.Role) string {
	tok, err := auth.MintHS256([]byte(testSecret), auth.Claims{Sub: sub, Role: role, TTL: time.Hour})
	if err != nil {
		panic(err)
	}
	return tok
}

// proxy is a TCP relay that can hold back everything the gateway sends
// (so that events are applied but their acks never arrive) and cut every
// connection.
type proxy struct {
	Addr  string
	to    string
	ln    net.Listener
	muted atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t testing.TB, to string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{Addr: ln.Addr().String(), to: to, ln: ln}
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.cut() })
	return p
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go io.Copy(s, c)
		go p.down(c, s)
	}
}

// down relays gateway → client, discarding while muted.
func (p *proxy) down(c, s net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 && !p.muted.Load() {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			c.Close()
			return
		}
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
