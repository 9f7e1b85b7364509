package hub

import (
	"errors"
	"runtime/debug"

	"github.com/coder/websocket"
)

// Panics are confined to the connection they happen for
// (docs/architecture.md, "Crash only where it is safe"). A panic on a
// connection's reader (decoding, handling, subscribing), on its writer,
// in its expiry timer or in a store's completion of one of its scores
// closes that connection with 1011, is counted
// (wsgateway_ws_panics_total) and logged with its stack once per
// connection; the node and its other connections go on. A panic during
// an upgrade answers 500. What a connection shares with others is left
// consistent by defers (every hub lock held across code that may panic is
// released by one, the socket a reader took included), and an event is
// applied by the store's atomic step or not at all, so nothing is half
// done. The fan-out's and the batch end's writes in the writer's place
// (direct.go) are not guarded: they run on goroutines every connection
// shares, and the node ends instead.

const reasonInternal = "internal error"

// errCrashed is apart's result for a request whose handling panicked.
var errCrashed = errors.New("hub: panic while handling a request")

// crashed takes a panic v recovered while serving c: counted and logged,
// with its stack, on c's first; then the 1011 close is asked for.
func (c *conn) crashed(v any) {
	if !c.panicked.Swap(true) {
		c.h.m.panicked("connection")
		c.h.log.Error("hub: panic serving a connection; closing it with 1011",
			"member", c.sub, "panic", v, "stack", string(debug.Stack()))
	}
	c.requestClose(websocket.StatusInternalError, reasonInternal, false)
}

// guard, deferred by code serving c outside its reader and writer (a
// timer of the wheel, a store's completion, a request apart), confines a
// panic to c.
func (c *conn) guard() {
	if v := recover(); v != nil {
		c.crashed(v)
	}
}

// guardWriter, deferred by a writer goroutine, confines a panic to c. The
// writer still holds the socket, so it writes the 1011 close itself; a
// second panic on the way drops the socket instead.
func (c *conn) guardWriter() {
	v := recover()
	if v == nil {
		return
	}
	c.crashed(v)
	defer c.endWriter()
	defer func() {
		if recover() != nil {
			c.ws.CloseNow()
		}
	}()
	c.closeWith(closeRequest{code: uint16(websocket.StatusInternalError), reason: reasonInternal})
}
