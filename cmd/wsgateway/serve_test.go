package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestDevServe runs the real program in --dev mode on a free port: the
// printed URLs and admin token work for REST and WebSocket, and cancelling
// the context (SIGTERM) drains and closes WebSockets with 1001.
func TestDevServe(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testenv.LogBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--dev", "--addr", "127.0.0.1:0", "--node-id", "dev-1", "--drain-timeout", "5s"}, envMap(nil), &stdout, &stderr)
	}()
	addrRe := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	tokenRe := regexp.MustCompile(`admin token \(24h\):\n(\S+)\n`)
	testenv.Until(t, 10*time.Second, "the start banner", func() bool { return tokenRe.MatchString(stdout.String()) })
	addr := addrRe.FindStringSubmatch(stdout.String())[1]
	token := tokenRe.FindStringSubmatch(stdout.String())[1]
	base := "http://" + addr

	get := func(path string) (int, string) { return httpDo(t, "GET", base+path, token, "") }
	for _, path := range []string{"/healthz", "/readyz", "/", "/play", "/api/v1/boards", "/metrics"} {
		if code, body := get(path); code != 200 {
			t.Fatalf("GET %s = %d %s", path, code, body)
		}
	}

	c, resp, err := websocket.Dial(ctx, "ws://"+addr+"/ws", &websocket.DialOptions{Subprotocols: []string{"lb.v1", "bearer." + token}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != "lb.v1" {
		t.Fatalf("selected subprotocol %q, want lb.v1 (and never the token)", got)
	}
	read := func() map[string]any {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		defer rcancel()
		_, b, err := c.Read(rctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if w := read(); w["type"] != "welcome" || w["node"] != "dev-1" || w["role"] != "admin" {
		t.Fatalf("first frame %v", w)
	}
	// In --dev a board is created on first use.
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"score","id":"s1","board":"fresh","member":"zoe","delta":7}`)); err != nil {
		t.Fatal(err)
	}
	if a := read(); a["type"] != "ack" || a["score"] != 7.0 || a["rank"] != 1.0 || a["id"] != "s1" {
		t.Fatalf("ack %v", a)
	}
	if code, body := get("/api/v1/boards/fresh/top"); code != 200 || !strings.Contains(body, `"member":"zoe"`) {
		t.Fatalf("REST top after WS score = %d %s", code, body)
	}

	cancel() // what SIGTERM does
	var ce websocket.CloseError
	for {
		_, _, err := c.Read(context.Background())
		if err != nil {
			if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway {
				t.Fatalf("connection ended with %v, want close 1001", err)
			}
			break
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run returned %v after drain", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return within the drain timeout")
	}
	if strings.Contains(stderr.String(), token) {
		t.Fatal("a token reached the log")
	}
}

// TestRedactedCmdline is issue 33 B12: /debug/pprof/cmdline on
// --metrics-addr shows the command line with the values of secret flags
// replaced, in both spellings (--flag value, --flag=value).
func TestRedactedCmdline(t *testing.T) {
	t.Parallel()
	const key = "a-jwt-key-given-as-a-flag-0123456789"
	args := []string{"wsgateway", "--jwt-secret", key, "-redis-url=redis://:pw@r:6380/0", "--nats-url", "nats://u:pw@n:4223", "--addr", ":8080"}
	rec := httptest.NewRecorder()
	redactedCmdline(args)(rec, httptest.NewRequest("GET", "/debug/pprof/cmdline", nil))
	got := strings.Split(rec.Body.String(), "\x00")
	want := []string{"wsgateway", "--jwt-secret", "xxxxx", "-redis-url=xxxxx", "--nats-url", "xxxxx", "--addr", ":8080"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("cmdline %q, want %q", got, want)
	}
}
