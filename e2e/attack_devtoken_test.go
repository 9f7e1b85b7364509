package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestDevTokenLoopbackPeer is issue 33 B11: the dev token endpoint checks
// the client's address, not only the Host it names: a client that is not
// on this machine (here, as a trusted proxy forwards it) gets 403 even
// with Host: localhost. Before the fix it got an admin token.
func TestDevTokenLoopbackPeer(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOpts{Auth: []string{"--dev"}, Args: []string{"--trusted-proxies", "127.0.0.1"}})
	mint := func(forwardedFor string) (int, string) {
		req, _ := http.NewRequest("POST", g.HTTP()+"/api/v1/dev/token", strings.NewReader(`{"sub":"x","role":"admin"}`))
		req.Host = "localhost"
		if forwardedFor != "" {
			req.Header.Set("X-Forwarded-For", forwardedFor)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := mint("198.51.100.7"); st != 403 || strings.Contains(body, "token\":\"ey") {
		t.Errorf("a network client with Host: localhost: %d %s, want 403", st, body)
	}
	if st, body := mint(""); st != 200 {
		t.Errorf("a loopback client: %d %s, want a token", st, body)
	}
}
