// Package hijack serves a net/http handler that may take over its
// connection (coder/websocket's Accept hijacks it for the WebSocket) from a
// fasthttp server, so that the gateway's port has one server.
//
// fasthttp lets a handler take a connection only after the handler has
// returned, while net/http's Hijack hands it over during the call. So the
// net/http handler runs on a goroutine of its own: when it answers without
// hijacking, the answer is copied into fasthttp's response; when it calls
// Hijack, the fasthttp handler returns with a hijack handler that passes
// the connection back to it.
package hijack

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"time"

	"github.com/valyala/fasthttp"
)

// wait bounds how long Hijack waits for fasthttp to hand the connection
// over: it does so right after the handler returns, unless the connection
// failed meanwhile.
const wait = 10 * time.Second

// Handler serves h from fasthttp. h's request is a copy that outlives the
// fasthttp request (the hijacked connection's handler may keep its
// strings); it has no body, so Handler is for requests that carry none
// (a WebSocket upgrade). Its context ends when h returns. Its protocol
// version is the request line's, as net/http parses it: a line without
// one is HTTP/1.0 (fasthttp's reading), a version net/http does not
// parse is answered 400 and one other than 1.x 505, before h.
//
// A panic in h is h's to recover; one that escapes it is logged to log
// with its stack and answered 500 (the connection closed), or, once h
// took the connection, the connection is closed: it ends h's request,
// not the server.
func Handler(h http.Handler, log *slog.Logger) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		r, status := request(ctx)
		if status != 0 {
			ctx.Error(http.StatusText(status), status)
			return
		}
		w := &writer{header: http.Header{}, taking: make(chan struct{}), conn: make(chan hijacked), gaveUp: make(chan struct{})}
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				if v := recover(); v != nil {
					log.Error("hijack: panic serving a request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
					w.crashed = true
					if w.got != nil {
						w.got.Close() // h took it
					}
				}
			}()
			reqCtx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h.ServeHTTP(w, r.WithContext(reqCtx))
		}()
		select {
		case <-done:
			if w.crashed {
				ctx.Error("internal error\n", fasthttp.StatusInternalServerError)
				ctx.SetConnectionClose()
				return
			}
			w.answer(&ctx.Response)
		case <-w.taking:
			raw := ctx.Conn()
			ctx.HijackSetNoResponse(true) // Hijack writes the head itself
			ctx.Hijack(func(hc net.Conn) { w.hand(release(hc, raw)) })
		}
	}
}

// request copies what h needs of ctx's request; status is the answer
// instead when it is not one net/http would hand a handler.
func request(ctx *fasthttp.RequestCtx) (r *http.Request, status int) {
	uri := string(ctx.RequestURI())
	u, err := url.ParseRequestURI(uri)
	proto := string(ctx.Request.Header.Protocol())
	major, minor, ok := http.ParseHTTPVersion(proto)
	switch {
	case err != nil || !ok:
		return nil, http.StatusBadRequest
	case major != 1:
		return nil, http.StatusHTTPVersionNotSupported
	}
	r = &http.Request{
		Method:     string(ctx.Method()),
		URL:        u,
		Proto:      proto,
		ProtoMajor: major,
		ProtoMinor: minor,
		Header:     make(http.Header),
		Body:       http.NoBody,
		Host:       string(ctx.Host()),
		RemoteAddr: ctx.RemoteAddr().String(),
		RequestURI: uri,
	}
	ctx.Request.Header.VisitAll(func(k, v []byte) {
		r.Header.Add(string(k), string(v))
	})
	return r, 0
}

// release gives back the raw connection under fasthttp's hijacked one and
// the bytes fasthttp had read past the request. fasthttp returns its read
// buffer to a pool once the hijack handler returns, so the connection must
// not be read through it afterwards; a deadline in the past stops the read
// at the end of what was buffered, leaving what the kernel holds unread.
func release(hc, raw net.Conn) hijacked {
	if err := raw.SetReadDeadline(time.Unix(1, 0)); err != nil {
		raw.Close()
		return hijacked{}
	}
	var read []byte
	var b [1024]byte
	for {
		n, err := hc.Read(b[:])
		read = append(read, b[:n]...)
		if err != nil {
			break
		}
	}
	if err := raw.SetReadDeadline(time.Time{}); err != nil {
		raw.Close()
		return hijacked{}
	}
	return hijacked{raw, read}
}

// hijacked is a connection handed over, with the bytes read past the
// request; conn nil if it failed.
type hijacked struct {
	conn net.Conn
	read []byte
}

// writer is the net/http side's ResponseWriter.
type writer struct {
	header  http.Header
	status  int
	body    bytes.Buffer
	crashed bool // the handler panicked: the answer is a 500 that closes the connection

	taking chan struct{} // closed by Hijack
	conn   chan hijacked // the connection, unless Hijack gave up
	gaveUp chan struct{} // closed when Hijack stops waiting
	taken  bool
	got    net.Conn // the connection Hijack returned
}

// hand passes the connection to Hijack, or closes it if Hijack gave up.
func (w *writer) hand(h hijacked) {
	select {
	case w.conn <- h:
	case <-w.gaveUp:
		if h.conn != nil {
			h.conn.Close()
		}
	}
}

func (w *writer) Header() http.Header { return w.header }

func (w *writer) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *writer) Write(p []byte) (int, error) {
	if w.taken {
		return 0, http.ErrHijacked
	}
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// answer copies an answer given without hijacking into fasthttp's.
func (w *writer) answer(resp *fasthttp.Response) {
	w.WriteHeader(http.StatusOK)
	for k, vs := range w.header {
		for _, v := range vs {
			resp.Header.Add(k, v)
		}
	}
	resp.SetStatusCode(w.status)
	resp.SetBody(w.body.Bytes())
}

// Hijack takes the connection, with a response head already written
// (WriteHeader's status, the 101 of an upgrade) left in the returned
// writer, as net/http leaves it.
func (w *writer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.taken {
		return nil, nil, http.ErrHijacked
	}
	w.taken = true
	close(w.taking)
	var h hijacked
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case h = <-w.conn:
	case <-t.C:
		close(w.gaveUp)
	}
	if h.conn == nil {
		return nil, nil, errors.New("hijack: the connection failed before it was handed over")
	}
	// The bytes read past the request wait in the reader, as net/http
	// leaves them (hub/sock takes them from there).
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(h.read), h.conn), max(len(h.read), 16))
	if _, err := br.Peek(len(h.read)); err != nil {
		h.conn.Close()
		return nil, nil, err
	}
	w.got = h.conn
	brw := bufio.NewReadWriter(br, bufio.NewWriterSize(h.conn, 512))
	if w.status != 0 {
		fmt.Fprintf(brw, "HTTP/1.1 %d %s\r\n", w.status, http.StatusText(w.status))
		w.header.Write(brw)
		brw.WriteString("\r\n")
	}
	return h.conn, brw, nil
}
