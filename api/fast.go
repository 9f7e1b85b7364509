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

// The REST routes are also served natively by fiber's own fasthttp server
// (ServeFast), without the adaptor's per-request conversion between
// net/http and fasthttp types, which cost more than the handlers. The
// gateway hands that server the connections whose first request is for the
// API (internal/connsplit); a connection that later asks for anything else
// (a page, the WebSocket upgrade) is handed over to net/http with the bytes
// fasthttp already read of it (Hand). Both servers answer REST requests
// alike: they call the same gates (gate.go) before fiber sees the request.

// FastConfig configures ServeFast.
type FastConfig struct {
	// Hand takes a connection whose client asked for a path that is not
	// the API's (Owns), with the bytes read of it so far, the request
	// itself first. Required.
	Hand func(c net.Conn, read []byte)
	// ReadHeaderTimeout bounds reading a request's headers; zero: 10s.
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
// the routes ServeFast answers itself: /api/…, /healthz and /readyz.
// /metrics stays with net/http (promhttp).
func Owns(target []byte) bool {
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		target = target[:i]
	}
	return bytes.HasPrefix(target, []byte("/api/")) ||
		string(target) == "/healthz" || string(target) == "/readyz"
}

// ServeFast serves the API's routes on ln with fiber's fasthttp server
// until ShutdownFast (or ln fails); it returns nil once shut down.
func (a *API) ServeFast(ln net.Listener, cfg FastConfig) error {
	if cfg.Hand == nil {
		return errors.New("api: FastConfig.Hand is required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.ReadHeaderTimeout, 10*time.Second)
	def(&cfg.ReadTimeout, 30*time.Second)
	def(&cfg.WriteTimeout, 30*time.Second)
	def(&cfg.IdleTimeout, 120*time.Second)
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = 16 << 10
	}
	srv := a.app.Server()
	app := a.app.Handler() // builds the route tree, as app.Listener would
	srv.Handler = func(ctx *fasthttp.RequestCtx) { a.serveFast(ctx, app, cfg.Hand) }
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
	srv.KeepHijackedConns = true // a handed-over connection lives on in net/http
	srv.CloseOnShutdown = true
	srv.Logger = fastLogger{a.log}
	return srv.Serve(ln)
}

// ShutdownFast stops ServeFast: no new connections, idle ones closed, the
// requests in flight answered (with Connection: close) until ctx ends.
func (a *API) ShutdownFast(ctx context.Context) error {
	return a.app.Server().ShutdownWithContext(ctx)
}

// serveFast is the fasthttp door: a request for another path is handed
// over to net/http; the API's own meet the gates (gate.go), then fiber.
func (a *API) serveFast(ctx *fasthttp.RequestCtx, app fasthttp.RequestHandler, hand func(net.Conn, []byte)) {
	h := &ctx.Request.Header
	if !Owns(h.RequestURI()) {
		a.handOver(ctx, hand)
		return
	}
	start := time.Now()
	// -1: chunked; -2: no length and no chunks, which fasthttp reads as
	// no body.
	length := int64(max(h.ContentLength(), -1))
	if h.ContentLength() == -2 {
		length = 0
	}
	v := a.admit(door{
		method: string(h.Method()), path: string(ctx.Path()), auth: string(h.Peek("Authorization")), length: length,
		client: func() string { return a.clientKey(ctx.RemoteAddr().String(), peekAll(h, "X-Forwarded-For")) },
		done:   ctx.Done(),
	})
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

// mayContinue is ServeFast's ContinueHandler.
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

// handOver gives the connection to net/http: this request, re-serialized
// from what fasthttp parsed (request line and raw headers), then whatever
// fasthttp had already buffered after it. A request with a body is not
// carried over (no page or upgrade has one): it is answered 404 and the
// connection closed.
func (a *API) handOver(ctx *fasthttp.RequestCtx, hand func(net.Conn, []byte)) {
	h := &ctx.Request.Header
	if cl := h.ContentLength(); cl > 0 || cl == -1 {
		a.answerFast(ctx, time.Now(), verdict{status: 404, route: "rejected", code: proto.CodeNotFound, msg: "not found"})
		return
	}
	raw := h.RawHeaders()
	req := make([]byte, 0, len(raw)+len(h.RequestURI())+32)
	req = append(req, h.Method()...)
	req = append(req, ' ')
	req = append(req, h.RequestURI()...)
	req = append(req, ' ')
	req = append(req, h.Protocol()...)
	req = append(req, "\r\n"...)
	req = append(req, raw...)
	if len(raw) == 0 {
		req = append(req, "\r\n"...)
	}
	conn := ctx.Conn()
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(hc net.Conn) {
		// hc reads fasthttp's buffer, then conn; a deadline in the past
		// stops it at the end of what was already read from the socket.
		if err := conn.SetReadDeadline(time.Unix(1, 0)); err != nil {
			conn.Close()
			return
		}
		var b [4096]byte
		for {
			n, err := hc.Read(b[:])
			req = append(req, b[:n]...)
			if err != nil {
				break
			}
		}
		if err := conn.SetReadDeadline(time.Time{}); err != nil {
			conn.Close()
			return
		}
		hand(conn, req)
	})
}

// fastLogger sends fasthttp's own messages (accept errors and the like)
// to the API's log.
type fastLogger struct{ log *slog.Logger }

func (l fastLogger) Printf(format string, args ...any) {
	l.log.Warn("api: " + fmt.Sprintf(format, args...))
}
