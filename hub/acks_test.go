package hub

import (
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/hub/sock"
)

// TestAckedListsDuringBatch: a completion outside a batch wakes the writer
// at once; inside one it lists the connection once, without waking it, and
// the batch's end hands it on: here to the writer, since the connection
// has no socket for a direct write. Nested batches (two completers) hand
// on what was listed when the first ends.
func TestAckedListsDuringBatch(t *testing.T) {
	t.Parallel()
	h := &Hub{}
	// Sockets without a RawConn: nothing can be written in their writers'
	// place, so the batch's end pokes the writers; each connection's writer
	// is taken as running, so a poke shows as its "look again".
	newC := func() *conn {
		c := &conn{h: h, s: sock.New(nil, nil, time.Second, nil)}
		c.wstate.Store(wRunning)
		return c
	}
	woken := func(c *conn) bool {
		return c.wstate.CompareAndSwap(wRunning|wAgain, wRunning)
	}

	c := newC()
	c.acked()
	if !woken(c) {
		t.Fatal("an ack outside a batch did not wake the writer")
	}

	d := newC()
	h.Completing(func() {
		c.acked()
		c.acked()
		d.acked()
		if woken(c) || woken(d) {
			t.Fatal("an ack inside a batch woke the writer before the batch ended")
		}
		h.acks.mu.Lock()
		n := len(h.acks.conns)
		h.acks.mu.Unlock()
		if n != 2 {
			t.Fatalf("%d connections listed, want 2 (each once)", n)
		}
	})
	if !woken(c) || !woken(d) {
		t.Fatal("the batch's end did not hand the listed connections on")
	}
	if c.ackListed || d.ackListed {
		t.Fatal("a connection stayed marked as listed after the batch")
	}

	// Two batches at once: the first to end hands on what was listed.
	h.Completing(func() {
		h.Completing(func() { c.acked() })
		if !woken(c) {
			t.Fatal("the inner batch's end did not hand on its connection")
		}
		d.acked()
		if woken(d) {
			t.Fatal("an ack while the outer batch runs woke the writer")
		}
	})
	if !woken(d) {
		t.Fatal("the outer batch's end did not hand on its connection")
	}
	c.acked()
	if !woken(c) {
		t.Fatal("after every batch ended, an ack did not wake the writer")
	}
}
