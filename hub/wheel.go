package hub

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The hub's timers live on one wheel: every connection's ping and the
// pong check after it, its token's expiry, and a frame held by its
// interval. A timer per connection (the writer's, the expiry's) was a
// runtime timer and its memory per idle spectator, and firing them was
// most of an idle connection's CPU (docs/performance.md).
//
// The wheel is a ring of slots of one tick each, turned by one goroutine.
// An entry names a connection (through its timerRef), a kind and a time;
// the connection keeps each kind's current time (conn.due), and an entry
// whose time is no longer that one (moved by a later add, or taken), or
// whose connection has ended (the ref let go of it), is dropped when its
// slot comes round, so nothing is ever removed and a connection that
// ended is not kept. An entry beyond the ring's reach waits in its
// farthest slot and is put back.
type wheel struct {
	h     *Hub
	mu    sync.Mutex // guards slots, cur, base and next
	slots [wheelSlots][]wheelEntry
	cur   int   // the slot of the tick starting at base
	base  int64 // unix ns
	// next is the end of the tick the turning goroutine sleeps until (0:
	// it sleeps until an entry is added); an entry due before it wakes
	// the goroutine (kick), so an idle node's wheel does not tick.
	next int64
	kick chan struct{} // capacity 1
	once sync.Once
}

// wheelTick is the wheel's resolution: a frame held by its interval is
// taken at most this late; wheelSlots × wheelTick (41 s) is its reach.
const (
	wheelTick  = 10 * time.Millisecond
	wheelSlots = 4096
)

type timerKind uint8

const (
	timerPing   timerKind = iota // write a ping (pingDue)
	timerPong                    // the pong to the last ping is due (pongDue)
	timerExpiry                  // the token expires (expired)
	timerRetry                   // a frame held by the interval is due (the writer takes it)
	timerKinds
)

type wheelEntry struct {
	ref  *timerRef
	at   int64 // unix ns
	kind timerKind
}

// timerRef is what the wheel's entries hold of a connection: it lets go
// of the connection when it ends (conn.run), so the entries left on the
// wheel keep 16 bytes of it, not all it held.
type timerRef struct{ c atomic.Pointer[conn] }

// add sets c's timer of kind to at, replacing the one set before.
func (w *wheel) add(c *conn, kind timerKind, at time.Time) {
	ns := at.UnixNano()
	c.due[kind].Store(ns)
	w.put(wheelEntry{c.timers, ns, kind})
}

// addEarlier is add unless c's timer of kind is set already for at or
// sooner (it then fires first, and whoever it wakes sets the next).
func (w *wheel) addEarlier(c *conn, kind timerKind, at time.Time) {
	if cur := c.due[kind].Load(); cur != 0 && cur <= at.UnixNano() {
		return
	}
	w.add(c, kind, at)
}

func (w *wheel) put(e wheelEntry) {
	w.once.Do(w.start)
	w.mu.Lock()
	if w.next == 0 {
		// Nothing is on the wheel and its goroutine sleeps: the ring starts
		// at now (no tick has turned it while idle).
		w.base = time.Now().UnixNano()
	}
	off := int((e.at - w.base) / int64(wheelTick))
	off = max(0, min(off, wheelSlots-1))
	i := (w.cur + off) % wheelSlots
	w.slots[i] = append(w.slots[i], e)
	end := w.base + int64(off+1)*int64(wheelTick)
	kick := w.next == 0 || end < w.next
	if kick {
		w.next = end
	}
	w.mu.Unlock()
	if kick {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// start turns the wheel until the hub's context ends.
func (w *wheel) start() {
	w.base = time.Now().UnixNano()
	w.kick = make(chan struct{}, 1)
	go w.run(w.h.ctx)
}

func (w *wheel) run(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var due []wheelEntry
	for {
		now := time.Now()
		var next int64
		due, next = w.take(now.UnixNano(), due[:0])
		for i := range due {
			w.fire(due[i], now)
			due[i] = wheelEntry{}
		}
		wait := time.Hour // until kicked
		if next != 0 {
			wait = time.Duration(next - time.Now().UnixNano())
		}
		t.Reset(max(wait, 0))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.kick:
		}
	}
}

// take moves the entries of every slot whose tick has passed to due, and
// returns when the first slot holding entries ends (0: none holds any).
func (w *wheel) take(now int64, due []wheelEntry) ([]wheelEntry, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.base+int64(wheelTick) <= now {
		s := w.slots[w.cur]
		due = append(due, s...)
		clear(s)
		if cap(s) > 64 {
			s = nil // a burst's slot is not kept
		}
		w.slots[w.cur] = s[:0]
		w.cur = (w.cur + 1) % wheelSlots
		w.base += int64(wheelTick)
	}
	w.next = 0
	for i := range wheelSlots {
		if len(w.slots[(w.cur+i)%wheelSlots]) > 0 {
			w.next = w.base + int64(i+1)*int64(wheelTick)
			break
		}
	}
	return due, w.next
}

// fire runs an entry that came due, unless it is stale: put back when it
// lies beyond the ring's reach, confined to its connection if it panics.
func (w *wheel) fire(e wheelEntry, now time.Time) {
	c := e.ref.c.Load()
	if c == nil || c.due[e.kind].Load() != e.at {
		return
	}
	if e.at > now.UnixNano()+int64(wheelTick) {
		w.put(e)
		return
	}
	if !c.due[e.kind].CompareAndSwap(e.at, 0) {
		return
	}
	defer c.guard()
	if c.wstate.Load()&wEnded != 0 {
		return
	}
	switch e.kind {
	case timerPing:
		c.pingDue(now)
	case timerPong:
		c.pongDue()
	case timerExpiry:
		c.expired(now)
	case timerRetry:
		c.poke()
	}
}

// pingDue pings the peer (R: a peer that does not pong within WriteTimeout
// is gone) and sets the next ping; none while draining (the reader, which
// reads the pong, stops) or closing.
func (c *conn) pingDue(now time.Time) {
	if c.draining.Load() || c.closeAsked.Load() || c.aborted.Load() {
		return
	}
	c.h.wheel.add(c, timerPing, pingAt(now.Add(c.h.cfg.PingInterval), c.h.cfg.PingInterval)) // the first was jittered (start)
	// The pong check counts from the oldest ping not checked yet: a ping
	// interval shorter than the write timeout does not keep moving it.
	if c.due[timerPong].Load() == 0 {
		c.pingSent.Store(now.UnixNano())
		c.h.wheel.add(c, timerPong, now.Add(c.h.cfg.WriteTimeout))
	}
	if c.takeOver() {
		c.s.Ping() // a taker's Ping only appends
		c.give()
		return
	}
	c.pingWanted.Store(true)
	c.poke()
}

// pingAt is t rounded up to the ping grid of pings every interval: a
// second, or a sixteenth of a shorter interval. The node's pings go out in
// batches, one wheel tick a grid step, rather than a few every tick: the
// wheel's goroutine then wakes once a step instead of every tick, and the
// pongs come back together, so the runtime wakes fewer threads for them.
// Only the first ping is jittered (start), so the batches stay even.
func pingAt(t time.Time, interval time.Duration) time.Time {
	grid := int64(max(min(time.Second, interval/16), time.Millisecond))
	ns := t.UnixNano()
	return time.Unix(0, (ns+grid-1)/grid*grid)
}

// pongDue ends a connection whose peer did not answer the last ping.
func (c *conn) pongDue() {
	if c.draining.Load() || c.closeAsked.Load() || c.s.PongSince(time.Unix(0, c.pingSent.Load())) {
		return
	}
	c.h.log.Debug("hub: no pong: the peer is gone", "member", c.sub)
	go c.abort() // it may wait for a write in progress; the wheel does not
}
