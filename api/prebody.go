package api

import (
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
)

// The fiber adaptor copies a request's whole body before fiber routes it,
// so a request fiber would refuse for its token had already cost its body
// (300 token-less 1 MiB POSTs held ~90 MB). admitBody runs on the net/http
// side first: a request with a body must carry a token that verifies
// (except the dev token route), else it is answered 401 (or 429 by the
// per-address limit) without a byte of its body read; net/http then closes
// the connection rather than drain a large body. Admitted bodies are read
// at most MaxBodyReads at a time. The token is verified again inside fiber;
// that is one more verification per write request, the price of not
// reading before knowing who sends.

// DefaultMaxBodyReads is Config.MaxBodyReads's zero-value meaning: 64 × the
// 1 MiB body limit bounds body memory to 64 MiB.
const DefaultMaxBodyReads = 64

// devTokenPath needs no token (--dev only; its body is a few bytes).
const devTokenPath = "/api/v1/dev/token"

// admitBody decides whether r's body may be read, answering r when not.
// When it returns true, the caller calls release once the body is read and
// the request answered.
func (a *API) admitBody(w http.ResponseWriter, r *http.Request, start time.Time) (release func(), ok bool) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return func() {}, true
	}
	if r.URL.Path != devTokenPath {
		if code, err := a.preAuth(r); err != nil {
			if a.anon != nil {
				if ok, d := a.anon.allow(peerIP(r), time.Now()); !ok {
					w.Header().Set("Retry-After", strconv.Itoa(max(1, int((d+time.Second-1)/time.Second))))
					a.refuseEarly(w, r, start, http.StatusTooManyRequests, proto.CodeRateLimited, "rate limited: too many requests")
					return nil, false
				}
			}
			status := proto.HTTPStatus(code)
			if code == proto.CodeUnavailable {
				w.Header().Set("Retry-After", "1")
			}
			a.refuseEarly(w, r, start, status, code, proto.PublicMessage(err))
			return nil, false
		}
	}
	select {
	case a.bodySlots <- struct{}{}:
		return func() { <-a.bodySlots }, true
	case <-r.Context().Done():
		return nil, false // the client left while waiting
	}
}

// preAuth verifies r's bearer token; the error's code is the answer's.
func (a *API) preAuth(r *http.Request) (string, error) {
	_, code, err := a.verifyEarly(r.Header.Get("Authorization"))
	return code, err
}

// verifyEarly verifies the bearer token of an Authorization header.
func (a *API) verifyEarly(header string) (auth.Principal, string, error) {
	token, ok := auth.BearerToken(header)
	if !ok {
		return auth.Principal{}, proto.CodeUnauthorized, errf(proto.CodeUnauthorized, "missing bearer token")
	}
	ctx, cancel := a.ctx()
	defer cancel()
	p, err := a.cfg.Verifier.Verify(ctx, token)
	if err != nil {
		a.log.Debug("api: request refused before its body", "err", err)
		code := proto.CodeOf(err)
		if code != proto.CodeTokenExpired && code != proto.CodeUnavailable {
			code = proto.CodeUnauthorized
		}
		return auth.Principal{}, code, err
	}
	return p, "", nil
}

// peerIP is r's TCP peer address, as fiber's c.IP() sees it behind the
// adaptor.
func peerIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// refuseEarly answers before fiber sees the request, in the shape and with
// the accounting of errorHandler.
func (a *API) refuseEarly(w http.ResponseWriter, r *http.Request, start time.Time, status int, code, msg string) {
	const route = "refused"
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	writeJSON(w, proto.ErrorBody{Error: proto.ErrorDetail{Code: code, Message: msg}})
	a.m.errors.WithLabelValues(code).Inc()
	a.m.done(route, status, time.Since(start))
	a.log.Info("api request", "method", r.Method, "route", route, "status", status, "duration", time.Since(start))
}
