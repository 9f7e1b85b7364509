package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

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
