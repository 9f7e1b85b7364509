package client_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/bus"
	"github.com/wsgateway/wsgateway/hub"
	"github.com/wsgateway/wsgateway/hub/live"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
)

// testSecret signs every token of these tests.
const testSecret = "client-tests-secret-0123456789abcdef"

// gateway is an in-process gateway wired as cmd/wsgateway wires --dev:
// memory engine, boards created on first use, in-process NATS.
type gateway struct {
	URL   string // ws://…/ws
	Store rank.Store
}

func startGateway(t testing.TB) *gateway {
	t.Helper()
	g, stop, err := newGateway()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return g
}

// newGateway starts a gateway; stop ends it.
func newGateway() (g *gateway, stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	log := slog.New(slog.DiscardHandler)
	ms, err := memstore.New(memstore.Config{Logger: log})
	if err != nil {
		return nil, nil, err
	}
	store := rank.AutoCreate(ms)
	v, err := auth.New(ctx, auth.Config{Secret: []byte(testSecret), Logger: log})
	if err != nil {
		return nil, nil, err
	}
	engine, err := live.New(live.Config{Store: store, Interval: 20 * time.Millisecond, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	var b *bus.Bus
	h, err := hub.New(hub.Config{
		Store: store, Verifier: v, Live: engine, Node: "test",
		Publish:     func(c bus.Change) { b.Publish(c) },
		TopInterval: 20 * time.Millisecond, Logger: log,
	})
	if err != nil {
		return nil, nil, err
	}
	b, err = bus.New(ctx, bus.Config{Node: "test", Logger: log, OnChanges: engine.Changed, OnResync: engine.Resync})
	if err != nil {
		return nil, nil, err
	}
	done := make(chan struct{})
	go func() { engine.Run(ctx); close(done) }()
	srv := httptest.NewServer(h)
	stop = func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		h.Shutdown(sctx)
		scancel()
		srv.Close()
		cancel()
		<-done
		b.Close()
		store.Close()
	}
	return &gateway{URL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws", Store: store}, stop, nil
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
