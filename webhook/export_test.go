package webhook

import "context"

// Step leases the delivery due first, attempts it and records the outcome,
// on the caller's goroutine (tests; Run attempts many at once). It
// reports false when nothing was due.
func (d *Deliverer) Step(ctx context.Context) (bool, error) {
	j, ok, err := d.lease(ctx)
	if err != nil || !ok {
		return false, err
	}
	defer d.release(j.hook.ID)
	return true, d.finish(ctx, j)
}
