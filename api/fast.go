package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/wsgateway/wsgateway/proto"
)

// The gateway's port has one server: fiber's own fasthttp server (Serve),
// which answers the API's routes natively (no net/http conversion per
// request) after the gates (gate.go), and hands every other request (the
// WebSocket upgrade, the pages, /metrics) to ServeConfig.Other.

// DefaultReadHeaderTimeout is ServeConfig.ReadHeaderTimeout's default.
const DefaultReadHeaderTimeout = 10 * time.Second

// ServeConfig configures Serve.
type ServeConfig struct {
	// Other answers the requests for paths that are not the API's (Owns).
	// It may hijack the connection (the WebSocket upgrade): the server then
	// leaves it open, its hijacker's to close. Required.
	Other fasthttp.RequestHandler
	// ReadHeaderTimeout bounds reading a request's headers; zero:
	// DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a request's body once its headers are in;
	// zero: 30s.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing an answer; zero: 30s.
	WriteTimeout time.Duration
	// IdleTimeout bounds the wait for a keep-alive connection's next
	// request; zero: 120s.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (a larger one is a 431);
	// zero: 16 KiB. fasthttp keeps a buffer this large per connection.
	MaxHeaderBytes int
}

// Owns reports whether a request-target (path and query as sent) is one of
// the API's routes: /api/…, /healthz and /readyz. /metrics is promhttp's,
// through ServeConfig.Other.
func Owns(target []byte) bool {
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		target = target[:i]
	}
	return bytes.HasPrefix(target, []byte("/api/")) ||
		string(target) == "/healthz" || string(target) == "/readyz"
}

// Serve serves ln with fiber's fasthttp server until Shutdown (or ln
// fails); it returns nil once shut down.
func (a *API) Serve(ln net.Listener, cfg ServeConfig) error {
	if cfg.Other == nil {
		return errors.New("api: ServeConfig.Other is required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&cfg.ReadTimeout, 30*time.Second)
	def(&cfg.WriteTimeout, 30*time.Second)
	def(&cfg.IdleTimeout, 120*time.Second)
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = 16 << 10
	}
	srv := a.app.Server()
	app := a.app.Handler() // builds the route tree, as app.Listener would
	srv.Handler = func(ctx *fasthttp.RequestCtx) {
		defer a.recoverRequest(ctx, time.Now())
		a.serve(ctx, app, cfg.Other)
	}
	// The body is read by serveFast, after the token (the gates' rule):
	// fasthttp reads at most 8 KiB of it ahead of the handler.
	srv.StreamRequestBody = true
	srv.DisablePreParseMultipartForm = true
	// serveFast answers an oversized declared body itself; above this
	// fasthttp would not even hand it over.
	srv.MaxRequestBodySize = int(a.cfg.MaxBody) + 1
	// Headers within ReadHeaderTimeout; then the body within ReadTimeout.
	srv.ReadTimeout = cfg.ReadHeaderTimeout
	srv.HeaderReceived = func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
		return fasthttp.RequestConfig{ReadTimeout: cfg.ReadTimeout}
	}
	// A client that waits for 100 Continue gets it only when the body
	// would be read: the token verifies and the length is within MaxBody.
	// Otherwise fasthttp answers 417 without reading the body, and the
	// client sends again without the wait (curl does) to meet the 401 or
	// 413 of serveFast.
	srv.ContinueHandler = a.mayContinue
	srv.WriteTimeout = cfg.WriteTimeout
	srv.IdleTimeout = cfg.IdleTimeout
	srv.ReadBufferSize = cfg.MaxHeaderBytes
	srv.KeepHijackedConns = true // an upgraded connection lives on in the hub
	srv.CloseOnShutdown = true
	srv.Logger = fastLogger{a.log}
	return srv.Serve(ln)
}

// Shutdown stops Serve: no new connections, idle ones closed, the
// requests in flight answered (with Connection: close) until ctx ends.
// Hijacked connections are their handlers' to close.
func (a *API) Shutdown(ctx context.Context) error {
	return a.app.Server().ShutdownWithContext(ctx)
}

// serve is the server's handler: the API's routes meet the gates
// (gate.go), then fiber; other paths go to other. None of those takes a
// body, so one that comes with a body is answered 404 unread.
func (a *API) serve(ctx *fasthttp.RequestCtx, app, other fasthttp.RequestHandler) {
	h := &ctx.Request.Header
	if !Owns(h.RequestURI()) {
		if cl := h.ContentLength(); cl > 0 || cl == -1 {
			a.answerFast(ctx, time.Now(), verdict{status: 404, route: "rejected", code: proto.CodeNotFound, msg: "not found"})
			return
		}
		other(ctx)
		return
	}
	start := time.Now()
	// -1: chunked; -2: no length and no chunks, which fasthttp reads as
	// no body.
	length := int64(max(h.ContentLength(), -1))
	if h.ContentLength() == -2 {
		length = 0
	}
	v := a.admit(ctx, length)
	if v.status != 0 {
		a.answerFast(ctx, start, v)
		return
	}
	defer v.slot.release()
	if v.verified {
		ctx.SetUserValue(verifiedKey, v.p) // authenticate needs not verify it again
	}
	if stream := ctx.RequestBodyStream(); length != 0 && stream != nil {
		buf, status, msg := a.readBody(stream, length, ctx.Conn().SetReadDeadline)
		if status != 0 {
			a.answerFast(ctx, start, reject(status, msg))
			return
		}
		defer a.putBody(buf)
		ctx.Request.SetBodyRaw(*buf)
	}
	app(ctx)
}

// peekAll is h's lines of header key, as strings.
func peekAll(h *fasthttp.RequestHeader, key string) []string {
	vs := h.PeekAll(key)
	if len(vs) == 0 {
		return nil
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// mayContinue is Serve's ContinueHandler.
func (a *API) mayContinue(h *fasthttp.RequestHeader) bool {
	if !Owns(h.RequestURI()) || bytes.HasPrefix(h.RequestURI(), []byte(devTokenPath)) {
		return true
	}
	if int64(h.ContentLength()) > a.cfg.MaxBody {
		return false
	}
	_, _, err := a.verifyEarly(string(h.Peek("Authorization")))
	return err == nil
}

// maxPooledBody is the largest body buffer kept for reuse; a rare large
// array's buffer is left to the collector.
const maxPooledBody = 64 << 10

func (a *API) getBody() *[]byte {
	if b, ok := a.bodies.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 1024)
	return &b
}

func (a *API) putBody(b *[]byte) {
	if cap(*b) <= maxPooledBody {
		*b = (*b)[:0]
		a.bodies.Put(b)
	}
}

// answerFast writes a gate's answer on fasthttp and closes the
// connection, the body unread.
func (a *API) answerFast(ctx *fasthttp.RequestCtx, start time.Time, v verdict) {
	ctx.SetConnectionClose()
	if v.status < 0 {
		return // the server shuts down
	}
	v.headers(ctx.Response.Header.Set)
	ctx.SetStatusCode(v.status)
	writeJSON(ctx, v.body())
	a.account(string(ctx.Method()), start, v)
}

// fastLogger sends fasthttp's own messages (accept errors and the like)
// to the API's log.
type fastLogger struct{ log *slog.Logger }

func (l fastLogger) Printf(format string, args ...any) {
	l.log.Warn("api: " + fmt.Sprintf(format, args...))
}
