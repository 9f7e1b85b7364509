package redisstore

import "github.com/wsgateway/wsgateway/rank"

// completer is the goroutine that finishes a lane's batches: it calls the
// sink once per batch, then runs the batch's Done callbacks inside one
// Hooks.Complete, and gives the buffer back to the lane. It owns a batch
// from the lane's done channel to its idle one; the lane never waits on a
// caller's callback, only on a free buffer.
type completer struct {
	hooks   rank.Hooks
	in      <-chan *batch // the lane's finished batches; closed when the lane ends
	idle    chan<- *batch // buffers given back to the lane
	recycle func(*call)   // the lane's: a call whose done has run is reused
}

// run finishes the lane's batches until the lane closes in: the sink
// hears of all of a batch's changes at once, then every call's done runs,
// in submission order, inside one Hooks.Complete.
func (cp *completer) run() {
	for bt := range cp.in {
		if sink := cp.hooks.Sink; sink != nil {
			for _, c := range bt.calls {
				if c.err != nil && !c.unsynced {
					continue
				}
				if ch, ok := rank.ChangeOf(c.e, c.r); ok {
					bt.changes = append(bt.changes, ch)
				}
			}
			if len(bt.changes) > 0 {
				sink(bt.changes)
			}
			clear(bt.changes)
			bt.changes = bt.changes[:0]
		}
		cp.hooks.Completes(bt.finish)
		clear(bt.calls)
		bt.calls = bt.calls[:0]
		if bt.settled != nil {
			close(bt.settled)
			bt.settled = nil
		}
		cp.idle <- bt
	}
}

// runDones calls every call's done, in submission order, recycling each
// call first (the done may be the last to look at its outcome).
func (cp *completer) runDones(bt *batch) {
	for _, c := range bt.calls {
		done, r, err := c.fin, c.r, c.err
		cp.recycle(c)
		done(r, err)
	}
}
