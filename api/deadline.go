package api

import (
	"context"
	"sync/atomic"
	"time"
)

// deadlines hands out the store calls' contexts (Config.Timeout). A
// context.WithTimeout per call cost a timer and three allocations, three or
// four times per request (token, board, apply); the requests that start
// within one step share one context instead, which expires between Timeout
// and Timeout + step after each of them started. Nothing cancels these
// contexts early: a call that must stop others derives its own
// (applyAll).
type deadlines struct {
	timeout time.Duration
	step    time.Duration
	cur     atomic.Pointer[window]
}

// window is the context of the calls that start before its end.
type window struct {
	ctx    context.Context
	cancel context.CancelFunc // kept for vet; the deadline releases the context
	end    time.Time
}

// maxStep bounds how much later than Timeout a shared context expires.
const maxStep = 100 * time.Millisecond

func newDeadlines(timeout time.Duration) *deadlines {
	return &deadlines{timeout: timeout, step: min(maxStep, max(timeout/50, time.Millisecond))}
}

// get returns a context that ends no earlier than Timeout from now.
func (d *deadlines) get() context.Context {
	now := time.Now()
	if w := d.cur.Load(); w != nil && now.Before(w.end) {
		return w.ctx
	}
	w := &window{end: now.Add(d.step)}
	w.ctx, w.cancel = context.WithDeadline(context.Background(), w.end.Add(d.timeout))
	d.cur.Store(w)
	return w.ctx
}
