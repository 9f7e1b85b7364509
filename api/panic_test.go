package api_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/wsgateway/wsgateway/api"
	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
)

// panicVerifier panics on the token "boom", as a bug in a gate would.
type panicVerifier struct{ api.Verifier }

func (v panicVerifier) Verify(ctx context.Context, token string) (auth.Principal, error) {
	if token == "boom" {
		panic("injected for the test")
	}
	return v.Verifier.Verify(ctx, token)
}

// TestPanicInGate: a panic in the gates before fiber (the token of a
// request with a body is verified there) is answered 500 internal,
// logged with its stack and counted, and the server serves on.
func TestPanicInGate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memEngine().new(t), func(s *setup) { s.Verifier = panicVerifier{s.Verifier} })
	e.putBoard("p", "")
	eb := e.do("POST", "/api/v1/boards/p/scores", "boom", `{"id":"e1","member":"m","delta":1}`).wantError(t, 500, "internal")
	if eb.Error.Message != "internal error" {
		t.Errorf("internal details leaked: %q", eb.Error.Message)
	}
	e.do("GET", "/api/v1/boards/p/top", serverToken(t), "").wantStatus(t, 200)
	if n := counter(t, e.reg, "wsgateway_api_panics_total"); n != 1 {
		t.Errorf("panics counted %v, want 1", n)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "injected for the test") || !strings.Contains(logs, "api.(*API).admit") {
		t.Errorf("the panic or its stack is not logged:\n%s", logs)
	}
}

// TestPanicInOther: a panic in what Serve hands the paths that are not the
// API's (the pages and /metrics, through fasthttp's adaptor) is answered
// 500 internal too, and the server serves on.
func TestPanicInOther(t *testing.T) {
	t.Parallel()
	v, err := auth.New(context.Background(), auth.Config{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	logs := &testenv.LogBuffer{}
	a, err := api.New(api.Deps{Store: memEngine().new(t), Verifier: v, Registry: reg},
		api.Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		served <- a.Serve(ln, api.ServeConfig{Other: func(ctx *fasthttp.RequestCtx) {
			if string(ctx.Path()) == "/boom" {
				panic("injected for the test")
			}
			ctx.WriteString("page")
		}})
	}()
	t.Cleanup(func() {
		if err := a.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		<-served
	})
	get := func(path string) (int, string) {
		t.Helper()
		res, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if status, body := get("/boom"); status != 500 || !strings.Contains(body, `"code":"internal"`) {
		t.Errorf("a panic in Other: %d %s, want 500 internal", status, body)
	}
	if status, body := get("/page"); status != 200 || body != "page" {
		t.Errorf("after the panic: %d %s", status, body)
	}
	if n := counter(t, reg, "wsgateway_api_panics_total"); n != 1 {
		t.Errorf("panics counted %v, want 1", n)
	}
}

// counter is the value of an unlabelled counter of reg.
func counter(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}
