package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wsgateway/wsgateway/api"
	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	store := memEngine().new(t)
	v, err := auth.New(context.Background(), auth.Config{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if _, err := api.New(api.Deps{Store: store, Verifier: v, Registry: reg}, api.Config{}); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tc := range []struct {
		name string
		deps api.Deps
		cfg  api.Config
	}{
		{"no store", api.Deps{Verifier: v}, api.Config{}},
		{"no verifier", api.Deps{Store: store}, api.Config{}},
		{"check without ping", api.Deps{Store: store, Verifier: v, Ready: []api.Check{{Name: "store"}}}, api.Config{}},
		{"check without name", api.Deps{Store: store, Verifier: v, Ready: []api.Check{{Ping: store.Ping}}}, api.Config{}},
		{"negative body", api.Deps{Store: store, Verifier: v}, api.Config{MaxBody: -1}},
		{"empty dev secret", api.Deps{Store: store, Verifier: v}, api.Config{DevSecret: []byte{}}},
		{"collectors registered twice", api.Deps{Store: store, Verifier: v, Registry: reg}, api.Config{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := api.New(tc.deps, tc.cfg)
			if err == nil || !strings.HasPrefix(err.Error(), "api: ") {
				t.Errorf("err %v, want an api: error", err)
			}
		})
	}
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	// Liveness does not depend on the store.
	f := &flaky{Store: memEngine().new(t)}
	f.down.Store(true)
	e := newEnv(t, f)
	r := e.do("GET", "/healthz", "", "")
	r.wantStatus(t, 200)
	if strings.TrimSpace(string(r.body)) != `{"status":"ok"}` {
		t.Errorf("body %s", r.body)
	}
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	ok := func(context.Context) error { return nil }
	broken := func(context.Context) error { return errors.New("connection refused") }
	hangs := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	for _, tc := range []struct {
		name    string
		checks  []api.Check
		status  int
		failing []string
	}{
		{"no checks", nil, 200, nil},
		{"all answer", []api.Check{{"store", ok}, {"bus", ok}}, 200, nil},
		{"store down", []api.Check{{"store", broken}, {"bus", ok}}, 503, []string{"store"}},
		{"both down", []api.Check{{"store", broken}, {"bus", broken}}, 503, []string{"store", "bus"}},
		{"bus hangs", []api.Check{{"store", ok}, {"bus", hangs}}, 503, []string{"bus"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, memEngine().new(t), func(c *setup) { c.Ready = tc.checks })
			r := e.do("GET", "/readyz", "", "")
			r.wantStatus(t, tc.status)
			if tc.status == 503 && (bytes.Contains(r.body, []byte("refused")) || bytes.Contains(r.body, []byte(`"errors"`))) {
				t.Errorf("anonymous /readyz tells the reasons: %s", r.body)
			}
			// The reasons are for admins only.
			r = e.do("GET", "/readyz", adminToken(t), "")
			r.wantStatus(t, tc.status)
			if tc.status == 200 {
				if strings.TrimSpace(string(r.body)) != `{"status":"ready"}` {
					t.Errorf("body %s", r.body)
				}
				return
			}
			var body struct {
				Status  string            `json:"status"`
				Failing []string          `json:"failing"`
				Errors  map[string]string `json:"errors"`
			}
			r.json(t, &body)
			if body.Status != "unavailable" || strings.Join(body.Failing, ",") != strings.Join(tc.failing, ",") ||
				len(body.Errors) != len(tc.failing) {
				t.Errorf("body %s", r.body)
			}
			for _, name := range tc.failing {
				if body.Errors[name] == "" {
					t.Errorf("no error text for %s: %s", name, r.body)
				}
			}
		})
	}
}

// TestUnavailable is R13 over REST: an unreachable store is a prompt 503
// with code unavailable, and /readyz says so; both recover by themselves.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	f := &flaky{Store: memEngine().new(t)}
	e := newEnv(t, f, func(c *setup) { c.Ready = []api.Check{{Name: "store", Ping: f.Ping}} })
	e.putBoard("u", "")
	tok := serverToken(t)
	f.down.Store(true)
	for _, path := range []string{"/api/v1/boards", "/api/v1/boards/u", "/api/v1/boards/u/top",
		"/api/v1/boards/u/members/a"} {
		r := e.do("GET", path, tok, "")
		r.wantError(t, 503, "unavailable")
		if r.header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", path)
		}
	}
	e.do("POST", "/api/v1/boards/u/scores", tok, `[{"id":"1","member":"a","delta":1}]`).wantError(t, 503, "unavailable")
	e.do("GET", "/readyz", "", "").wantStatus(t, 503)
	f.down.Store(false)
	e.do("GET", "/api/v1/boards/u/top", tok, "").wantStatus(t, 200)
	// /readyz answers from a round of checks up to a second old.
	testenv.Until(t, 5*time.Second, "/readyz ready again", func() bool { return e.do("GET", "/readyz", "", "").status == 200 })
}

// TestReadyzCached (issue 33 B8): a flood of /readyz pings the store at
// most once a second, whatever Authorization the probes carry.
func TestReadyzCached(t *testing.T) {
	t.Parallel()
	var pings atomic.Int32
	e := newEnv(t, memEngine().new(t), func(c *setup) {
		c.Ready = []api.Check{{Name: "store", Ping: func(context.Context) error { pings.Add(1); return nil }}}
	})
	began := time.Now()
	const n = 50
	for i := range n {
		tok := ""
		if i%2 == 1 {
			tok = "bogus"
		}
		e.do("GET", "/readyz", tok, "").wantStatus(t, 200)
	}
	if most := int32(time.Since(began)/time.Second) + 1; pings.Load() > most {
		t.Fatalf("%d probes pinged the store %d times in %s, want at most %d", n, pings.Load(), time.Since(began), most)
	}
}

// slowStore never answers Top before its context ends.
type slowStore struct{ rank.Store }

func (s slowStore) Top(ctx context.Context, _ string, _ rank.PeriodSel, _, _ int) (rank.Page, error) {
	<-ctx.Done()
	return rank.Page{}, ctx.Err()
}

func TestStoreTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, slowStore{memEngine().new(t)}, func(c *setup) { c.Timeout = 50 * time.Millisecond })
	e.putBoard("slow", "")
	e.do("GET", "/api/v1/boards/slow/top", serverToken(t), "").wantError(t, 503, "unavailable")
}

func TestRouting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memEngine().new(t))
	adm := adminToken(t)
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/api/v1/nope", 404},
		{"GET", "/api/v2/boards", 404},
		{"GET", "/api/v1/boards/a/b/c/d", 404},
		{"POST", "/api/v1/dev/token", 404}, // no DevSecret
		{"PATCH", "/api/v1/boards/x/top", 405},
		{"POST", "/healthz", 405},
		{"BREW", "/api/v1/boards", 405},
	} {
		code := "bad_request"
		if tc.status == 404 {
			code = "not_found" // R30
		}
		r := e.do(tc.method, tc.path, adm, "")
		r.wantError(t, tc.status, code)
	}
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memEngine().new(t), func(c *setup) { c.MaxBody = 1024 })
	e.putBoard("lim", "")
	tok := serverToken(t)
	big := `[` + strings.Repeat(`{"id":"x","member":"m","delta":1},`, 100) + `{"id":"y","member":"m","delta":1}]`
	path := "/api/v1/boards/lim/scores"
	// Declared length.
	e.do("POST", path, tok, big).wantError(t, 413, "bad_request")
	// Chunked: the length is unknown until the body has been read.
	req := newRequest(t, e, "POST", path, "")
	req.Body = io.NopCloser(strings.NewReader(big))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+tok)
	e.send(req).wantError(t, 413, "bad_request")
	// A chunked body within the limit still arrives whole.
	req = newRequest(t, e, "POST", path, "")
	req.Body = io.NopCloser(strings.NewReader(`[{"id":"z","member":"m","delta":2}]`))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+tok)
	r := e.send(req)
	r.wantStatus(t, 200)
	var got []ack
	r.json(t, &got)
	if len(got) != 1 || got[0].Score != 2 {
		t.Errorf("chunked body: %s", r.body)
	}
	e.do("PUT", "/api/v1/boards/lim", adminToken(t), `{"title":"`+strings.Repeat("t", 2000)+`"}`).
		wantError(t, 413, "bad_request")
}

func TestDevToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memEngine().new(t), func(c *setup) { c.DevSecret = testSecret; c.DevTTL = 2 * time.Hour })
	e.putBoard("d1", "")
	e.putBoard("d2", "")
	mint := func(body string) (string, int64) {
		t.Helper()
		r := e.do("POST", "/api/v1/dev/token", "", body)
		r.wantStatus(t, 200)
		var out struct {
			Token string `json:"token"`
			Exp   int64  `json:"exp"`
		}
		r.json(t, &out)
		if out.Token == "" {
			t.Fatalf("no token: %s", r.body)
		}
		return out.Token, out.Exp
	}
	v, err := auth.New(context.Background(), auth.Config{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		body string
		want auth.Principal
		ttl  time.Duration
	}{
		{`{"sub":"alice"}`, auth.Principal{Member: "alice", Role: auth.Player}, 2 * time.Hour},
		{`{"sub":"bob","role":"admin","name":"Bob","ttl":"10m"}`, auth.Principal{Member: "bob", Role: auth.Admin, Name: "Bob"}, 10 * time.Minute},
		{`{"sub":"s1","role":"server","boards":["d1"],"ttl":"1h"}`, auth.Principal{Member: "s1", Role: auth.Server, Boards: []string{"d1"}}, time.Hour},
	} {
		tok, exp := mint(tc.body)
		p, err := v.Verify(context.Background(), tok)
		if err != nil {
			t.Fatalf("%s: minted token does not verify: %v", tc.body, err)
		}
		if p.Member != tc.want.Member || p.Role != tc.want.Role || p.Name != tc.want.Name ||
			strings.Join(p.Boards, ",") != strings.Join(tc.want.Boards, ",") || (p.Boards == nil) != (tc.want.Boards == nil) {
			t.Errorf("%s: principal %+v", tc.body, p)
		}
		if exp != p.Expiry.Unix() {
			t.Errorf("%s: exp %d, token says %d", tc.body, exp, p.Expiry.Unix())
		}
		if d := time.Until(p.Expiry) - tc.ttl; d > 5*time.Second || d < -5*time.Second {
			t.Errorf("%s: expires in %s, want %s", tc.body, time.Until(p.Expiry), tc.ttl)
		}
		if strings.Contains(e.logs.String(), tok) {
			t.Error("a minted token reached the log")
		}
	}
	// The minted token works on the API, boards claim included.
	tok, _ := mint(`{"sub":"s1","role":"server","boards":["d1"]}`)
	e.do("GET", "/api/v1/boards/d1", tok, "").wantStatus(t, 200)
	e.do("GET", "/api/v1/boards/d2", tok, "").wantError(t, 403, "forbidden")

	for _, body := range []string{
		``, `[]`, `{}`, `{"sub":""}`, `{"sub":"a b"}`, `{"sub":"alice","role":"root"}`,
		`{"sub":"alice","ttl":"forever"}`, `{"sub":"alice","ttl":"-1h"}`, `{"sub":"alice","ttl":"9000h"}`,
		`{"sub":"alice","name":"` + strings.Repeat("n", 33) + `"}`, `{"sub":"alice","boards":["a*"]}`,
		`{"sub":"alice","admin":true}`,
	} {
		e.do("POST", "/api/v1/dev/token", "", body).wantError(t, 400, "bad_request")
	}
}

func TestMetricsAndLogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memEngine().new(t))
	e.putBoard("mx", "")
	tok := serverToken(t)
	e.scores("mx", `[{"id":"1","member":"a","delta":1},{"id":"1","member":"a","delta":1},{"id":"2","member":"a","delta":1.5}]`)
	e.do("GET", "/api/v1/boards/mx/top", tok, "").wantStatus(t, 200)
	e.do("GET", "/api/v1/boards/mx/top?limit=0", tok, "").wantStatus(t, 400)
	e.do("GET", "/api/v1/boards", "", "").wantStatus(t, 401)
	e.do("GET", "/api/no/such/path/123", "", "").wantStatus(t, 404)

	r := e.do("GET", "/metrics", "", "")
	r.wantStatus(t, 200)
	text := string(r.body)
	for _, want := range []string{
		`wsgateway_api_requests_total{route="GET /api/v1/boards/:board/top",status="200"} 1`,
		`wsgateway_api_requests_total{route="GET /api/v1/boards/:board/top",status="400"} 1`,
		`wsgateway_api_requests_total{route="POST /api/v1/boards/:board/scores",status="200"} 1`,
		`wsgateway_api_requests_total{route="GET /api/v1/boards",status="401"} 1`,
		`wsgateway_api_requests_total{route="unmatched",status="404"} 1`,
		`wsgateway_api_request_duration_seconds_count{route="GET /api/v1/boards/:board/top"} 2`,
		`wsgateway_api_applied_events_total 1`,
		`wsgateway_api_errors_total{code="invalid_score"} 1`,
		`wsgateway_api_errors_total{code="unauthorized"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(text, "/no/such/path") {
		t.Error("a raw path became a metric label")
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `route="GET /api/v1/boards/:board/top" status=200`) || !strings.Contains(logs, "method=GET") ||
		!strings.Contains(logs, "duration=") {
		t.Errorf("request log lines missing: %s", logs)
	}
	if strings.Contains(logs, tok) || strings.Contains(strings.ToLower(logs), "bearer") {
		t.Error("a token reached the log")
	}
}

// TestErrorShape: every error body is exactly {"error":{"code","message"}}.
func TestErrorShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memEngine().new(t))
	r := e.do("GET", "/api/v1/boards/zz", adminToken(t), "")
	var raw map[string]map[string]json.RawMessage
	r.json(t, &raw)
	if len(raw) != 1 || len(raw["error"]) != 2 || raw["error"]["code"] == nil || raw["error"]["message"] == nil {
		t.Errorf("error body %s", r.body)
	}
	if r.status != http.StatusNotFound {
		t.Errorf("status %d", r.status)
	}
}

// panicStore panics in Top, as a bug would.
type panicStore struct{ rank.Store }

func (panicStore) Top(context.Context, string, rank.PeriodSel, int, int) (rank.Page, error) {
	panic("bug")
}

func TestPanicIsInternal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, panicStore{memEngine().new(t)})
	e.putBoard("p", "")
	eb := e.do("GET", "/api/v1/boards/p/top", serverToken(t), "").wantError(t, 500, "internal")
	if eb.Error.Message != "internal error" {
		t.Errorf("internal details leaked: %q", eb.Error.Message)
	}
	// The server keeps serving.
	e.do("GET", "/healthz", "", "").wantStatus(t, 200)
	e.do("HEAD", "/healthz", "", "").wantStatus(t, 200)
	if n := counter(t, e.reg, "wsgateway_api_panics_total"); n != 1 {
		t.Errorf("panics counted %v, want 1", n)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "panicStore.Top") {
		t.Errorf("the panic's stack is not logged:\n%s", logs)
	}
}
