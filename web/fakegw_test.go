package web

// A scripted lb.v1 server for the page tests of features the gateway does not
// serve yet (board frames, final frames, profiles): the real page handler,
// plus a /ws endpoint that answers subscribe and lets the test push frames,
// a dev-token endpoint and board configs. It is a unit test of the pages, not
// of the gateway: the real gateway's tests are in browser_test.go.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

type fakeGW struct {
	srv *httptest.Server

	mu     sync.Mutex
	conns  []*fakeConn
	boards map[string]map[string]any // GET /api/v1/boards/{id} → board config
	refuse map[string]string         // board → error code answered to subscribe
	skew   time.Duration             // the server clock's lead over the local one
	ttl    time.Duration             // the life of the tokens welcome and authed announce; an hour when 0
	tokens int                       // dev tokens handed out
	auths  int                       // auth requests received, on all connections
}

type fakeConn struct {
	ws  *websocket.Conn
	ctx context.Context

	mu   sync.Mutex
	subs map[string]map[string]any // board → the last subscribe

	scores int // score events answered (fakeGW.mu)
}

func newFakeGW(t *testing.T) *fakeGW {
	t.Helper()
	pages, err := New(Config{Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	g := &fakeGW{boards: map[string]map[string]any{}, refuse: map[string]string{}}
	mux := http.NewServeMux()
	mux.Handle("/", pages.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /api/v1/dev/token", func(w http.ResponseWriter, r *http.Request) {
		// Not a JWT: the fake checks nothing, the pages only pass it on.
		// Each is new, as a real dev token is.
		g.mu.Lock()
		g.tokens++
		n := g.tokens
		g.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"token":"fake.e30.sig%d","exp":%d}`, n, g.exp())
	})
	mux.HandleFunc("GET /api/v1/boards/{board}", func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		b, ok := g.boards[r.PathValue("board")]
		g.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"code":"unknown_board","message":"no such board"}}`)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"board": b, "members": 0})
	})
	mux.HandleFunc("GET /ws", g.serveWS)
	g.srv = httptest.NewServer(mux)
	t.Cleanup(g.srv.Close)
	return g
}

func (g *fakeGW) now() int64 { return time.Now().Add(g.skew).UnixMilli() }

// exp is the exp claim the fake announces for a token issued now.
func (g *fakeGW) exp() int64 {
	g.mu.Lock()
	ttl := g.ttl
	g.mu.Unlock()
	if ttl == 0 {
		ttl = time.Hour
	}
	return time.Now().Add(ttl).Unix()
}

// authCount is the number of auth requests received so far.
func (g *fakeGW) authCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.auths
}

func (g *fakeGW) setBoard(id string, cfg map[string]any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	cfg["id"] = id
	g.boards[id] = cfg
}

func (g *fakeGW) serveWS(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"lb.v1"}})
	if err != nil {
		return
	}
	c := &fakeConn{ws: ws, ctx: r.Context(), subs: map[string]map[string]any{}}
	g.mu.Lock()
	g.conns = append(g.conns, c)
	g.mu.Unlock()
	c.write(map[string]any{
		"type": "welcome", "member": "spectator", "role": "spectator", "node": "fake-1",
		"server_time": g.now(), "exp": g.exp(),
		"limits": map[string]any{"max_message": 4096, "rate": 50},
	})
	for {
		_, data, err := ws.Read(r.Context())
		if err != nil {
			return
		}
		var m map[string]any
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		board, _ := m["board"].(string)
		switch m["type"] {
		case "subscribe":
			g.mu.Lock()
			code := g.refuse[board]
			g.mu.Unlock()
			if code != "" {
				c.write(map[string]any{"type": "error", "id": m["id"], "code": code, "message": code + " (fake)"})
				continue
			}
			c.mu.Lock()
			c.subs[board] = m
			c.mu.Unlock()
			c.write(map[string]any{"type": "subscribed", "id": m["id"], "board": board})
		case "unsubscribe":
			c.mu.Lock()
			delete(c.subs, board)
			c.mu.Unlock()
			c.write(map[string]any{"type": "unsubscribed", "id": m["id"], "board": board})
		case "score":
			g.mu.Lock()
			max, _ := g.boards[board]["max_submissions"].(int)
			c.scores++
			n := c.scores
			g.mu.Unlock()
			if max > 0 && n > max {
				c.write(map[string]any{"type": "error", "id": m["id"], "code": "limit_reached", "message": "2 per period (fake)"})
				continue
			}
			c.write(map[string]any{"type": "ack", "id": m["id"], "board": board, "member": "mia", "score": 10 * n,
				"rank": 1, "prev_rank": nil, "duplicate": false, "seq": n})
		case "auth":
			g.mu.Lock()
			g.auths++
			g.mu.Unlock()
			c.write(map[string]any{"type": "authed", "id": m["id"], "exp": g.exp()})
		case "page":
			c.write(map[string]any{"type": "page", "id": m["id"], "board": board, "offset": 0, "entries": []any{}, "total": 0})
		default:
			c.write(map[string]any{"type": "error", "id": m["id"], "code": "bad_request", "message": "not scripted"})
		}
	}
}

func (c *fakeConn) write(v any) {
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ws.Write(ctx, websocket.MessageText, b)
}

// subscribed is the number of connections subscribed to the board.
func (g *fakeGW) subscribed(board string) int {
	g.mu.Lock()
	conns := append([]*fakeConn(nil), g.conns...)
	g.mu.Unlock()
	n := 0
	for _, c := range conns {
		c.mu.Lock()
		if _, ok := c.subs[board]; ok && c.ctx.Err() == nil {
			n++
		}
		c.mu.Unlock()
	}
	return n
}

// push sends a frame to every connection subscribed to its board, filling
// in ts.
func (g *fakeGW) push(frame map[string]any) {
	board := frame["board"].(string)
	if _, ok := frame["ts"]; !ok {
		frame["ts"] = g.now()
	}
	g.mu.Lock()
	conns := append([]*fakeConn(nil), g.conns...)
	g.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		_, ok := c.subs[board]
		c.mu.Unlock()
		if ok && c.ctx.Err() == nil {
			c.write(frame)
		}
	}
}

// entry is an entry as v1.1 frames carry it.
func entry(rank int, member string, score int64, name, avatar, country string) map[string]any {
	e := map[string]any{"rank": rank, "member": member, "score": score}
	if name != "" {
		e["name"] = name
	}
	if avatar != "" {
		e["avatar"] = avatar
	}
	if country != "" {
		e["country"] = country
	}
	return e
}

// avatarServer serves round SVG avatars over https (profiles take https
// URLs only); the browser is started with --ignore-certificate-errors.
func avatarServer(t *testing.T) *httptest.Server {
	t.Helper()
	colors := []string{"#f25f5c", "#ffe066", "#247ba0", "#70c1b3", "#9b5de5", "#f15bb5"}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), ".svg")
		if name == "" || strings.ContainsAny(name, "<>&\"'") {
			http.NotFound(w, r)
			return
		}
		c := colors[int(name[0])%len(colors)]
		w.Header().Set("Content-Type", "image/svg+xml")
		fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><circle cx="32" cy="32" r="32" fill="%s"/>`+
			`<text x="32" y="42" font-size="28" text-anchor="middle" fill="#fff" font-family="sans-serif">%s</text></svg>`, c, strings.ToUpper(name[:1]))
	}))
	t.Cleanup(srv.Close)
	return srv
}
