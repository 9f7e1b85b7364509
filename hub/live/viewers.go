package live

import "time"

// Viewers counts this node's open subscriptions per board: a connection
// subscribed to a board counts once, whatever frames it asked for. Boards
// without a subscription are absent. The map is the caller's. It reads each
// board's count, not the connections, so a periodic report costs the same
// with 10 or 100,000 spectators.
func (e *Engine) Viewers() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(e.boards))
	for id, b := range e.boards {
		if b.nsubs > 0 {
			out[id] = b.nsubs
		}
	}
	return out
}

// viewersEvery is the least time between two board frames sent for a
// change of viewers alone (docs/protocol.md §14).
const viewersEvery = 5 * time.Second

// viewersTold is what a board's frames last said of its viewers. Guarded
// by Engine.mu.
type viewersTold struct {
	known   bool
	n       int
	checked time.Time // the last look at the count, on this node's clock
}

// count is the viewers a board frame carries: the last told, nil before.
func (v viewersTold) count() *int {
	if !v.known {
		return nil
	}
	n := v.n
	return &n
}

// viewersTick looks at b's viewers (this node's subscribers plus
// Config.OtherViewers) every viewersEvery from its first subscription, and
// sends its subscribers a board frame when they changed; the frame repeats
// the lifecycle they were last told. st is the store's time, now this
// node's. Lock held, after lifecycleTick.
func (e *Engine) viewersTick(b *board, st, now time.Time) {
	if e.cfg.OtherViewers == nil || !b.lc.known {
		return
	}
	if b.told.checked.IsZero() {
		// The first look waits too: a subscriber's first frames are the
		// board frame and the standings, not a count still settling.
		b.told.checked = now
		return
	}
	if now.Sub(b.told.checked) < viewersEvery {
		return
	}
	b.told.checked = now
	n := b.nsubs + e.cfg.OtherViewers(b.id)
	if b.told.known && n == b.told.n {
		return
	}
	b.told.known, b.told.n = true, n
	frame := encodeBoard(b.cfg, b.lc.state, b.lc.period, st, &n)
	for _, o := range b.outboxes() {
		o.event(frame)
	}
}
