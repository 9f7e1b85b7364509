package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/webhook"
)

// hookSink is a webhook receiver that can be down (nothing listening on
// its port) and come back on the same port.
type hookSink struct {
	addr string
	mu   sync.Mutex
	got  []http.Header
	body [][]byte
	srv  *http.Server
}

func (h *hookSink) up(t *testing.T) {
	ln, err := net.Listen("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got, h.body = append(h.got, r.Header.Clone()), append(h.body, b)
		h.mu.Unlock()
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = h.srv.Serve(ln) }()
	t.Cleanup(func() { h.srv.Close() })
}

func (h *hookSink) requests() ([]http.Header, [][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]http.Header(nil), h.got...), append([][]byte(nil), h.body...)
}

type deliveryLog struct {
	Deliveries []struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Attempts int    `json:"attempts"`
	} `json:"deliveries"`
}

// TestWebhookSurvivesNodeKill: the receiver is down while a board goes
// final on a two-node cluster; the node that made the failed attempt is
// SIGKILLed; when the receiver comes back the other node delivers the
// board.final, with its standings and rewards, signed, under the same
// delivery id as the failed attempts.
func TestWebhookSurvivesNodeKill(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	c := newCluster(t, clusterOpts{Nodes: 2, Args: []string{"--webhook-allow-private"}})
	sink := &hookSink{addr: "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))} // down: nothing listens yet
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := adminToken(t)
	const hookSecret = "e2e-webhook-secret-0123"
	if st, b, err := rest(ctx, "PUT", c.nodes[0].HTTP()+"/api/v1/webhooks/results", adm, map[string]any{
		"url": "http://" + sink.addr + "/hook", "secret": hookSecret, "events": []string{"board.final"},
	}, nil); err != nil || st != 200 {
		t.Fatalf("PUT webhook: %d %s %v", st, b, err)
	}
	endsAt := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second).Add(time.Second)
	putBoard(t, c.nodes[0], "cup", map[string]any{
		"ends_at": endsAt.Format(time.RFC3339), "standings": 2,
		"rewards": []map[string]any{{"from": 1, "to": 1, "reward": "gold"}, {"from": 2, "to": 5, "reward": "silver"}},
	})
	srv := token(t, auth.Claims{Sub: "game", Role: auth.Server})
	if st, b, err := rest(ctx, "POST", c.nodes[1].HTTP()+"/api/v1/boards/cup/scores", srv, []map[string]any{
		{"id": "1", "member": "ann", "delta": 30}, {"id": "2", "member": "bo", "delta": 20}, {"id": "3", "member": "cy", "delta": 10},
	}, nil); err != nil || st != 200 {
		t.Fatalf("scores: %d %s %v", st, b, err)
	}

	var log deliveryLog
	readLog := func() {
		t.Helper()
		log = deliveryLog{}
		for _, g := range c.nodes {
			if st, _, err := rest(ctx, "GET", g.HTTP()+"/api/v1/webhooks/results/deliveries", adm, nil, &log); err == nil && st == 200 {
				return
			}
		}
	}
	testenv.Until(t, 30*time.Second, "a failed attempt while the receiver is down", func() bool {
		readLog()
		return len(log.Deliveries) == 1 && log.Deliveries[0].Attempts >= 1
	})
	id := log.Deliveries[0].ID
	// Kill the node that attempted it (its debug log names the delivery).
	victim := -1
	for i, g := range c.nodes {
		if b, _ := os.ReadFile(g.Log); strings.Contains(string(b), id) {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("no node logged an attempt of %s", id)
	}
	c.nodes[victim].Kill()
	other := c.nodes[1-victim]
	sink.up(t)
	testenv.Until(t, 90*time.Second, "the delivery by the surviving node", func() bool {
		hs, _ := sink.requests()
		return len(hs) >= 1
	})
	hs, bodies := sink.requests()
	if len(hs) != 1 || hs[0].Get("X-LB-Delivery") != id {
		t.Fatalf("receiver got %d requests, first id %q; want one with %s", len(hs), hs[0].Get("X-LB-Delivery"), id)
	}
	if !webhook.Verify(hookSecret, hs[0].Get("X-LB-Timestamp"), bodies[0], hs[0].Get("X-LB-Signature")) {
		t.Fatal("signature does not verify")
	}
	var p struct {
		Event string
		Board string
		Data  struct {
			Standings []struct{ Member string }
			Total     int
			Rewards   []struct{ Member, Reward string }
		}
	}
	if err := json.Unmarshal(bodies[0], &p); err != nil {
		t.Fatal(err)
	}
	if p.Event != "board.final" || p.Board != "cup" || len(p.Data.Standings) != 2 || p.Data.Standings[0].Member != "ann" ||
		p.Data.Total != 3 || len(p.Data.Rewards) != 3 || p.Data.Rewards[0].Reward != "gold" || p.Data.Rewards[2].Reward != "silver" {
		t.Fatalf("payload %s", bodies[0])
	}
	if b, _ := os.ReadFile(other.Log); !strings.Contains(string(b), id) {
		t.Fatalf("the surviving node %s did not log the delivery", other.opts.Node)
	}
	if st, _, err := rest(ctx, "GET", other.HTTP()+"/api/v1/webhooks/results/deliveries", adm, nil, &log); err != nil || st != 200 ||
		log.Deliveries[0].Status != "delivered" || log.Deliveries[0].Attempts < 2 {
		t.Fatalf("log %+v (%d %v): want delivered after the failed attempts", log, st, err)
	}
}
