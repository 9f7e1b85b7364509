package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// Error is a failure the API itself detects (auth, permissions, request
// shape). It carries a contract code like rank's sentinels do, so
// proto.CodeOf maps both the same way; Status overrides the code's usual
// HTTP status when the contract wants another (413 is bad_request too).
type Error struct {
	code   string
	status int
	msg    string
}

func (e *Error) Error() string { return e.msg }

// Code is the contract's error code.
func (e *Error) Code() string { return e.code }

func errf(code, format string, args ...any) *Error {
	return &Error{code: code, msg: fmt.Sprintf(format, args...)}
}

func tooLarge(format string, args ...any) *Error {
	return &Error{code: proto.CodeBadRequest, status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf(format, args...)}
}

// classify is the one place a Go error becomes a REST status and body.
func (a *API) classify(err error) (int, proto.ErrorDetail) {
	var fe *fiber.Error
	if errors.As(err, &fe) {
		// Fiber's own errors: routing misses (404, 405) and the like. A
		// route that does not exist is not_found (R30); the rest are about
		// the request's shape, so they carry bad_request.
		code := proto.CodeBadRequest
		switch {
		case fe.Code == http.StatusNotFound:
			code = proto.CodeNotFound
		case fe.Code == http.StatusServiceUnavailable:
			code = proto.CodeUnavailable
		case fe.Code >= 500:
			code = proto.CodeInternal
		}
		return fe.Code, proto.ErrorDetail{Code: code, Message: fe.Message}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusServiceUnavailable, proto.ErrorDetail{Code: proto.CodeUnavailable, Message: "rank store did not answer in time"}
	}
	code := proto.CodeOf(err)
	status := proto.HTTPStatus(code)
	var ae *Error
	if errors.As(err, &ae) && ae.status != 0 {
		status = ae.status
	}
	// The client reads the contract's words; the chain (packages, the
	// engine, addresses, the JWT library's reasons) goes to the log.
	switch code {
	case proto.CodeInternal:
		a.log.Error("api: internal error", "err", err)
	case proto.CodeUnauthorized:
		if errors.Is(err, auth.ErrUnauthorized) {
			// The operator sees which fault refused the token (R30); the
			// error holds the verifier's reason, never the token.
			a.log.Info("api: token refused", "err", err)
			break
		}
		a.log.Debug("api: request refused", "code", code, "err", err) // no token sent
	case proto.CodeUnavailable, proto.CodeTokenExpired:
		a.log.Debug("api: request refused", "code", code, "err", err)
	}
	d := proto.ErrorDetail{Code: code, Message: proto.PublicMessage(err)}
	var closed *rank.ClosedError
	if errors.As(err, &closed) {
		d.Closed = rank.Closed(*closed) // why, and when (R30)
	}
	var rejected *rank.RejectedError
	if errors.As(err, &rejected) {
		d.Reason = rejected.Reason // the hook's (§16)
	}
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		d.RetryAfterMS = max(ra.RetryAfter().Milliseconds(), 1) // a claim's (§16): when it lapses
	}
	return status, d
}

// errorHandler is fiber's ErrorHandler: every error, routing misses
// included, leaves as {"error":{"code":…,"message":…}}.
func (a *API) errorHandler(c *fiber.Ctx, err error) error {
	status, detail := a.classify(err)
	a.m.errors.WithLabelValues(detail.Code).Inc()
	if status == http.StatusServiceUnavailable {
		c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(max((detail.RetryAfterMS+999)/1000, 1), 10))
	}
	return c.Status(status).JSON(proto.ErrorBody{Error: detail})
}

// detail is the error object of one failed scores element.
func (a *API) detail(err error) proto.ErrorDetail {
	_, d := a.classify(err)
	a.m.errors.WithLabelValues(d.Code).Inc()
	return d
}

func writeJSON(w io.Writer, v any) {
	// Encoding our own response types cannot fail; a write error means the
	// client left.
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // as proto.Marshal: messages say <, > and & as they are
	_ = enc.Encode(v)
}
