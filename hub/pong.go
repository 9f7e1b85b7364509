package hub

import (
	"context"
	"time"
)

// Pongs are written by coder/websocket's reader, one write(2) each, for
// every ping read; the flood guard (flood.go) lets a connection send
// floodBurst message-less frames before it closes it, so a flooder that
// redials at once had 4096 pongs written per connection, a sixth of the
// gateway's CPU in e2e.TestHostileSoak. RFC 6455 §5.5.3 lets an endpoint
// answer only the latest of several pings; the hub goes further and
// writes at most pongBurst pongs at once, refilled at pongRate a second,
// dropping the rest. A real client pings every few seconds and never sees
// a pong dropped; a peer that pings faster loses nothing but pongs.
const (
	pongBurst = 32
	pongRate  = 8 // per second
)

// pongBudget is a connection's token bucket of pongs (corkConn.mu held).
type pongBudget struct {
	tokens float64
	last   time.Time
}

// allow takes a token at now, if there is one.
func (b *pongBudget) allow(now time.Time) bool {
	if b.last.IsZero() {
		b.tokens = pongBurst
	} else {
		b.tokens = min(pongBurst, b.tokens+now.Sub(b.last).Seconds()*pongRate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// isPong reports whether p is exactly one pong frame as a server writes it
// (unmasked, payload under 126 bytes): how the library flushes a pong.
func isPong(p []byte) bool {
	return len(p) >= 2 && p[0] == 0x8A && p[1] < 126 && len(p) == 2+int(p[1])
}

// due reports whether allow would grant a pong at now, taking nothing.
func (b *pongBudget) due(now time.Time) bool {
	if b.last.IsZero() {
		return true
	}
	return b.tokens+now.Sub(b.last).Seconds()*pongRate >= 1
}

// pongDue reports whether a pong written now would be within the budget.
// The library asks it (onPing) before it answers a ping: a pong Write
// would drop costs the library a context with a timeout, its write lock
// and the framing all the same, per ping of a flood.
func (c *corkConn) pongDue() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pongs.due(time.Now())
}

// onPing is the library's OnPingReceived: false skips the pong, as Write
// would drop it anyway (over the pong budget).
func (w *corkWriter) onPing(context.Context, []byte) bool {
	return w.cc == nil || w.cc.pongDue()
}
