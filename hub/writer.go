package hub

// The connection's writer, and the bounded reply queue it drains. A
// connection has no writer goroutine while it has nothing to write: a due
// frame, a batch's acks and a ping are written in the writer's place when
// the socket is free (direct.go), and anything else (replies, frames held
// by the interval, owed bytes, a close) pokes the writer, which is
// started for it and stops once nothing is left. A goroutine waiting for
// work per connection was a stack, a timer and a channel per idle
// spectator (docs/performance.md).

import (
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// The writer's role (conn.wstate). One holder at a time writes as the
// writer: a goroutine started by poke, or, once the reader has ended, the
// reader's goroutine (finish).
const (
	wRunning uint32 = 1 << iota // someone holds the writer's role
	wAgain                      // poked while running: look again before stopping
	wEnding                     // the reader has ended: no writer starts, pokes wake it (endWake)
	wEnded                      // closed or failed: nothing more is written
)

// poke tells the writer there may be work: a writer is started unless
// one runs, which then looks again before it stops.
func (c *conn) poke() {
	for {
		s := c.wstate.Load()
		switch {
		case s&wEnded != 0:
			return
		case s&wRunning != 0:
			if s&wAgain != 0 || c.wstate.CompareAndSwap(s, s|wAgain) {
				return
			}
		case s&wEnding != 0:
			c.wakeEnder()
			return
		case c.wstate.CompareAndSwap(s, s|wRunning):
			go c.writer()
			return
		}
	}
}

// writer is a writer goroutine: it writes until nothing is left.
func (c *conn) writer() {
	defer c.guardWriter()
	c.write(false)
}

// write does the writer's work, holding the socket, until nothing is left
// (false: the role is given up) or the connection ended (true: the socket
// is kept, so nothing is written after the close). The caller holds the
// role; ender: the caller is finish (stopRunning).
func (c *conn) write(ender bool) (ended bool) {
	c.s.Hold()
	for {
		c.wstate.And(^wAgain)
		if c.writePass() {
			c.endWriter()
			return true
		}
		c.s.Unhold()
		if c.stopRunning(ender) {
			return false
		}
		c.s.Hold()
	}
}

// stopRunning gives up the writer's role, unless a poke came meanwhile
// (false: the caller looks again). A writer goroutine that gives it up
// wakes finish, waiting to take it; finish itself (ender) wakes nobody: it
// would wake itself, and spin while a drain waits for the replies of the
// scores in flight. Any poke after the role is given up wakes it.
func (c *conn) stopRunning(ender bool) bool {
	for {
		s := c.wstate.Load()
		if s&wAgain != 0 {
			return false
		}
		if c.wstate.CompareAndSwap(s, s&^wRunning) {
			if s&wEnding != 0 && !ender {
				c.wakeEnder()
			}
			return true
		}
	}
}

// endWriter records that nothing more is written.
func (c *conn) endWriter() {
	for {
		s := c.wstate.Load()
		if c.wstate.CompareAndSwap(s, (s|wEnded)&^(wRunning|wAgain)) {
			if s&wEnding != 0 {
				c.wakeEnder()
			}
			c.wakeWindow() // a reader waiting for a reply that will not be written
			return
		}
	}
}

// finish is the reader's last part: it takes the writer's role once no
// writer goroutine holds it (none starts any more) and writes until the
// connection ended: the close under way, the replies a drain owes, or
// nothing when the connection failed.
func (c *conn) finish() {
	c.endWake = make(chan struct{}, 1)
	for {
		s := c.wstate.Load()
		if s&wEnded != 0 {
			return
		}
		if c.wstate.CompareAndSwap(s, s|wEnding) {
			break
		}
	}
	for {
		s := c.wstate.Load()
		if s&wEnded != 0 {
			return
		}
		if s&wRunning == 0 {
			if !c.wstate.CompareAndSwap(s, s|wRunning) {
				continue
			}
			if c.write(true) {
				return
			}
		}
		<-c.endWake
	}
}

// wakeEnder wakes finish's wait (endWake is set before wEnding).
func (c *conn) wakeEnder() {
	select {
	case c.endWake <- struct{}{}:
	default:
	}
}

// writePass does the writer's work until none is left: a close request
// first; then owed bytes; replies before frames (so `subscribed` precedes
// its first frame); a ping. ended reports that the connection is closed or
// failed. The socket is held.
func (c *conn) writePass() (ended bool) {
	for {
		if c.aborted.Load() {
			return true
		}
		if c.closeAsked.Load() {
			c.mu.Lock()
			cr := c.closeReq
			c.mu.Unlock()
			c.closeWith(cr)
			return true
		}
		if c.s.Owes() {
			if err := c.s.Flush(); err != nil {
				c.failed(err)
				return true
			}
		}
		if c.draining.Load() && c.readyToClose() {
			c.closeWith(closeRequest{code: uint16(websocket.StatusGoingAway), reason: reasonGoingAway})
			return true
		}
		wrote, err := c.writeWork()
		if err != nil {
			c.failed(err)
			return true
		}
		if !wrote {
			return false
		}
	}
}

// dueFrames appends the outbox's due frames to frames and puts the next
// one held by its interval on the wheel. c.gate held.
func (c *conn) dueFrames(frames [][]byte) [][]byte {
	out := c.out
	if out == nil {
		return frames
	}
	now := time.Now()
	frames, retryIn := out.TakeAppend(frames, now)
	if retryIn > 0 {
		c.h.wheel.addEarlier(c, timerRetry, now.Add(retryIn))
	}
	return frames
}

// writeWork writes the queued replies, the due frames and a wanted ping in
// one batch; wrote is false when there was nothing to write.
func (c *conn) writeWork() (wrote bool, err error) {
	var pbuf [8]*[]byte
	var fbuf [4][]byte
	pending, frames := pbuf[:0], fbuf[:0]
	if c.gate.TryLock() {
		pending = c.replies.take(pending)
		frames = c.dueFrames(frames)
		c.gate.Unlock()
	} else {
		// The gate is held: a subscribe is putting in its first frames.
		// Replies still go out; frames wait for the subscribe's poke.
		pending = c.replies.take(pending)
	}
	ping := c.pingWanted.Swap(false) && !c.draining.Load()
	if len(pending)+len(frames) == 0 && !ping {
		return false, nil
	}
	err = c.writeBatch(pending, frames, ping)
	if err == nil {
		c.h.m.framesWritten(len(frames))
	}
	clear(pending)
	clear(frames)
	return true, err
}

// writeBatch writes the replies, then the frames (and a ping), in one
// socket write (a large batch in several), giving the replies' buffers
// back. Every socket write that waits is bounded by WriteTimeout.
func (c *conn) writeBatch(pending []*[]byte, frames [][]byte, ping bool) error {
	if hook := c.h.testPanic; hook != nil {
		hook("write", c.sub)
	}
	var err error
	for _, b := range pending {
		if err == nil {
			err = c.s.Text(*b)
		}
		c.h.putReplyBuf(b)
	}
	for _, f := range frames {
		if err == nil {
			err = c.s.Text(f)
		}
	}
	if err == nil && ping {
		err = c.s.Ping()
	}
	if err == nil {
		err = c.s.Flush()
	}
	return err
}

// failed ends the connection after a write failed. A socket write blocked
// for WriteTimeout (a slow consumer, R12) is counted when the connection
// ends (end): the socket's timeout closes it, so the reader may see the
// end first.
func (c *conn) failed(err error) {
	c.h.log.Debug("hub: write failed", "member", c.sub, "err", err)
	c.abort()
}

// readyToClose reports, while draining, whether no request is being handled
// and every reply is written; it then commits to closing.
func (c *conn) readyToClose() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy || c.inFlight() > 0 || c.replies.len() > 0 {
		return false
	}
	c.committed = true
	return true
}

// closeWith sends the close frame and waits (bounded by the library) for the
// peer's answer.
func (c *conn) closeWith(cr closeRequest) {
	c.mu.Lock()
	c.committed = true
	c.mu.Unlock()
	if cr.flush {
		var pbuf [8]*[]byte
		pending := c.replies.take(pbuf[:0])
		err := c.writeBatch(pending, nil, false)
		clear(pending)
		if err != nil {
			c.failed(err)
			return
		}
	}
	c.h.m.closed(strconv.Itoa(int(cr.code)))
	err := c.ws.Close(websocket.StatusCode(cr.code), cr.reason)
	c.h.log.Debug("hub: close", "member", c.sub, "code", int(cr.code), "reason", cr.reason, "err", err)
}

// replyQueue is a connection's bounded reply queue. Its slice grows only
// as far as the bound and is released after a burst, so an idle connection
// holds no queue memory.
//
// It is bounded in count and in bytes (Config.ReplyQueue,
// ReplyQueueBytes), as centrifuge's and nats-server's client queues are:
// 256 acks are a few KB, 256 `page` replies of 100 entries are megabytes.
type replyQueue struct {
	mu    sync.Mutex // guards items and bytes
	items []*[]byte
	bytes int
	// n is len(items), kept beside it so the writer's check for replies,
	// made on every pass, takes no lock.
	n atomic.Int32
}

// add appends b unless the queue is at its bound (one reply larger than
// the byte bound still fits an empty queue).
func (q *replyQueue) add(b *[]byte, cfg *Config) bool {
	q.mu.Lock()
	if len(q.items) >= cfg.ReplyQueue || (len(q.items) > 0 && q.bytes+len(*b) > cfg.ReplyQueueBytes) {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, b)
	q.bytes += len(*b)
	q.n.Store(int32(len(q.items)))
	q.mu.Unlock()
	return true
}

// take appends every queued reply to dst and empties the queue.
func (q *replyQueue) take(dst []*[]byte) []*[]byte {
	dst, _ = q.takeUpTo(dst, math.MaxInt)
	return dst
}

// takeUpTo is take when the queued replies are at most limit bytes, else
// it takes nothing (ok false).
func (q *replyQueue) takeUpTo(dst []*[]byte, limit int) (_ []*[]byte, ok bool) {
	// Without the lock when empty (a spectator's every frame): a reply that
	// must precede frames (`subscribed`) is pushed under the connection's
	// gate, which the taker holds here, so n shows it; any other push
	// pokes the writer again, or is written by the batch's end (acks.go).
	if q.n.Load() == 0 {
		return dst, true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.bytes > limit {
		return dst, false
	}
	dst = append(dst, q.items...)
	q.items = reuse(q.items)
	q.bytes = 0
	q.n.Store(0)
	return dst, true
}

func (q *replyQueue) len() int { return int(q.n.Load()) }

// reuse empties s for reuse, or drops it when a burst made it large.
func reuse(s []*[]byte) []*[]byte {
	if cap(s) > 8 {
		return nil
	}
	clear(s)
	return s[:0]
}

// jitter is d less up to a fifth of it, at random, so that connections
// opened together (a reconnect storm after a deploy) do not ping together.
func jitter(d time.Duration) time.Duration {
	if d < 5 {
		return d
	}
	return d - rand.N(d/5)
}
