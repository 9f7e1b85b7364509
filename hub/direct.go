package hub

// Writing in the writer's place. A spectator's writer woke once per frame
// to write one frame, and after a store batch each connection's writer woke
// to write its acks: the wake-up was about as much CPU as the write(2)
// itself. So when no writer runs, the fan-out (a due frame:
// live.DirectWriter), the store's batch end (acks.go), the wheel (a ping)
// and the upgrade (the welcome) take the socket (sock.Conn.TryTake) and
// write themselves, without ever waiting; if anything stands in the way,
// the work goes to a writer (poke).
//
// One rule serves both (takeOver): the socket is free, no close or drain
// has begun, no subscribe is putting in its first frames under the gate;
// and the queued replies, which precede any frame, go first in the same
// write (at most half a batch of them: a page reply can be large, the
// writer writes those).

// takeOver takes the socket in the writer's place and adds the queued
// replies to its batch. It reports false, holding nothing, when the writer
// must do the work.
func (c *conn) takeOver() bool {
	if c.closeAsked.Load() || c.draining.Load() || c.aborted.Load() || !c.s.TryTake() {
		return false
	}
	// A subscribe in progress must have its `subscribed` written before its
	// frames: no write goes around the writer during one.
	if !c.gate.TryLock() {
		c.s.Give()
		return false
	}
	c.gate.Unlock()
	var pbuf [8]*[]byte
	pending, ok := c.replies.takeUpTo(pbuf[:0], maxDirectReplies)
	if !ok {
		c.s.Give() // nothing taken: the writer writes them, frames after
		return false
	}
	for _, b := range pending {
		c.s.Text(*b) // a taker's Text only appends
		c.h.putReplyBuf(b)
	}
	c.h.directReplies.Add(uint64(len(pending)))
	clear(pending)
	return true
}

// maxDirectReplies bounds the replies a taker writes (bytes).
const maxDirectReplies = 32 << 10

// give writes what the taker added and gives the socket back, starting a
// writer when the socket did not take it all.
func (c *conn) give() {
	if c.s.Give() {
		c.poke()
	}
}

// TryAcquire implements live.DirectWriter. It is called with the Outbox's
// mutex held and never blocks.
func (c *conn) TryAcquire() bool { return c.takeOver() }

// WriteDirect implements live.DirectWriter: it writes f as one text frame
// after the replies takeOver added, and gives the socket back.
func (c *conn) WriteDirect(f []byte) {
	c.s.Text(f)
	c.give()
	c.h.m.framesWritten(1)
	c.h.directFrames.Add(1)
}

// writeAcks writes c's queued replies in the writer's place, or pokes the
// writer.
func (c *conn) writeAcks() {
	if !c.takeOver() {
		c.poke()
		return
	}
	c.give()
}

// flushDirect writes the queued replies and the frames due, and a ping
// wanted, in the writer's place, never waiting (what the reader queued
// quietly: reader.go); when anything stands in the way, a writer does it.
func (c *conn) flushDirect() {
	if !c.takeOver() {
		c.poke()
		return
	}
	given := false
	defer func() {
		if !given { // a panic: the socket goes back, the panic on (crash.go)
			c.s.Give()
		}
	}()
	if hook := c.h.testPanic; hook != nil {
		hook("direct", c.sub)
	}
	var fbuf [4][]byte
	frames := fbuf[:0]
	if c.gate.TryLock() {
		frames = c.dueFrames(frames)
		c.gate.Unlock()
	} else {
		c.poke() // a subscribe puts in its first frames: it pokes once done
	}
	for _, f := range frames {
		c.s.Text(f) // a taker's Text only appends
	}
	if c.pingWanted.Swap(false) {
		c.s.Ping()
	}
	c.h.m.framesWritten(len(frames))
	clear(frames)
	given = true
	c.give()
}
