package api

import (
	"runtime/debug"
	"time"

	"github.com/gofiber/fiber/v2"
	fiberrecover "github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/valyala/fasthttp"

	"github.com/wsgateway/wsgateway/proto"
)

// A panic while answering a request is that request's alone
// (docs/architecture.md, "Crash only where it is safe"): it is answered 500
// `internal`, logged with its stack, counted (wsgateway_api_panics_total),
// and the server serves on. fiber's recover middleware takes one in a
// route's handler (observe then accounts the request like any other);
// Serve's handler one in the gates or ServeConfig.Other, which run before
// or beside fiber. The hub guards the upgrade, on a goroutine of its own.

// recoverHandlers is fiber's recover middleware, logging and counting.
func (a *API) recoverHandlers() fiber.Handler {
	return fiberrecover.New(fiberrecover.Config{EnableStackTrace: true, StackTraceHandler: func(_ *fiber.Ctx, v any) { a.panicked(v) }})
}

// panicked logs and counts a recovered panic, on the panicking goroutine
// (so the stack shows where it happened).
func (a *API) panicked(v any) {
	a.m.panics.Inc()
	a.log.Error("api: panic answering a request", "panic", v, "stack", string(debug.Stack()))
}

// recoverRequest, deferred by Serve's handler, answers a panic that
// escaped the gates or ServeConfig.Other with 500 internal, closing the
// connection (the body may be partly read).
func (a *API) recoverRequest(ctx *fasthttp.RequestCtx, start time.Time) {
	if v := recover(); v != nil {
		a.panicked(v)
		if !ctx.Hijacked() { // else the connection is its hijacker's
			ctx.Response.Reset()
			a.answerFast(ctx, start, verdict{status: 500, route: "panicked", code: proto.CodeInternal, msg: "internal error"})
		}
	}
}
