package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/wsgateway/wsgateway/api"
	"github.com/wsgateway/wsgateway/auth"
)

func corsRequest(t *testing.T, method, url, origin, token string, preflight bool) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", origin)
	if preflight {
		req.Header.Set("Access-Control-Request-Method", "GET")
		req.Header.Set("Access-Control-Request-Headers", "authorization")
	} else if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

func TestCORS(t *testing.T) {
	t.Parallel()
	store := memEngine().new(t)
	adm := adminToken(t)
	const allowed, other = "https://cup.example", "https://evil.example"

	off := newEnv(t, store)
	on := newEnv(t, store, func(c *setup) { c.CORSOrigins = []string{allowed, "http://127.0.0.1:9000"} })
	on.do("PUT", "/api/v1/boards/cors", adm, `{"title":"CORS"}`)

	// Off by default: no header for anyone.
	res := corsRequest(t, "GET", off.url+"/api/v1/boards/cors/top", allowed, adm, false)
	if got := res.Header.Get("Access-Control-Allow-Origin"); got != "" || res.StatusCode != 200 {
		t.Errorf("off: status %d, Allow-Origin %q", res.StatusCode, got)
	}
	// On: the listed origin may read, with the Authorization header.
	res = corsRequest(t, "OPTIONS", on.url+"/api/v1/boards/cors/top", allowed, "", true)
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != allowed {
		t.Errorf("preflight: status %d, Allow-Origin %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
	if h := res.Header.Get("Access-Control-Allow-Headers"); h == "" {
		t.Errorf("preflight: no Allow-Headers")
	}
	if c := res.Header.Get("Access-Control-Allow-Credentials"); c != "" {
		t.Errorf("preflight: Allow-Credentials %q: tokens travel in a header, cookies never", c)
	}
	res = corsRequest(t, "GET", on.url+"/api/v1/boards/cors/top", allowed, adm, false)
	if res.StatusCode != 200 || res.Header.Get("Access-Control-Allow-Origin") != allowed {
		t.Errorf("GET: status %d, Allow-Origin %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
	// Another origin gets no grant (the browser then hides the answer).
	res = corsRequest(t, "GET", on.url+"/api/v1/boards/cors/top", other, adm, false)
	if got := res.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("other origin: Allow-Origin %q", got)
	}
	// Health checks stay outside.
	res = corsRequest(t, "GET", on.url+"/healthz", allowed, "", false)
	if got := res.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("/healthz: Allow-Origin %q", got)
	}

	for _, bad := range []string{"cup.example", "https://cup.example/", "https://a.example,https://b.example", "ftp://x.example", "https://u@x.example"} {
		v, err := auth.New(context.Background(), auth.Config{Secret: testSecret})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := api.New(api.Deps{Store: store, Verifier: v}, api.Config{CORSOrigins: []string{bad}}); err == nil {
			t.Errorf("origin %q accepted", bad)
		}
	}
}
