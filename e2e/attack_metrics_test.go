package e2e

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestPublicMetricsNameNoBoard is issue 33 B9: the anonymous /metrics on
// --addr sums per-board series under board="all" for a client beyond this
// machine and its private network (here one a trusted proxy forwards), so
// a private board's id is not listed to it; --metrics-addr, the
// operator's address, keeps them per board. Before the fix the public
// /metrics named every board to anyone.
func TestPublicMetricsNameNoBoard(t *testing.T) {
	t.Parallel()
	maddr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	for _, withAddr := range []bool{false, true} {
		args := []string{"--trusted-proxies", "127.0.0.1"}
		if withAddr {
			args = append(args, "--metrics-addr", maddr)
		}
		g := startGateway(t, gwOpts{Args: args})
		const board = "private-finals-7"
		putBoard(t, g, board, nil)
		c := dialWS(t, g, token(t, auth.Claims{Sub: "pat"}))
		c.send(map[string]any{"type": "subscribe", "id": "s", "board": board})
		c.send(map[string]any{"type": "score", "id": "e1", "board": board, "delta": 1})
		c.until(5*time.Second, "the ack", func(m map[string]any) bool { return m["type"] == "ack" })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if !withAddr {
			req, _ := http.NewRequestWithContext(ctx, "GET", g.HTTP()+"/metrics", nil)
			req.Header.Set("X-Forwarded-For", "198.51.100.7")
			resp, err := httpClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("public /metrics: %v %v", resp, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), board) || !strings.Contains(string(body), `board="all"`) {
				t.Errorf("public /metrics names the board, or sums nothing under board=\"all\":\n%s", grepLines(string(body), "board="))
			}
			continue
		}
		var body []byte
		testenv.Eventually(t, 5*time.Second, "/metrics on --metrics-addr", func() error {
			var err error
			_, body, err = rest(ctx, "GET", "http://"+maddr+"/metrics", "", nil, nil)
			return err
		})
		if !strings.Contains(string(body), `board="`+board+`"`) {
			t.Errorf("--metrics-addr lost the per-board series:\n%s", grepLines(string(body), "board="))
		}
	}
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
