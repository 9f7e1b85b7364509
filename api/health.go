package api

import (
	"context"
	"net/http"
	"sync"
	"time"

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

// readyCacheFor is how long one round of /readyz checks answers every
// /readyz: a flood of probes pings the store and the bus at most once
// in it, whoever sends them.
const readyCacheFor = time.Second

// readyCache is the last round of checks.
type readyCache struct {
	mu      sync.Mutex // guards the fields below; held during a round, so probes wait for it
	at      time.Time  // zero: no round yet
	failing []string
	reasons map[string]string
}

// readyz answers from the checks' last round, run again when it is older
// than readyCacheFor: ready only when every check answered.
func (a *API) readyz(c *fiber.Ctx) error {
	failing, reasons := a.readiness()
	if len(failing) > 0 {
		body := readyBody{Status: "unavailable", Failing: failing}
		if a.isAdmin(c) {
			body.Errors = reasons
		}
		c.Set(fiber.HeaderRetryAfter, "1")
		return c.Status(http.StatusServiceUnavailable).JSON(body)
	}
	return c.JSON(statusBody{Status: "ready"})
}

// Failing names the readiness checks that failed in a round at most
// readyCacheFor old: /metrics reports the round /readyz answers from, so
// neither a flood of probes nor of scrapes pings the store more often.
func (a *API) Failing() []string {
	failing, _ := a.readiness()
	return failing
}

// readiness is the failing checks and their reasons, from a round at
// most readyCacheFor old.
func (a *API) readiness() ([]string, map[string]string) {
	r := &a.ready
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.at.IsZero() && time.Since(r.at) < readyCacheFor {
		return r.failing, r.reasons
	}
	checks := a.deps.Ready
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
		case res := <-done:
			errs[res.i], finished[res.i] = res.err, true
		case <-ctx.Done():
			break wait
		}
	}
	failing := []string{}
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
		failing = append(failing, ch.Name)
	}
	if len(failing) > 0 {
		a.log.Warn("api: not ready", "failing", failing, "errors", reasons)
	}
	r.at, r.failing, r.reasons = time.Now(), failing, reasons
	return failing, reasons
}

// isAdmin reports whether the request carries a valid admin token; /readyz
// needs none, and tells the reasons of a failure only to an admin.
func (a *API) isAdmin(c *fiber.Ctx) bool {
	token, ok := auth.BearerToken(c.Get(fiber.HeaderAuthorization))
	if !ok {
		return false
	}
	p, err := a.deps.Verifier.Verify(a.ctx(), token)
	return err == nil && p.MayManage()
}
