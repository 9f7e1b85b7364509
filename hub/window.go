package hub

import (
	"context"
	"slices"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// A connection keeps up to maxInFlight score events in flight instead of
// one (rank.Store.Apply completes asynchronously on Redis): the reader submits a score and reads the next frame, so a
// client's pipelined events share Redis pipelines and their acks leave
// together (one batched write). R2 holds through the window, a ring of reply
// slots in request order: a score takes a slot when submitted and fills it
// when its result comes back; replies leave the window only from its head,
// in order. A reply the reader produces while scores are in flight (an
// error: rate_limited, bad_request, forbidden…) takes a slot too, already
// filled. Every other request (page, rank, subscribe, unsubscribe, auth)
// first waits until the window is empty, so it sees the connection's own
// earlier scores and `subscribed` still precedes its first frame. The
// store applies one connection's events to a board in submission order
// (they carry its submitter).
//
// A full window makes the reader wait (backpressure: the client's frames
// stay in the socket). The memory engine completes inline, so there a slot
// is filled before Apply returns.
//
// On a board with a validation hook (§16) an event may wait for its
// verdict in its slot long after later events were applied, which would
// reorder one member's events (the last value of a set board, a history).
// So there an event waits in its slot, unsent, while an earlier event of
// the same member on the same board is unanswered, and goes to the store
// when that one is answered; other members' events and other boards' pass
// (R36).

// maxInFlight bounds the score events one connection has in flight.
const maxInFlight = 32

// window is a connection's in-flight replies. Guarded by conn.mu; the slots
// are allocated on a connection's first async score (spectators never
// score, and memory per idle connection counts).
type window struct {
	slots []slot
	head  int           // oldest slot
	n     int           // slots in use
	freed chan struct{} // capacity 1: a slot was released (the reader waits on it)
}

// slot is one reply in request order; buf is nil while its score is in
// flight.
type slot struct {
	c    *conn
	id   string
	buf  *[]byte
	done func(rank.Result, error) // s.complete, bound once
	// vb and vm are the board and member of an event on a validated
	// board ("" otherwise); ev is such an event waiting behind an earlier
	// one of its member (see above), nil once sent.
	vb, vm string
	ev     *rank.Event
}

func (c *conn) initWindow() {
	w := &window{}
	c.win = w
	w.slots = make([]slot, maxInFlight)
	w.freed = make(chan struct{}, 1)
	for i := range w.slots {
		s := &w.slots[i]
		s.c = c
		s.done = s.complete
	}
}

// complete is a score's result: on the store's goroutine, or on the
// reader's when the store failed at once. It must not block.
func (s *slot) complete(res rank.Result, err error) {
	c := s.c
	defer c.guard()
	var buf *[]byte
	if err != nil {
		buf = c.errorReply(s.id, err, 0)
	} else {
		buf = c.ackReply(s.id, res)
	}
	c.mu.Lock()
	s.buf = buf
	var send []waitingEvent
	if s.vb != "" {
		send = c.win.unblocked()
	}
	queued := c.releaseLocked()
	c.mu.Unlock()
	if queued {
		c.acked() // the writer, or the batch's end (acks.go), writes them
	}
	if len(send) > 0 {
		go c.sendWaiting(send) // done must not call the store
	}
}

// waitingEvent is an event taken from its slot to be sent.
type waitingEvent struct {
	s  *slot
	ev *rank.Event
}

// unblocked takes, in order, the waiting events no earlier unanswered
// event of their member holds back any more. Guarded by conn.mu.
func (w *window) unblocked() []waitingEvent {
	var out []waitingEvent
	var busy []*slot // unanswered validated slots met so far
	for i := range w.n {
		s := &w.slots[(w.head+i)%len(w.slots)]
		if s.vb == "" || s.buf != nil {
			continue
		}
		if s.ev != nil && !slices.ContainsFunc(busy, func(b *slot) bool { return b.vb == s.vb && b.vm == s.vm }) {
			out = append(out, waitingEvent{s, s.ev})
			s.ev = nil // taken: in flight from here on
		}
		busy = append(busy, s)
	}
	return out
}

// sendWaiting sends, in order, events that waited behind an earlier event of
// their member.
func (c *conn) sendWaiting(evs []waitingEvent) {
	for _, h := range evs {
		c.h.deps.Store.Apply(c.h.ctx, *h.ev, h.s.done)
	}
}

// inFlight is how many replies the window holds. Guarded by conn.mu.
func (c *conn) inFlight() int {
	if c.win == nil {
		return 0
	}
	return c.win.n
}

// next takes the slot after the window's last one, or returns nil when the
// window is full. Guarded by conn.mu.
func (w *window) next() *slot {
	if w.n == len(w.slots) {
		return nil
	}
	s := &w.slots[(w.head+w.n)%len(w.slots)]
	w.n++
	return s
}

// releaseLocked queues the filled slots at the head of the window, in
// order, without waking the writer, and wakes the reader if it waits for
// room. It reports whether it queued any (the caller has the writer told).
func (c *conn) releaseLocked() bool {
	w := c.win
	released := false
	for w.n > 0 {
		s := &w.slots[w.head]
		if s.buf == nil {
			break
		}
		c.pushQuiet(s.buf)
		s.buf, s.id = nil, ""
		w.head = (w.head + 1) % len(w.slots)
		w.n--
		released = true
	}
	if released {
		select {
		case w.freed <- struct{}{}:
		default:
		}
	}
	return released
}

// reserve takes the next slot for a reply to id, waiting while the window
// is full. It returns nil when ctx ended (the connection is going away).
// Reader only.
func (c *conn) reserve(ctx context.Context, id string) *slot {
	for {
		c.mu.Lock()
		if c.win == nil {
			c.initWindow()
		}
		w := c.win
		if s := w.next(); s != nil {
			s.id, s.vb, s.vm = id, "", "" // buf and ev are nil: released slots are cleared
			c.mu.Unlock()
			return s
		}
		c.mu.Unlock()
		if !c.waitFreed(ctx) {
			return nil
		}
	}
}

// settle waits until every score in flight is answered (false: ctx ended).
// Reader only.
func (c *conn) settle(ctx context.Context) bool {
	for {
		c.mu.Lock()
		n := c.inFlight()
		c.mu.Unlock()
		if n == 0 {
			return true
		}
		if !c.waitFreed(ctx) {
			return false
		}
	}
}

// waitFreed waits for a slot to be released; false when the connection
// is gone (wakeWindow) or ctx ended.
func (c *conn) waitFreed(ctx context.Context) bool {
	if c.gone() {
		return false
	}
	select {
	case <-c.win.freed: // a reader waits only with scores in flight: the window exists
		return !c.gone()
	case <-ctx.Done():
		return false
	}
}

// gone reports whether the connection is closed: aborted, or its writer
// has ended (a close written).
func (c *conn) gone() bool { return c.aborted.Load() || c.wstate.Load()&wEnded != 0 }

// wakeWindow wakes a reader waiting in waitFreed (abort, endWriter).
func (c *conn) wakeWindow() {
	c.mu.Lock()
	var ch chan struct{}
	if c.win != nil {
		ch = c.win.freed
	}
	c.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// apply submits a score event; its reply takes a slot. validated: its
// board has a hook, so it waits behind an unanswered event of its member.
func (c *conn) apply(ctx context.Context, e rank.Event, validated bool) {
	s := c.reserve(ctx, e.ID)
	if s == nil {
		return // the connection is ending: nobody would read the ack
	}
	e.Submitter = c.submitter
	if validated {
		c.mu.Lock()
		s.vb, s.vm = e.Board, e.Member
		if c.win.behind(s) {
			s.ev = &e
			c.mu.Unlock()
			return // sent when the earlier one is answered (complete)
		}
		c.mu.Unlock()
	}
	c.h.deps.Store.Apply(ctx, e, s.done)
}

// behind reports whether an earlier slot than s holds an unanswered event
// of its board and member. Guarded by conn.mu.
func (w *window) behind(s *slot) bool {
	for i := range w.n {
		o := &w.slots[(w.head+i)%len(w.slots)]
		if o == s {
			return false
		}
		if o.buf == nil && o.vb == s.vb && o.vm == s.vm {
			return true
		}
	}
	return false
}

// ackReply encodes the ack of res into a reply buffer.
func (c *conn) ackReply(id string, res rank.Result) *[]byte {
	ack := proto.AckOf(id, res)
	ack.Type = proto.TypeAck
	buf := c.h.getReplyBuf()
	*buf = proto.AppendAck(*buf, &ack)
	return buf
}
