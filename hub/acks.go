package hub

import "sync"

// Acks at a store batch boundary. A store completes a batch of events
// together (the Redis engine a pipeline, on its completer goroutine; the
// memory engine one Apply): each score's done encodes its ack and queues it
// on its connection. Waking each connection's writer for that put a
// writer per connection in the run queue after every batch, behind which
// the readers and the completer itself waited (docs/performance.md).
//
// So the store runs each batch's Done callbacks inside Hub.Completing.
// While a batch runs, a completion does not wake the writer: it lists the
// connection. When the batch ends, each listed connection's acks are
// written in one write(2) in its idle writer's place (direct.go), or its
// writer is woken. A completion outside a batch (a failure at submit)
// wakes the writer at once.

// ackBatch is the connections whose acks the batches running now queued.
type ackBatch struct {
	mu    sync.Mutex
	open  int     // Completing calls running (one per completer goroutine)
	conns []*conn // listed once each (conn.ackListed)
}

// Completing runs run, a batch of the store's Done callbacks, and then
// writes the acks they queued (see above): the Complete hook of either
// engine. Safe for concurrent use: each batch's end writes what was listed
// up to then.
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
	c.wake() // quiet: the reader writes them (the memory engine completes on it)
}
