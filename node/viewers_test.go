package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
)

// viewersOf reads GET /api/v1/boards/{board}'s viewers on r.
func viewersOf(t *testing.T, r *running, board string) (int, error) {
	st, body := r.rest(t, "GET", "/api/v1/boards/"+board, token(t, "root", auth.Admin), "")
	if st != 200 {
		return 0, fmt.Errorf("GET: %d %s", st, body)
	}
	var b struct {
		Viewers *int `json:"viewers"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil || b.Viewers == nil {
		return 0, fmt.Errorf("no viewers in %s (%v)", body, err)
	}
	return *b.Viewers, nil
}

// watcher opens a connection subscribed to board on r.
func watcher(t *testing.T, r *running, board string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, r.ws, token(t, "watcher", auth.Spectator), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Subscribe(ctx, board, client.SubOpts{Top: 3}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestViewersTwoNodes is §14's viewers over two nodes with the default
// report interval: three subscriptions, two on node a and one on node b,
// read as 3 on both nodes within 5 s (the contract's bound), and as 2 on
// both within 5 s after one on node a leaves. The metric says the same.
func TestViewersTwoNodes(t *testing.T) {
	t.Parallel()
	nodes, _ := cluster(t, 0, []string{"a", "b"}, nil)
	a, b := nodes[0], nodes[1]
	if st, body := a.rest(t, "PUT", "/api/v1/boards/watched", token(t, "root", auth.Admin), `{}`); st != 200 {
		t.Fatalf("PUT: %d %s", st, body)
	}
	for _, r := range nodes {
		if n, err := viewersOf(t, r, "watched"); err != nil || n != 0 {
			t.Fatalf("before any subscription: %d viewers, %v", n, err)
		}
	}
	leaving := watcher(t, a, "watched")
	watcher(t, a, "watched")
	watcher(t, b, "watched")
	want := func(n int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second) // one bound for both nodes
		for _, r := range nodes {
			testenv.Eventually(t, time.Until(deadline), fmt.Sprintf("%d viewers", n), func() error {
				got, err := viewersOf(t, r, "watched")
				if err == nil && got != n {
					err = fmt.Errorf("%d viewers", got)
				}
				return err
			})
		}
	}
	want(3)
	if got := metric(t, b, `wsgateway_board_viewers{board="watched"}`); got != "3" {
		t.Errorf("node b's metric says %s viewers, want 3", got)
	}
	leaving.Close()
	want(2)
}

// TestViewersInBoardFrames: a subscriber on node b gets a board frame
// whose viewers count the subscriptions of node a too, read off the wire
// as any client would.
func TestViewersInBoardFrames(t *testing.T) {
	t.Parallel()
	nodes, _ := cluster(t, 0, []string{"a", "b"}, nil)
	a, b := nodes[0], nodes[1]
	if st, body := a.rest(t, "PUT", "/api/v1/boards/framed", token(t, "root", auth.Admin), `{}`); st != 200 {
		t.Fatalf("PUT: %d %s", st, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token(t, "raw", auth.Spectator))
	conn, _, err := websocket.Dial(ctx, b.ws, &websocket.DialOptions{HTTPHeader: h, Subprotocols: []string{"lb.v1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"subscribe","id":"1","board":"framed","top":3}`)); err != nil {
		t.Fatal(err)
	}
	watcher(t, a, "framed")
	watcher(t, a, "framed")
	// The first look is 5 s after the first subscription on node b, the
	// next 5 s later; node a reports every 2 s, so the first look already
	// counts a's two unless the machine is slow.
	deadline := time.Now().Add(12 * time.Second)
	for time.Now().Before(deadline) {
		rctx, rcancel := context.WithDeadline(ctx, deadline)
		_, data, err := conn.Read(rctx)
		rcancel()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var f struct {
			Type    string `json:"type"`
			State   string `json:"state"`
			Viewers *int   `json:"viewers"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("frame %s: %v", data, err)
		}
		if f.Type == "board" && f.Viewers != nil {
			t.Logf("board frame %s", data)
			if *f.Viewers == 3 && f.State == "open" {
				return
			}
		}
	}
	t.Fatal("no board frame with 3 viewers within 12 s")
}
