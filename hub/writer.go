package hub

// The connection's writer: it holds the socket (sock.Conn) except while it
// waits (notify and one timer), writes replies and frames in batches, pings
// and closes; and the bounded reply queue it drains.

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// writeLoop is the connection's writer. Priorities: a close request; then replies
// before frames (so `subscribed` precedes its first frame); pings on a
// timer. It waits on notify alone, and on each wake looks at every source.
// Its one timer (the earlier of the next frame due and the next ping)
// pokes notify rather than having a channel of its own: a receive from one
// channel instead of a two-case select, whose parking cost showed in the
// fan-out's profile (one wake per frame per connection). A spectator in phase with the board's reads never arms it
// for frames, so the timer's own goroutine runs about once per ping.
//
// It holds the socket (taken by newConn) except while it waits on notify
// (direct.go), and keeps it once it returns, so no write in its place
// follows the close.
func (c *conn) writeLoop(ctx context.Context) error {
	timer := time.AfterFunc(time.Hour, c.poke)
	timer.Stop()
	defer timer.Stop()
	// armed is when timer fires (zero: not armed). Once that moment has
	// passed, its poke is in notify or on its way, so a wait never misses it.
	var armed time.Time
	pingAt := time.Now().Add(jitter(c.h.cfg.PingInterval))
	var retryAt time.Time // a frame held by its interval is due then; zero: none
	// checkOutbox: a wake may have brought a frame. Replies take the outbox
	// along too, so a steady stream of replies cannot hold frames back.
	checkOutbox, draining := false, false
	for {
		// The flags first, the channels only when they are set: on a
		// spectator's every wake each cold channel touched was a cache miss
		// (1,000 connections' writers take turns on two cores).
		if c.closeAsked.Load() {
			select {
			case cr := <-c.closeReq:
				return c.closeWith(ctx, cr)
			default: // its sender pokes once it has sent
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// Bytes a write in its place owes go before anything else; every
		// later write would put them first anyway, but with nothing else to
		// write the writer must not wait with them owed.
		if c.s.Owes() {
			if err := c.checkWrite(ctx, c.s.Flush()); err != nil {
				return err
			}
		}
		if !draining && c.draining.Load() {
			draining = true
		}
		if draining && c.readyToClose() {
			return c.closeWith(ctx, closeRequest{code: websocket.StatusGoingAway, reason: reasonGoingAway})
		}
		replies := c.replies.len() > 0
		if (checkOutbox || replies) && c.gate.TryLock() {
			checkOutbox = false
			c.takeReplies()
			now := time.Now()
			frames, retryIn := c.out.TakeAppend(c.frames[:0], now)
			c.gate.Unlock()
			retryAt = time.Time{} // retryIn covers every slot inside its interval
			if retryIn > 0 {
				retryAt = now.Add(retryIn)
			}
			if len(c.pending)+len(frames) == 0 {
				continue
			}
			err := c.writeBatch(ctx, frames)
			c.frames = keepFrames(frames)
			if err != nil {
				return err
			}
			c.h.m.framesWritten(len(frames))
			continue
		}
		// The gate is held: a subscribe is putting in its first frames.
		// Replies still go out; frames wait for the subscribe's poke.
		if replies {
			c.takeReplies()
			if err := c.writeBatch(ctx, nil); err != nil {
				return err
			}
			continue
		}
		var next time.Time // zero: nothing to time (draining pings no more)
		if !draining {
			next = pingAt
		}
		if !retryAt.IsZero() && (next.IsZero() || retryAt.Before(next)) {
			next = retryAt
		}
		if !next.Equal(armed) {
			if next.IsZero() {
				timer.Stop()
			} else {
				timer.Reset(time.Until(next))
			}
			armed = next
		}
		c.s.Unhold()
		<-c.notify
		c.s.Hold()
		// Any wake may bring a frame (a timer's wake for a held frame, or
		// an offer's); Take says which are due.
		checkOutbox = true
		now := time.Now()
		if !armed.IsZero() && !now.Before(armed) {
			armed = time.Time{}
		}
		if !retryAt.IsZero() && !now.Before(retryAt) {
			retryAt = time.Time{} // checkOutbox takes it (or the gate's poke)
		}
		// No ping while draining: the reader, which reads the pong, has
		// stopped, and a ping unanswered would end the connection without
		// the replies still owed (R14).
		if !draining && !now.Before(pingAt) {
			pingAt = now.Add(jitter(c.h.cfg.PingInterval))
			pctx, cancel := context.WithTimeout(ctx, c.h.cfg.WriteTimeout)
			err := c.ws.Ping(pctx)
			cancel()
			if err != nil {
				return err // no pong: the peer is gone
			}
		}
	}
}

// takeReplies moves the queued replies to c.pending (bounded by the queue).
func (c *conn) takeReplies() { c.pending = c.replies.take(c.pending) }

// writeBatch writes the pending replies, then frames, in one socket write
// (a large batch in several). Every socket write is bounded by
// WriteTimeout (sock.Conn's write deadline); ctx ending closes the socket
// (run).
func (c *conn) writeBatch(ctx context.Context, frames [][]byte) error {
	if hook := c.h.testPanic; hook != nil {
		hook("write", c.sub)
	}
	var err error
	for _, b := range c.pending {
		if err == nil {
			err = c.s.Text(*b)
		}
		c.h.putReplyBuf(b)
	}
	c.pending = reuse(c.pending)
	for _, f := range frames {
		if err == nil {
			err = c.s.Text(f)
		}
	}
	if err == nil {
		err = c.s.Flush()
	}
	return c.checkWrite(ctx, err)
}

var errSlowConsumer = errors.New("hub: write blocked: slow consumer")

// checkWrite classifies a write error: a socket write blocked for
// WriteTimeout means a slow consumer (R12); the connection then ends (the
// writer's error cancels ctx, which closes the socket).
func (c *conn) checkWrite(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && errors.Is(err, os.ErrDeadlineExceeded) {
		c.h.m.slowConsumerClose()
		c.h.m.closed(strconv.Itoa(int(websocket.StatusPolicyViolation)))
		c.ws.CloseNow()
		return errSlowConsumer
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// readyToClose reports, while draining, whether no request is being handled
// and every reply is written; it then commits to closing.
func (c *conn) readyToClose() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy || c.win.n > 0 || c.replies.len() > 0 {
		return false
	}
	c.committed = true
	return true
}

// closeWith sends the close frame and waits (bounded by the library) for the
// peer's answer.
func (c *conn) closeWith(ctx context.Context, cr closeRequest) error {
	c.mu.Lock()
	c.committed = true
	c.mu.Unlock()
	if cr.flush {
		c.takeReplies()
		if err := c.writeBatch(ctx, nil); err != nil {
			return err
		}
	}
	c.h.m.closed(strconv.Itoa(int(cr.code)))
	err := c.ws.Close(cr.code, cr.reason)
	c.h.log.Debug("hub: close", "member", c.sub, "code", int(cr.code), "reason", cr.reason, "err", err)
	return nil
}

// replyQueue is a connection's bounded reply queue. Its slice grows only
// as far as the bound and is released after a burst, so an idle connection
// holds no queue memory.
//
// It is bounded in count and in bytes, as centrifuge's and nats-server's
// client queues are: 256 acks are a few KB, 256 `page` replies of 100
// entries are megabytes.
type replyQueue struct {
	max      int           // replies
	maxBytes int           // bytes of replies; one reply larger than this still fits an empty queue
	ready    chan struct{} // capacity 1: the queue became non-empty
	mu       sync.Mutex    // guards items and bytes
	items    []*[]byte
	bytes    int
	// n is len(items), kept beside it so the writer's check for replies,
	// made on every wake, takes no lock.
	n atomic.Int32
}

// push appends b unless the queue is at its bound.
func (q *replyQueue) push(b *[]byte) bool {
	if !q.add(b) {
		return false
	}
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// add is push without waking the writer (acks.go wakes it, or writes in
// its place).
func (q *replyQueue) add(b *[]byte) bool {
	q.mu.Lock()
	if len(q.items) >= q.max || (len(q.items) > 0 && q.bytes+len(*b) > q.maxBytes) {
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
func (q *replyQueue) take(dst []*[]byte) []*[]byte { return q.takeUpTo(dst, math.MaxInt) }

// takeUpTo is take when the queued replies are at most limit bytes, else
// it takes nothing.
func (q *replyQueue) takeUpTo(dst []*[]byte, limit int) []*[]byte {
	// Without the lock when empty (a spectator's every wake): a reply that
	// must precede frames (`subscribed`) is pushed under the connection's
	// gate, which the writer holds here, so n shows it; any other push
	// pokes the writer again, or is written by the batch's end (acks.go).
	if q.n.Load() == 0 {
		return dst
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.bytes > limit {
		return dst
	}
	dst = append(dst, q.items...)
	q.items = reuse(q.items)
	q.bytes = 0
	q.n.Store(0)
	return dst
}

func (q *replyQueue) len() int { return int(q.n.Load()) }

// keepFrames empties frames for the next Take (the frames themselves are
// the board's, shared: only the references are dropped), or drops it when a
// burst of events made it large.
func keepFrames(frames [][]byte) [][]byte {
	if cap(frames) > 4 {
		return nil
	}
	clear(frames)
	return frames[:0]
}

// reuse empties s for reuse, or drops it when a burst made it large.
func reuse(s []*[]byte) []*[]byte {
	if cap(s) > 32 {
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
