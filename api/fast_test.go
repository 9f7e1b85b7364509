package api_test

import (
	"io"
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/api"
)

// TestServeGates: the gates' answers as Serve writes them (status, code,
// headers), bodies declared and chunked, and the per-address bucket of
// requests without a valid token.
func TestServeGates(t *testing.T) {
	t.Parallel()
	tok := serverToken(t)
	big := `[` + strings.Repeat(`{"id":"x","member":"m","delta":1},`, 100) + `{"id":"y","member":"m","delta":1}]`
	type want struct {
		status int
		code   string // "" for a success
		header string // a header the answer must carry, "" for none
	}
	type req struct {
		name, method, path, tok, body string
		chunked                       bool
		want                          want
	}
	reqs := []req{
		{"healthz", "GET", "/healthz", "", "", false, want{200, "", ""}},
		{"one event", "POST", "/api/v1/boards/same/scores", tok, `{"id":"a","member":"m","delta":1}`, false, want{200, "", ""}},
		{"member read", "GET", "/api/v1/boards/same/members/m?around=5", tok, "", false, want{200, "", ""}},
		{"unknown method", "BREW", "/api/v1/boards", tok, "", false, want{405, "bad_request", ""}},
		{"declared length over the limit", "POST", "/api/v1/boards/same/scores", tok, big, false, want{413, "bad_request", ""}},
		{"chunked over the limit", "POST", "/api/v1/boards/same/scores", tok, big, true, want{413, "bad_request", ""}},
		{"chunked within the limit", "POST", "/api/v1/boards/same/scores", tok, `{"id":"c","member":"m","delta":1}`, true, want{200, "", ""}},
		{"body without a token", "POST", "/api/v1/boards/same/scores", "", `{"id":"b","member":"m","delta":1}`, false, want{401, "unauthorized", "Cache-Control"}},
		{"body with a bad token", "POST", "/api/v1/boards/same/scores", "x.y.z", `{"id":"b","member":"m","delta":1}`, false, want{401, "unauthorized", "Cache-Control"}},
	}
	e := newEnv(t, memEngine().new(t), func(c *setup) { c.MaxBody = 1024; c.Rate = 3 })
	e.putBoard("same", "")
	for _, r := range reqs {
		hr := newRequest(t, e, r.method, r.path, r.body)
		if r.tok != "" {
			hr.Header.Set("Authorization", "Bearer "+r.tok)
		}
		if r.chunked {
			hr.Body = io.NopCloser(strings.NewReader(r.body))
			hr.ContentLength = -1
		}
		got := e.send(hr)
		if r.want.code != "" {
			got.wantError(t, r.want.status, r.want.code)
			if ct := got.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("%s: Content-Type %q", r.name, ct)
			}
		} else if got.status != r.want.status {
			t.Errorf("%s: status %d, want %d; body %s", r.name, got.status, r.want.status, got.body)
		}
		if r.want.header != "" && got.header.Get(r.want.header) == "" {
			t.Errorf("%s: no %s header", r.name, r.want.header)
		}
	}
	// Requests without a valid token share the address's bucket
	// (burst 2 × Rate): a few more and it is empty.
	for i := 0; ; i++ {
		got := e.do("GET", "/api/v1/boards", "", "")
		if got.status == 429 {
			got.wantError(t, 429, "rate_limited")
			if got.header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
			break
		}
		got.wantError(t, 401, "unauthorized")
		if i == 8 {
			t.Fatal("no 429 after 8 more token-less requests at rate 3")
		}
	}
}

// TestOwns: the API's own paths, and nothing that shares a prefix.
func TestOwns(t *testing.T) {
	for target, want := range map[string]bool{
		"/api/v1/boards":          true,
		"/api/v1/boards?limit=10": true,
		"/healthz":                true,
		"/readyz?x":               true,
		"/metrics":                false,
		"/ws":                     false,
		"/":                       false,
		"/apix":                   false,
		"/healthzz":               false,
	} {
		if got := api.Owns([]byte(target)); got != want {
			t.Errorf("Owns(%q) = %v, want %v", target, got, want)
		}
	}
}
