package hub

import "sync"

// Acks written by the store's completer. The Redis engine completes a
// pipeline's events together on one goroutine (rank/redisstore's
// completer): each score's done encodes its ack and queues it on its
// connection. Waking each connection's writer for that (one channel send,
// park and reschedule per connection per pipeline) put 32 writers in the
// run queue after every pipeline of a 32-connection ingest, behind which
// the readers and the completer itself waited (docs/performance.md, "The
// completer writes the acks").
//
// So the node runs the completer's callbacks inside Hub.Completing. While a
// batch runs, a completion does not wake the writer: it lists the
// connection. When the batch ends, the completer writes each listed
// connection's queued replies itself, in one write(2) per connection, when
// that connection's writer is idle (the direct path of direct.go, under the
// same conditions: nothing owed, no close or drain, no subscribe under the
// gate; and at most half a cork of replies). Otherwise it wakes the writer
// as before. A completion outside a batch (an engine that completes
// inline, a failure at submit) wakes the writer at once, as it always did.

// ackBatch is the connections whose acks the batches running now queued.
type ackBatch struct {
	mu    sync.Mutex
	open  int     // Completing calls running (one per completer goroutine)
	conns []*conn // listed once each (conn.ackListed)
}

// Completing runs run, a batch of the store's Done callbacks, and then
// writes the acks they queued (see above). It is the node's
// redisstore.Config.Completing. Safe for concurrent use: each batch's end
// writes what was listed up to then.
func (h *Hub) Completing(run func()) {
	b := &h.acks
	b.mu.Lock()
	b.open++
	b.mu.Unlock()
	defer h.endBatch()
	run()
}

// endBatch closes one batch and writes the acks of the listed connections.
func (h *Hub) endBatch() {
	b := &h.acks
	b.mu.Lock()
	b.open--
	conns := b.conns
	b.conns = nil
	for _, c := range conns {
		c.ackListed = false
	}
	b.mu.Unlock()
	for _, c := range conns {
		c.writeAcks()
	}
}

// acked is told that c's reply queue got replies from a completion: during
// a batch the connection is listed for the batch's end, otherwise its
// writer is woken.
func (c *conn) acked() {
	b := &c.h.acks
	b.mu.Lock()
	if b.open > 0 {
		if !c.ackListed {
			c.ackListed = true
			b.conns = append(b.conns, c)
		}
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	c.poke()
}

// writeAcks writes c's queued replies in the idle writer's place, or wakes
// the writer when it is not idle, the socket cannot take a direct write, or
// the replies are more than half a cork (a page reply can be large: the
// writer writes those).
func (c *conn) writeAcks() {
	if c.cc == nil || c.cc.rc == nil || !c.tryAcquire() {
		c.poke()
		return
	}
	var owed bool
	if c.pending = c.replies.takeUpTo(c.pending, maxCork/2); len(c.pending) > 0 {
		owed = c.cc.writeRepliesLocked(c.pending)
		for _, b := range c.pending {
			c.h.putReplyBuf(b)
		}
		c.h.directReplies.Add(uint64(len(c.pending)))
		c.pending = reuse(c.pending)
	}
	left := c.replies.len() > 0
	c.cc.mu.Unlock()
	c.work.Unlock()
	if owed || left {
		c.poke() // bytes owed or an error, or replies left: the writer's turn
	}
}
