package api_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/api"
)

// TestBothServersAlike checks each door's wiring: the gates are one
// function (gate.go), but each door hands them the request and its body
// and writes their answer, so the same requests go to the API as the
// gateway serves it (fasthttp for API connections) and as net/http serves
// it on a connection that began with a page (the adaptor).
func TestBothServersAlike(t *testing.T) {
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
	for _, how := range []struct {
		name string
		via  via
	}{{"fasthttp", viaGateway}, {"adaptor", viaAdaptor}} {
		t.Run(how.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvVia(t, how.via, memEngine().new(t), func(c *setup) { c.MaxBody = 1024; c.Rate = 3 })
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
		})
	}
}

// TestHandOver: a client that asks an API connection for something else
// (here /metrics, which only net/http serves) is answered by net/http on
// the same connection, a request pipelined behind it included.
func TestHandOver(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memEngine().new(t))
	c, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	read := func(what string) (*http.Response, string) {
		t.Helper()
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return res, string(b)
	}
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	if res, body := read("healthz"); res.StatusCode != 200 {
		t.Fatalf("healthz: %d %s", res.StatusCode, body)
	}
	io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	res, body := read("metrics")
	if res.StatusCode != 200 || !strings.Contains(body, "wsgateway_api_requests_total") {
		t.Fatalf("metrics after an API request on one connection: %d %s", res.StatusCode, body)
	}
	if res, body := read("pipelined healthz"); res.StatusCode != 200 || !strings.Contains(body, "ok") {
		t.Fatalf("the request pipelined behind the hand-over: %d %s", res.StatusCode, body)
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
