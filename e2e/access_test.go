package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// wsConn is a bare lb.v1 connection for tests that watch every frame.
type wsConn struct {
	t  *testing.T
	ws *websocket.Conn
}

func dialWS(t *testing.T, g *gateway, tok string) *wsConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := http.Header{}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	ws, _, err := websocket.Dial(ctx, g.URL(), &websocket.DialOptions{Subprotocols: []string{proto.Subprotocol}, HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	c := &wsConn{t: t, ws: ws}
	if m := c.next(5 * time.Second); m["type"] != proto.TypeWelcome {
		t.Fatalf("first frame %v, want welcome", m)
	}
	return c
}

func (c *wsConn) send(v map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
}

// next reads one frame, or returns nil when none comes within d.
func (c *wsConn) next(d time.Duration) map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, b, err := c.ws.Read(ctx)
	if err != nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("frame %q: %v", b, err)
	}
	return m
}

// until reads frames until one satisfies ok; it fails after d.
func (c *wsConn) until(d time.Duration, what string, ok func(map[string]any) bool) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if m := c.next(time.Until(deadline)); m != nil && ok(m) {
			return
		}
	}
	c.t.Fatalf("no %s within %s", what, d)
}

// ended reports whether m is the server ending the subscription to board:
// `error` forbidden naming it, or the `unsubscribed` that follows.
func ended(board string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		return m["type"] == proto.TypeUnsubscribed && m["board"] == board
	}
}

// TestAccessRecheckedOnConfigChange (hardening): an anonymous spectator of
// a public board loses the subscription within a second of the board
// going private (forbidden, then unsubscribed), and gets no frame of it
// after that, on the node that made the change and on another node.
func TestAccessRecheckedOnConfigChange(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	e := startEnv(t)
	args := []string{"--public-read", "--top-interval", "20ms"}
	a := startGateway(t, gwOpts{Node: "a", RedisURL: e.Redis.URL(), NATSURL: e.NATS.URL(), Args: args})
	b := startGateway(t, gwOpts{Node: "b", RedisURL: e.Redis.URL(), NATSURL: e.NATS.URL(), Args: args})
	putBoard(t, a, "pub", map[string]any{"public": true})
	var watchers []*wsConn
	for _, g := range []*gateway{a, b} {
		c := dialWS(t, g, "")
		c.send(map[string]any{"type": "subscribe", "id": "s1", "board": "pub", "top": 5})
		c.until(5*time.Second, "subscribed", func(m map[string]any) bool { return m["type"] == proto.TypeSubscribed })
		c.until(5*time.Second, "a first top frame", func(m map[string]any) bool { return m["type"] == proto.TypeTop })
		watchers = append(watchers, c)
	}
	putBoard(t, a, "pub", map[string]any{"public": false})
	for i, c := range watchers {
		gotErr := false
		c.until(time.Second, fmt.Sprintf("the end of the subscription on node %d", i), func(m map[string]any) bool {
			if m["type"] == proto.TypeError && m["code"] == proto.CodeForbidden && strings.Contains(fmt.Sprint(m["message"]), "pub") {
				gotErr = true
			}
			return ended("pub")(m)
		})
		if !gotErr {
			t.Errorf("node %d: unsubscribed without a forbidden error first", i)
		}
	}
	// Scores keep changing the board; the watchers see nothing of it.
	srv := token(t, auth.Claims{Sub: "game", Role: auth.Server})
	for i := range 5 {
		if st, body, err := rest(context.Background(), "POST", a.HTTP()+"/api/v1/boards/pub/scores", srv,
			[]map[string]any{{"id": fmt.Sprint("x", i), "member": "m", "delta": 1}}, nil); err != nil || st != 200 {
			t.Fatalf("POST scores: %d %s %v", st, body, err)
		}
	}
	for i, c := range watchers {
		if m := c.next(300 * time.Millisecond); m != nil {
			t.Errorf("node %d: frame after the subscription ended: %v", i, m)
		}
	}
}

// TestAccessRecheckedOnAuth (hardening): a connection that renews its
// token with one whose boards claim no longer covers a subscribed board
// loses that subscription (forbidden, then unsubscribed) and keeps the
// others.
func TestAccessRecheckedOnAuth(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t, gwOpts{Args: []string{"--top-interval", "20ms"}})
	for _, id := range []string{"ka", "kb"} {
		putBoard(t, g, id, nil)
	}
	c := dialWS(t, g, token(t, auth.Claims{Sub: "pat", Boards: []string{"ka", "kb"}}))
	for _, id := range []string{"ka", "kb"} {
		c.send(map[string]any{"type": "subscribe", "id": "s-" + id, "board": id, "top": 5})
		c.until(5*time.Second, "subscribed "+id, func(m map[string]any) bool { return m["type"] == proto.TypeSubscribed && m["board"] == id })
	}
	c.send(map[string]any{"type": "auth", "id": "re", "token": token(t, auth.Claims{Sub: "pat", Boards: []string{"ka"}})})
	sawErr, sawEnd := false, false
	c.until(time.Second, "authed", func(m map[string]any) bool {
		switch {
		case m["type"] == proto.TypeError && m["code"] == proto.CodeForbidden && strings.Contains(fmt.Sprint(m["message"]), "kb"):
			sawErr = true
		case ended("kb")(m):
			sawEnd = true
		case ended("ka")(m):
			t.Errorf("the subscription to ka ended too")
		}
		return m["type"] == proto.TypeAuthed
	})
	if !sawErr || !sawEnd {
		t.Fatalf("before authed: forbidden %v, unsubscribed kb %v; want both", sawErr, sawEnd)
	}
	// ka still streams.
	if st, body, err := rest(context.Background(), "POST", g.HTTP()+"/api/v1/boards/ka/scores", adminToken(t),
		[]map[string]any{{"id": "k1", "member": "m", "delta": 3}}, nil); err != nil || st != 200 {
		t.Fatalf("POST: %d %s %v", st, body, err)
	}
	c.until(5*time.Second, "a top frame of ka with m", func(m map[string]any) bool {
		return m["type"] == proto.TypeTop && m["board"] == "ka" && fmt.Sprint(m["total"]) == "1"
	})
}

// devToken asks a --dev gateway's token endpoint for a token.
func devToken(t *testing.T, g *gateway, sub string, role auth.Role) string {
	t.Helper()
	var out struct {
		Token string `json:"token"`
	}
	st, body, err := rest(context.Background(), "POST", g.HTTP()+"/api/v1/dev/token", "",
		map[string]any{"sub": sub, "role": role}, &out)
	if err != nil || st != 200 || out.Token == "" {
		t.Fatalf("dev token: %d %s %v", st, body, err)
	}
	return out.Token
}

// boardIDs lists every board id through the paginated GET /api/v1/boards.
func boardIDs(t *testing.T, g *gateway, tok string, limit int) (ids []string, pages int) {
	t.Helper()
	after := ""
	for {
		var body struct {
			Boards []struct {
				ID string `json:"id"`
			} `json:"boards"`
			Next string `json:"next"`
		}
		u := fmt.Sprintf("%s/api/v1/boards?limit=%d&after=%s", g.HTTP(), limit, after)
		if st, b, err := rest(context.Background(), "GET", u, tok, nil, &body); err != nil || st != 200 {
			t.Fatalf("GET boards: %d %s %v", st, b, err)
		}
		pages++
		for _, b := range body.Boards {
			ids = append(ids, b.ID)
		}
		if len(body.Boards) > limit {
			t.Fatalf("a page of %d boards for limit %d", len(body.Boards), limit)
		}
		if body.Next == "" {
			return ids, pages
		}
		after = body.Next
	}
}

// TestDevBoardsBounded (hardening): in --dev, reads and refused events never
// create a board, an accepted write does, at most --dev-boards of them, and
// a deleted board stays deleted for readers; the board list is paginated.
func TestDevBoardsBounded(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t, gwOpts{Auth: []string{"--dev"}, Args: []string{"--dev-boards", "5"}})
	adm := devToken(t, g, "root", auth.Admin)
	c := dialWS(t, g, devToken(t, g, "pat", auth.Player))
	n := 0
	call := func(v map[string]any) map[string]any {
		n++
		v["id"] = fmt.Sprint("q", n)
		c.send(v)
		m := c.next(5 * time.Second)
		if m == nil || m["id"] != v["id"] {
			t.Fatalf("%v: reply %v", v, m)
		}
		return m
	}
	// Reads of boards nobody wrote to: empty, and nothing created.
	for i := range 20 {
		b := fmt.Sprint("read", i)
		if m := call(map[string]any{"type": "page", "board": b}); m["type"] != proto.TypePage || fmt.Sprint(m["total"]) != "0" {
			t.Fatalf("page of a new board: %v", m)
		}
		if m := call(map[string]any{"type": "rank", "board": b, "member": "x"}); m["type"] != proto.TypeRank {
			t.Fatalf("rank on a new board: %v", m)
		}
		if st, _, _ := rest(context.Background(), "GET", g.HTTP()+"/api/v1/boards/"+b+"/top", adm, nil, nil); st != 200 {
			t.Fatalf("GET top of a new board: %d", st)
		}
	}
	// Refused events: a value on an incr board, a fraction, an out-of-range delta.
	for i, ev := range []map[string]any{{"value": 1}, {"delta": 1.5}, {"delta": int64(1) << 53}} {
		ev["type"], ev["board"] = "score", fmt.Sprint("refused", i)
		if m := call(ev); m["type"] != proto.TypeError {
			t.Fatalf("refused event %v answered %v", ev, m)
		}
	}
	if ids, _ := boardIDs(t, g, adm, 100); len(ids) != 0 {
		t.Fatalf("boards after reads and refused events: %v, want none", ids)
	}
	// Accepted writes create, up to the cap.
	for i := range 5 {
		if m := call(map[string]any{"type": "score", "board": fmt.Sprint("w", i), "delta": 1}); m["type"] != proto.TypeAck {
			t.Fatalf("first write to w%d: %v", i, m)
		}
	}
	if m := call(map[string]any{"type": "score", "board": "w5", "delta": 1}); m["code"] != proto.CodeLimitReached {
		t.Fatalf("sixth new board: %v, want limit_reached", m)
	}
	if m := call(map[string]any{"type": "score", "board": "w0", "delta": 1}); m["type"] != proto.TypeAck || fmt.Sprint(m["score"]) != "2" {
		t.Fatalf("a write to an existing board past the cap: %v", m)
	}
	ids, pages := boardIDs(t, g, adm, 2)
	if fmt.Sprint(ids) != "[w0 w1 w2 w3 w4]" || pages != 3 {
		t.Fatalf("boards %v in %d pages, want w0…w4 in 3", ids, pages)
	}
	// Deleted: its config is a 404, reads see an empty board, and reading
	// does not bring it back.
	if st, b, err := rest(context.Background(), "DELETE", g.HTTP()+"/api/v1/boards/w1", adm, nil, nil); err != nil || st/100 != 2 {
		t.Fatalf("DELETE: %d %s %v", st, b, err)
	}
	for range 2 {
		if st, _, _ := rest(context.Background(), "GET", g.HTTP()+"/api/v1/boards/w1", adm, nil, nil); st != 404 {
			t.Fatalf("GET of a deleted board: %d, want 404", st)
		}
		if m := call(map[string]any{"type": "page", "board": "w1"}); fmt.Sprint(m["total"]) != "0" {
			t.Fatalf("page of a deleted board: %v", m)
		}
	}
	if st, b, _ := rest(context.Background(), "GET", g.HTTP()+"/api/v1/boards?limit=0", adm, nil, nil); st != 400 {
		t.Fatalf("limit=0: %d %s, want 400", st, b)
	}
}

// TestMemberScoreRate (hardening): a player's score events share one budget
// across all its connections on a node, so more connections do not buy
// more events (each costs an idempotency record for the whole window).
// Server tokens are not limited.
func TestMemberScoreRate(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t, gwOpts{Args: []string{"--rate", "20"}})
	putBoard(t, g, "mr", nil)
	const conns, each = 3, 30 // 30 each is under one connection's burst of 40
	tok := token(t, auth.Claims{Sub: "pat"})
	var cs []*wsConn
	for range conns {
		cs = append(cs, dialWS(t, g, tok))
	}
	began := time.Now()
	for i, c := range cs {
		for j := range each {
			c.send(map[string]any{"type": "score", "id": fmt.Sprintf("c%d-%d", i, j), "board": "mr", "delta": 1})
		}
	}
	acked, limited := 0, 0
	for _, c := range cs {
		for range each {
			m := c.next(5 * time.Second)
			switch {
			case m == nil:
				t.Fatal("a score got no reply")
			case m["type"] == proto.TypeAck:
				acked++
			case m["code"] == proto.CodeRateLimited:
				limited++
				if ms, _ := m["retry_after_ms"].(float64); ms <= 0 {
					t.Errorf("rate_limited without retry_after_ms: %v", m)
				}
			default:
				t.Fatalf("reply %v", m)
			}
		}
	}
	elapsed := time.Since(began)
	// The member's budget: a burst of 40, then 20 a second.
	if most := 40 + int(20*elapsed.Seconds()) + 1; acked > most || limited == 0 {
		t.Fatalf("%d acked, %d rate limited in %s over %d connections; want at most %d acked", acked, limited, elapsed, conns, most)
	}
	// A server token scores for many members and is not limited.
	srv := dialWS(t, g, token(t, auth.Claims{Sub: "bot", Role: auth.Server}))
	for j := range conns * each {
		srv.send(map[string]any{"type": "score", "id": fmt.Sprint("s", j), "board": "mr", "member": "pat", "delta": 1})
	}
	for range conns * each {
		if m := srv.next(5 * time.Second); m == nil || m["type"] != proto.TypeAck {
			t.Fatalf("server score: %v", m)
		}
	}
}
