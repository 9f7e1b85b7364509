package api

import (
	"context"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/auth"
)

type statusBody struct {
	Status string `json:"status"`
}

// readyBody is the 503 answer of /readyz: which checks failed, and why
// only for an admin token (the reasons name addresses and the engine).
type readyBody struct {
	Status  string            `json:"status"`
	Failing []string          `json:"failing"`
	Errors  map[string]string `json:"errors,omitempty"`
}

// healthz answers 200 while the process runs: liveness, not readiness.
func (a *API) healthz(c *fiber.Ctx) error {
	return c.JSON(statusBody{Status: "ok"})
}

// readyz runs every check at once, each under a 1s deadline, and is ready
// only when all of them answer.
func (a *API) readyz(c *fiber.Ctx) error {
	checks := a.cfg.Ready
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	type result struct {
		i   int
		err error
	}
	// Buffered for every check, so a check that outlives the deadline never
	// blocks its goroutine on the send.
	done := make(chan result, len(checks))
	for i, ch := range checks {
		go func() { done <- result{i, ch.Ping(ctx)} }()
	}
	errs := make([]error, len(checks))
	finished := make([]bool, len(checks))
wait:
	for range checks {
		select {
		case r := <-done:
			errs[r.i], finished[r.i] = r.err, true
		case <-ctx.Done():
			break wait
		}
	}
	body := readyBody{Status: "unavailable", Failing: []string{}}
	reasons := map[string]string{}
	for i, ch := range checks {
		switch {
		case !finished[i]:
			reasons[ch.Name] = "no answer within " + readyTimeout.String()
		case errs[i] != nil:
			reasons[ch.Name] = errs[i].Error()
		default:
			continue
		}
		body.Failing = append(body.Failing, ch.Name)
	}
	if len(body.Failing) > 0 {
		a.log.Warn("api: not ready", "failing", body.Failing, "errors", reasons)
		if a.isAdmin(c) {
			body.Errors = reasons
		}
		c.Set(fiber.HeaderRetryAfter, "1")
		return c.Status(http.StatusServiceUnavailable).JSON(body)
	}
	return c.JSON(statusBody{Status: "ready"})
}

// isAdmin reports whether the request carries a valid admin token; /readyz
// needs none, and tells the reasons of a failure only to an admin.
func (a *API) isAdmin(c *fiber.Ctx) bool {
	token, ok := auth.BearerToken(c.Get(fiber.HeaderAuthorization))
	if !ok {
		return false
	}
	ctx, cancel := a.ctx()
	defer cancel()
	p, err := a.cfg.Verifier.Verify(ctx, token)
	return err == nil && p.MayManage()
}
