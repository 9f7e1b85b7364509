package e2e

import (
	"io"
	"net/http"
	"testing"
)

// hammer sends n requests one after another and counts their statuses.
func hammer(t *testing.T, n int, method, url string, hdr http.Header) map[int]int {
	t.Helper()
	counts := map[int]int{}
	for range n {
		req, _ := http.NewRequest(method, url, nil)
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		counts[resp.StatusCode]++
	}
	return counts
}

func forwarded(client string, auth string) http.Header {
	h := http.Header{"X-Forwarded-For": {client}}
	if auth != "" {
		h.Set("Authorization", auth)
	}
	return h
}

// TestRESTLimitBehindProxy is issue 33 B2 and B8: behind a trusted proxy
// the token-less rate limit keys on the forwarded client, not on the
// proxy (one client's flood does not limit the others); /healthz and
// /readyz are never limited; a bogus Authorization does not skip the
// limit on unknown routes. Before the fix every client behind the proxy
// shared one bucket and the health checks got 429.
func TestRESTLimitBehindProxy(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOpts{Args: []string{"--trusted-proxies", "127.0.0.1", "--rest-rate", "5"}}) // burst 10
	const n = 100
	flood := hammer(t, n, "GET", g.HTTP()+"/api/v1/boards", forwarded("198.51.100.7", ""))
	if flood[429] == 0 {
		t.Fatalf("token-less flood: %v, want 429s past the burst", flood)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		for _, auth := range []string{"", "Bearer bogus"} {
			if got := hammer(t, n, "GET", g.HTTP()+p, forwarded("198.51.100.7", auth)); got[200] != n {
				t.Errorf("%s from the flooding client (Authorization %q): %v, want %d × 200", p, auth, got, n)
			}
		}
	}
	if other := hammer(t, 1, "GET", g.HTTP()+"/api/v1/boards", forwarded("198.51.100.8", "")); other[401] != 1 {
		t.Errorf("another client behind the proxy: %v, want its own bucket (401)", other)
	}
	bogus := hammer(t, n, "GET", g.HTTP()+"/api/v1/nothing-here", forwarded("198.51.100.9", "Bearer bogus"))
	if bogus[429] == 0 {
		t.Errorf("unknown route with a bogus token: %v, want 429s past the burst", bogus)
	}
	t.Logf("flood %v; unknown route with a bogus token %v", flood, bogus)
}
