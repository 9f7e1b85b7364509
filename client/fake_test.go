package client_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/proto"
)

// fakeGateway is a small in-test WebSocket server speaking enough of the
// contract to unit-test the client: welcome, then answers chosen per test.
type fakeGateway struct {
	URL string
	t   *testing.T
	// answer returns the frames that answer r on connection n (1-based);
	// the value drop closes the connection at once instead.
	answer func(n int, r proto.Request) []any
	reqs   chan seen // every request, in arrival order
	seq    atomic.Int64
	n      atomic.Int32 // connections accepted

	mu      sync.Mutex
	headers []http.Header // upgrade request headers, per connection
}

type seen struct {
	conn int
	req  proto.Request
}

// drop, among answer's frames, cuts the connection without a close frame;
// goingAway closes it with 1001, as a draining gateway does (R14).
var (
	drop      = struct{ drop bool }{true}
	goingAway = struct{ goingAway bool }{true}
)

func newFake(t *testing.T, answer func(n int, r proto.Request) []any) *fakeGateway {
	t.Helper()
	f, srv := fakeOn(t, answer, httptest.NewServer)
	f.URL = "ws" + strings.TrimPrefix(srv.URL, "http")
	return f
}

// newFakeTLS is newFake over TLS (wss://); roots trusts its certificate.
func newFakeTLS(t *testing.T, answer func(n int, r proto.Request) []any) (f *fakeGateway, roots *x509.CertPool) {
	t.Helper()
	f, srv := fakeOn(t, answer, func(h http.Handler) *httptest.Server {
		srv := httptest.NewUnstartedServer(h)
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes tests make on purpose
		srv.StartTLS()
		return srv
	})
	f.URL = "wss" + strings.TrimPrefix(srv.URL, "https")
	roots = x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return f, roots
}

func fakeOn(t *testing.T, answer func(n int, r proto.Request) []any, start func(http.Handler) *httptest.Server) (*fakeGateway, *httptest.Server) {
	f := &fakeGateway{t: t, answer: answer, reqs: make(chan seen, 4096)}
	if f.answer == nil {
		f.answer = f.standard
	}
	srv := start(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeGateway) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "Bearer bad" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"code":"unauthorized","message":"token is expired"}}`))
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{proto.Subprotocol}})
	if err != nil {
		return
	}
	defer conn.CloseNow()
	n := int(f.n.Add(1))
	f.mu.Lock()
	f.headers = append(f.headers, r.Header.Clone())
	f.mu.Unlock()
	ctx := r.Context()
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		return conn.Write(ctx, websocket.MessageText, b) == nil
	}
	send(proto.Welcome{Type: proto.TypeWelcome, Member: "alice", Role: "admin", Node: "fake-" + strconv.Itoa(n)})
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var req proto.Request
		if err := json.Unmarshal(b, &req); err != nil {
			f.t.Errorf("fake: bad request %s: %v", b, err)
			return
		}
		f.reqs <- seen{n, req}
		for _, v := range f.answer(n, req) {
			if v == drop {
				return
			}
			if v == goingAway {
				conn.Close(websocket.StatusGoingAway, "going away")
				return
			}
			if !send(v) {
				return
			}
		}
	}
}

func (f *fakeGateway) header(n int) http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[n-1]
}

// standard answers every request as a gateway would, with made-up data.
func (f *fakeGateway) standard(_ int, r proto.Request) []any {
	switch r.Type {
	case proto.TypeScore:
		v, _ := proto.ParseScore(r.Delta)
		return []any{proto.Ack{Type: proto.TypeAck, ID: r.ID, Board: r.Board, Member: r.Member, Score: v, Rank: 1, Seq: f.seq.Add(1)}}
	case proto.TypeSubscribe:
		return []any{
			proto.Subscribed{Type: proto.TypeSubscribed, ID: r.ID, Board: r.Board},
			proto.Top{Type: proto.TypeTop, Board: r.Board, Seq: f.seq.Load(), Entries: []proto.Entry{{Rank: 1, Member: "bob", Score: 5}}, Total: 1},
		}
	case proto.TypeUnsubscribe:
		return []any{proto.Subscribed{Type: proto.TypeUnsubscribed, ID: r.ID, Board: r.Board}}
	case proto.TypePage:
		return []any{proto.PageReply{Type: proto.TypePage, ID: r.ID, Board: r.Board, Offset: *r.Offset, Entries: []proto.Entry{{Rank: 1, Member: "bob", Score: 5}}, Total: 1}}
	case proto.TypeRank:
		return []any{proto.RankReply{Type: proto.TypeRank, ID: r.ID, Board: r.Board, Member: r.Member, Around: []proto.Entry{}}}
	case proto.TypeAuth:
		return []any{proto.Authed{Type: proto.TypeAuthed, ID: r.ID, Exp: 42}}
	}
	return []any{proto.Error{Type: proto.TypeError, ID: r.ID, Code: proto.CodeBadRequest, Message: "unknown type"}}
}

// next returns the next request the fake saw.
func (f *fakeGateway) next(t *testing.T) seen {
	t.Helper()
	select {
	case s := <-f.reqs:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("fake: no request within 10s")
		return seen{}
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
