package web

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

func newServer(t *testing.T, cfg Config) *httptest.Server {
	t.Helper()
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, method, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func TestContentTypesAndCaching(t *testing.T) {
	t.Parallel()
	srv := newServer(t, Config{})
	tests := []struct {
		path, ctype, contains string
	}{
		{"/", "text/html; charset=utf-8", `src="/assets/spectator.js"`},
		{"/play", "text/html; charset=utf-8", `src="/assets/player.js"`},
		{"/lb-client.js", "text/javascript; charset=utf-8", "export class LBClient"},
		{"/assets/app.css", "text/css; charset=utf-8", "--bg:"},
		{"/assets/spectator.js", "text/javascript; charset=utf-8", "import { LBClient } from '/lb-client.js'"},
		{"/assets/player.js", "text/javascript; charset=utf-8", "just passed you"},
		{"/overlay", "text/html; charset=utf-8", `src="/assets/overlay.js"`},
		{"/?board=b&overlay=1", "text/html; charset=utf-8", `src="/assets/overlay.js"`},
		{"/assets/overlay.js", "text/javascript; charset=utf-8", "new RankTable("},
		{"/assets/overlay.css", "text/css; charset=utf-8", "--ov-accent"},
		{"/assets/board.js", "text/javascript; charset=utf-8", "export class RankTable"},
		{"/assets/common.js", "text/javascript; charset=utf-8", "/api/v1/dev/token"},
		{"/assets/icon.svg", "image/svg+xml", "<svg"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			res, body := get(t, http.MethodGet, srv.URL+tt.path, nil)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			if got := res.Header.Get("Content-Type"); got != tt.ctype {
				t.Errorf("Content-Type %q, want %q", got, tt.ctype)
			}
			if !strings.Contains(body, tt.contains) {
				t.Errorf("body lacks %q", tt.contains)
			}
			if got := res.Header.Get("Cache-Control"); got != "no-cache" {
				t.Errorf("Cache-Control %q, want no-cache", got)
			}
			etag := res.Header.Get("ETag")
			if !regexp.MustCompile(`^"[A-Za-z0-9_-]{16}"$`).MatchString(etag) {
				t.Fatalf("ETag %q is not a quoted content hash", etag)
			}
			// Revalidation with the tag costs a 304 and no body.
			res2, body2 := get(t, http.MethodGet, srv.URL+tt.path, map[string]string{"If-None-Match": etag})
			if res2.StatusCode != http.StatusNotModified || body2 != "" {
				t.Errorf("If-None-Match: status %d, %d bytes; want 304 and none", res2.StatusCode, len(body2))
			}
			res3, _ := get(t, http.MethodGet, srv.URL+tt.path, map[string]string{"If-None-Match": `"other", W/` + etag})
			if res3.StatusCode != http.StatusNotModified {
				t.Errorf("weak tag in a list: status %d, want 304", res3.StatusCode)
			}
			res4, _ := get(t, http.MethodGet, srv.URL+tt.path, map[string]string{"If-None-Match": `"stale"`})
			if res4.StatusCode != http.StatusOK {
				t.Errorf("stale tag: status %d, want 200", res4.StatusCode)
			}
			head, hbody := get(t, http.MethodHead, srv.URL+tt.path, nil)
			if head.StatusCode != http.StatusOK || hbody != "" || head.Header.Get("ETag") != etag {
				t.Errorf("HEAD: status %d, body %d bytes, ETag %q", head.StatusCode, len(hbody), head.Header.Get("ETag"))
			}
		})
	}
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	srv := newServer(t, Config{})
	for _, path := range []string{"/", "/play", "/lb-client.js", "/nope"} {
		res, _ := get(t, http.MethodGet, srv.URL+path, nil)
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self'", "connect-src 'self' ws: wss:", "frame-ancestors 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP %q allows inline code", path, csp)
		}
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", path, got)
		}
		if got := res.Header.Get("Referrer-Policy"); got != "no-referrer" {
			t.Errorf("%s: Referrer-Policy %q", path, got)
		}
		if got := res.Header.Get("X-Frame-Options"); got != "SAMEORIGIN" {
			t.Errorf("%s: X-Frame-Options %q, want SAMEORIGIN", path, got)
		}
	}
}

func TestFrameAncestors(t *testing.T) {
	t.Parallel()
	srv := newServer(t, Config{FrameAncestors: []string{"https://cup.example", "https://*.league.example:8443", "http://127.0.0.1:9000"}})
	res, _ := get(t, http.MethodGet, srv.URL+"/overlay", nil)
	csp := res.Header.Get("Content-Security-Policy")
	want := "frame-ancestors 'self' https://cup.example https://*.league.example:8443 http://127.0.0.1:9000"
	if !strings.HasSuffix(csp, want) || strings.Count(csp, "frame-ancestors") != 1 {
		t.Errorf("CSP %q does not end with %q", csp, want)
	}
	if got := res.Header.Get("X-Frame-Options"); got != "" {
		t.Errorf("X-Frame-Options %q beside a frame-ancestors list", got)
	}
	for _, bad := range []string{"", "https://a.example; script-src *", "https://a.example https://b.example", "'unsafe-inline'", "javascript:x", "https://a.example/path"} {
		if _, err := New(Config{FrameAncestors: []string{bad}}); err == nil {
			t.Errorf("frame ancestor %q accepted", bad)
		}
	}
}

// The CSP forbids inline script and style; the pages must not need them.
func TestPagesHaveNoInlineCode(t *testing.T) {
	t.Parallel()
	inlineScript := regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`)
	for _, name := range []string{"static/index.html", "static/play.html", "static/overlay.html"} {
		b, err := static.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if inlineScript.MatchString(s) {
			t.Errorf("%s has an inline script", name)
		}
		for _, bad := range []string{"<style", " style=", " onclick=", " onload=", " onsubmit=", "http://", "https://"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q (inline code or an external resource)", name, bad)
			}
		}
	}
}

func TestNotFoundAndMethods(t *testing.T) {
	t.Parallel()
	srv := newServer(t, Config{})
	tests := []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/nope", http.StatusNotFound},
		{http.MethodGet, "/assets/", http.StatusNotFound},
		{http.MethodGet, "/assets/missing.js", http.StatusNotFound},
		{http.MethodGet, "/static/index.html", http.StatusNotFound},
		{http.MethodGet, "/assets/../lb-client.js", http.StatusNotFound}, // no dot-segment games: exact paths only
		{http.MethodGet, "/play/", http.StatusNotFound},
		{http.MethodPost, "/", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/lb-client.js", http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		res, _ := get(t, tt.method, srv.URL+tt.path, nil)
		if res.StatusCode != tt.status {
			t.Errorf("%s %s: status %d, want %d", tt.method, tt.path, res.StatusCode, tt.status)
		}
		if tt.status == http.StatusMethodNotAllowed && res.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", tt.method, tt.path, res.Header.Get("Allow"))
		}
	}
}

func TestDevFlagReachesThePages(t *testing.T) {
	t.Parallel()
	for _, dev := range []bool{false, true} {
		srv := newServer(t, Config{Dev: dev})
		want := `<meta name="lb-dev" content="false">`
		if dev {
			want = `<meta name="lb-dev" content="true">`
		}
		var etags []string
		for _, path := range []string{"/", "/play"} {
			res, body := get(t, http.MethodGet, srv.URL+path, nil)
			if !strings.Contains(body, want) {
				t.Errorf("dev=%v %s: lacks %s", dev, path, want)
			}
			if strings.Contains(body, devMarker) {
				t.Errorf("dev=%v %s: marker left in the page", dev, path)
			}
			etags = append(etags, res.Header.Get("ETag"))
		}
		if etags[0] == etags[1] {
			t.Errorf("dev=%v: / and /play share the ETag %s", dev, etags[0])
		}
	}
	// The ETag hashes the served bytes, so dev and non-dev pages differ.
	a, _ := get(t, http.MethodGet, newServer(t, Config{}).URL+"/", nil)
	b, _ := get(t, http.MethodGet, newServer(t, Config{Dev: true}).URL+"/", nil)
	if a.Header.Get("ETag") == b.Header.Get("ETag") {
		t.Error("dev and non-dev spectator pages share an ETag")
	}
}

// TestClientJS runs lb-client.js's unit tests (client_test.mjs) under Node's
// test runner: reconnect with backoff, re-send with the same id,
// re-subscribe, request/response matching, auth refresh.
func TestClientJS(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node (for lb-client.js tests)", "apt-get install -y nodejs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "--test", "client_test.mjs").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test client_test.mjs: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "# fail 0") {
		t.Fatalf("unexpected node output:\n%s", out)
	}
	t.Logf("%s", lastLines(string(out), 9))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Every embedded file is reachable, and every route has its file.
func TestEveryFileIsRouted(t *testing.T) {
	t.Parallel()
	routed := map[string]bool{}
	for _, name := range routes() {
		routed[name] = true
	}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !routed[p] {
			t.Errorf("%s is embedded but has no URL", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{}); err != nil {
		t.Fatal(err)
	}
}
