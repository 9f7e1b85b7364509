package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/wsgateway/wsgateway/api"
	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
)

// engine makes a fresh, empty store for one test.
type engine struct {
	name string
	new  func(t testing.TB) rank.Store
}

func memEngine() engine {
	return engine{"memory", func(t testing.TB) rank.Store {
		s, err := memstore.New(rank.Hooks{}, memstore.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}}
}

// engines are the stores every end-to-end table runs against.
func engines() []engine { return []engine{memEngine(), redisEngine()} }

// forEngines runs f once per engine as parallel subtests.
func forEngines(t *testing.T, f func(t *testing.T, e engine)) {
	t.Helper()
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			f(t, e)
		})
	}
}

var testSecret = []byte("0123456789abcdef0123456789abcdef-api-tests")

// env is one API over a real HTTP server.
type env struct {
	t      testing.TB
	url    string // http://host:port
	client http.Client
	store  rank.Store
	reg    *prometheus.Registry
	logs   *testenv.LogBuffer
	mu     sync.Mutex // guards boards
	boards []boardEvent
}

type boardEvent struct {
	board   string
	deleted bool
}

// setup is what newEnv builds its API from; options change it.
type setup struct {
	api.Deps
	api.Config
}

type option func(*setup)

// newEnv serves an API on a loopback port as the gateway does (Serve),
// /metrics beside it; other paths are 404.
func newEnv(t testing.TB, store rank.Store, opts ...option) *env {
	t.Helper()
	v, err := auth.New(context.Background(), auth.Config{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: store, reg: prometheus.NewRegistry(), logs: &testenv.LogBuffer{}}
	cfg := setup{
		Deps:   api.Deps{Store: store, Verifier: v, Registry: e.reg, Boards: e},
		Config: api.Config{Logger: slog.New(slog.NewTextHandler(e.logs, nil))},
	}
	for _, o := range opts {
		o(&cfg)
	}
	a, err := api.New(cfg.Deps, cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.url = "http://" + ln.Addr().String()
	e.client.Transport = &http.Transport{}
	metrics := fasthttpadaptor.NewFastHTTPHandler(a.Metrics())
	other := func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) != "/metrics" {
			ctx.NotFound()
			return
		}
		metrics(ctx)
	}
	served := make(chan error, 1)
	go func() { served <- a.Serve(ln, api.ServeConfig{Other: other}) }()
	t.Cleanup(func() {
		e.client.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return e
}

// BoardChanged records what the API reports (api.BoardListener).
func (e *env) BoardChanged(board string, deleted bool) {
	e.mu.Lock()
	e.boards = append(e.boards, boardEvent{board, deleted})
	e.mu.Unlock()
}

// applied is how many fresh (non-duplicate) events the API counted as
// applied, read from its metric.
func (e *env) applied() int {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "wsgateway_api_applied_events_total" {
			return int(mf.GetMetric()[0].GetCounter().GetValue())
		}
	}
	e.t.Fatal("no wsgateway_api_applied_events_total metric")
	return 0
}

func (e *env) boardEvents() []boardEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]boardEvent(nil), e.boards...)
}

// token mints a token for sub with role and (when not nil) a boards claim.
func token(t testing.TB, sub string, role auth.Role, boards []string) string {
	t.Helper()
	tok, err := auth.MintHS256(testSecret, auth.Claims{Sub: sub, Role: role, Boards: boards})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func adminToken(t testing.TB) string  { return token(t, "root", auth.Admin, nil) }
func serverToken(t testing.TB) string { return token(t, "game", auth.Server, nil) }

// resp is one HTTP answer.
type resp struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request; tok "" sends no Authorization header.
func (e *env) do(method, path, tok, body string) resp {
	e.t.Helper()
	req := newRequest(e.t, e, method, path, body)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return e.send(req)
}

func (e *env) send(req *http.Request) resp {
	e.t.Helper()
	res, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp{res.StatusCode, res.Header, b}
}

// json decodes the body into v, failing the test on error.
func (r resp) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
}

type errBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		rank.Closed
	} `json:"error"`
}

// wantError checks status, the JSON error shape and its code.
func (r resp) wantError(t testing.TB, status int, code string) errBody {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	var eb errBody
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&eb); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	if eb.Error.Code != code || eb.Error.Message == "" {
		t.Fatalf("error %+v, want code %s and a message", eb.Error, code)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	return eb
}

func (r resp) wantStatus(t testing.TB, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
}

// putBoard creates a board with an admin token.
func (e *env) putBoard(id, body string) {
	e.t.Helper()
	e.do("PUT", "/api/v1/boards/"+id, adminToken(e.t), body).wantStatus(e.t, 200)
}

// ack is a REST score result: an ack or an error.
type ack struct {
	ID        string `json:"id"`
	Board     string `json:"board"`
	Member    string `json:"member"`
	Score     int64  `json:"score"`
	Rank      int64  `json:"rank"`
	PrevRank  *int64 `json:"prev_rank"`
	Duplicate bool   `json:"duplicate"`
	Seq       int64  `json:"seq"`
	Error     *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// scores posts a scores array with a server token and decodes the results.
func (e *env) scores(board, body string) []ack {
	e.t.Helper()
	r := e.do("POST", "/api/v1/boards/"+board+"/scores", serverToken(e.t), body)
	r.wantStatus(e.t, 200)
	var out []ack
	r.json(e.t, &out)
	return out
}

// flaky wraps a real store and makes chosen operations fail with
// rank.ErrUnavailable, as an unreachable Redis does.
type flaky struct {
	rank.Store
	down    atomic.Bool // every operation fails
	applyDn atomic.Bool // only Apply fails
	applies atomic.Int64
}

func (f *flaky) fail() error {
	if f.down.Load() {
		return rank.ErrUnavailable
	}
	return nil
}

func (f *flaky) GetBoard(ctx context.Context, id string) (rank.Board, error) {
	if err := f.fail(); err != nil {
		return rank.Board{}, err
	}
	return f.Store.GetBoard(ctx, id)
}

func (f *flaky) Boards(ctx context.Context) ([]rank.Board, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.Store.Boards(ctx)
}

func (f *flaky) Top(ctx context.Context, b string, p rank.PeriodSel, off, lim int) (rank.Page, error) {
	if err := f.fail(); err != nil {
		return rank.Page{}, err
	}
	return f.Store.Top(ctx, b, p, off, lim)
}

func (f *flaky) Ranks(ctx context.Context, b string, p rank.PeriodSel, m []string, around int) (rank.Ranks, error) {
	if err := f.fail(); err != nil {
		return rank.Ranks{}, err
	}
	return f.Store.Ranks(ctx, b, p, m, around)
}

func (f *flaky) Board(ctx context.Context, id string) (rank.Board, error) {
	if err := f.fail(); err != nil {
		return rank.Board{}, err
	}
	return f.Store.Board(ctx, id)
}

func (f *flaky) Apply(ctx context.Context, ev rank.Event, done rank.Done) {
	f.applies.Add(1)
	if f.applyDn.Load() {
		done(rank.Result{}, rank.ErrUnavailable)
		return
	}
	if err := f.fail(); err != nil {
		done(rank.Result{}, err)
		return
	}
	f.Store.Apply(ctx, ev, done)
}

func (f *flaky) Ping(ctx context.Context) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Store.Ping(ctx)
}

func newRequest(t testing.TB, e *env, method, path, body string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
