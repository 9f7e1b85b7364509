package hub

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// The direct path: the fan-out (the live engine's job goroutine) writes a
// due frame to a spectator's socket itself when the connection's writer is
// idle, instead of putting it in the outbox and waking the writer to take
// and write it. A spectator's writer woke once per frame to write one
// frame: the channel send, its receive, park and reschedule and the pass
// over every source were about as much CPU as the write(2) itself
// (docs/performance.md).
//
// The conn is the Outbox's live.DirectWriter. Under the Outbox's mutex,
// TryAcquire takes, without waiting for anything:
//
//   - conn.work, which the writer holds except while it waits on notify:
//     the writer is idle, and stays so until WriteDirect is done;
//   - corkConn.mu, so no other write (a pong from the reader) is under way;
//
// and checks that nothing must precede the frame: no reply queued, no
// subscribe under the gate, no close or drain begun, no bytes owed. The
// outbox checks the rest (the frame is due, nothing else pending in it,
// not a subscription's initial frame). If any of it fails, the frame goes
// the usual way (slot and notify), so a busy writer sees no change.
//
// The write never parks (syscall.RawConn.Write with a callback that
// always reports done): what the socket does not take at once is owed,
// and the writer, poked, writes it first with the usual deadline, so a
// slow consumer is still closed after WriteTimeout (R12).

// rawConnOf is nc's RawConn, or nil when nc is not a syscall.Conn (TLS,
// net.Pipe): such connections keep the writer's path alone.
func rawConnOf(nc net.Conn) syscall.RawConn {
	sc, ok := nc.(syscall.Conn)
	if !ok || !directWrites {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// TryAcquire implements live.DirectWriter. It is called with the Outbox's
// mutex held and never blocks.
func (c *conn) TryAcquire() bool {
	// A queued reply goes before any frame: the writer's turn.
	return c.replies.len() == 0 && c.tryAcquire()
}

// tryAcquire takes what a direct write needs (see above; replies may be
// queued: acks.go writes them). It never blocks.
func (c *conn) tryAcquire() bool {
	if c.closeAsked.Load() || c.draining.Load() || c.cc.owes.Load() {
		return false
	}
	if !c.work.TryLock() {
		return false // the writer is at work: the frame goes by the outbox
	}
	// A subscribe in progress must have its `subscribed` written before
	// its frames; those are initial (never direct), but the gate keeps the
	// rule plain: no frame goes around the writer during a subscribe.
	if !c.gate.TryLock() {
		c.work.Unlock()
		return false
	}
	c.gate.Unlock()
	if !c.cc.mu.TryLock() {
		c.work.Unlock()
		return false
	}
	if c.cc.owed != nil || c.cc.werr != nil || c.cc.corked {
		c.cc.mu.Unlock()
		c.work.Unlock()
		return false
	}
	return true
}

// WriteDirect implements live.DirectWriter: it writes f as one text frame
// and releases what TryAcquire took.
func (c *conn) WriteDirect(f []byte) {
	owed := c.cc.writeDirectLocked(f)
	c.cc.mu.Unlock()
	c.work.Unlock()
	c.h.m.framesWritten(1)
	c.h.directFrames.Add(1)
	if owed {
		c.poke() // the writer writes the rest (or meets the error)
	}
}

// writeDirectLocked writes f as a text frame without parking. Whatever the
// socket did not take becomes owed; it reports whether the writer must act
// (bytes owed, or an error for it to return). c.mu held, nothing owed.
func (c *corkConn) writeDirectLocked(f []byte) bool {
	b := c.pool.Get().(*[]byte)
	*b = append(appendTextHeader((*b)[:0], len(f)), f...)
	return c.writeRawLocked(b)
}

// writeRepliesLocked writes replies as text frames, in order, in one
// write(2) without parking, as writeDirectLocked does one frame.
func (c *corkConn) writeRepliesLocked(replies []*[]byte) bool {
	b := c.pool.Get().(*[]byte)
	*b = (*b)[:0]
	for _, r := range replies {
		*b = append(appendTextHeader(*b, len(*r)), *r...)
	}
	return c.writeRawLocked(b)
}

// writeRawLocked writes the ready frames in b (a pool buffer, which it
// keeps) without parking; what the socket did not take becomes owed. It
// reports whether the writer must act.
func (c *corkConn) writeRawLocked(b *[]byte) bool {
	if c.rawWrite == nil {
		// Bound once: a closure per write escaped to the heap (rc.Write
		// keeps it), an allocation per frame per connection.
		c.rawWrite = c.rawWriteFunc
	}
	c.rawBuf = *b
	err := c.rc.Write(c.rawWrite)
	n, werr := c.rawN, c.rawErr
	c.rawBuf, c.rawErr = nil, nil
	switch {
	case err == nil && werr == nil && n == len(*b):
		*b = (*b)[:0]
		c.pool.Put(b)
		return false
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The deadline is moved by blocking writes only: after WriteTimeout
		// of direct writes alone it has passed, and RawConn refuses to
		// start. Nothing was written; the writer moves it and writes.
		n = 0
	case err != nil:
		c.werr = err
	case werr != nil && !errors.Is(werr, syscall.EAGAIN) && !errors.Is(werr, syscall.EINTR):
		c.werr = werr
	}
	if c.werr != nil {
		*b = (*b)[:0]
		c.pool.Put(b)
		c.owes.Store(true) // the writer's flushOwed returns the error
		return true
	}
	c.owed, c.owedOff = b, max(n, 0)
	c.owes.Store(true)
	return true
}

// rawWriteFunc is rc.Write's callback: one write(2) of rawBuf, never asking
// to wait for the socket (the writer does that for what is left).
func (c *corkConn) rawWriteFunc(fd uintptr) bool {
	c.rawN, c.rawErr = writeNonBlocking(fd, c.rawBuf)
	return true
}
