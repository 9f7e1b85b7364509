package hub

import (
	"net/http"
	"net/netip"

	"github.com/wsgateway/wsgateway/internal/clientaddr"
)

// What the external tests (package hub_test, which run the hub inside a
// node) may see of the hub's internals.

// MaxInFlight is a connection's window of replies in flight (window.go).
const MaxInFlight = maxInFlight

// Slot kinds of the connection caps, for HeldSlots and AcquireSlot.
const (
	SlotIP     = slotIP
	SlotMember = slotMember
)

// HeldSlots is how many slots of kind key holds.
func (h *Hub) HeldSlots(kind slotKind, key string) int {
	s := h.reg.keyShard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slots[kind][key]
}

// AcquireSlot takes a slot of kind for key as an open connection does.
func (h *Hub) AcquireSlot(kind slotKind, key string, max int) bool {
	return h.reg.acquire(kind, key, max)
}

// ConnCaps are the caps the hub runs with, defaults filled in.
func (h *Hub) ConnCaps() (perIP, perMember int) {
	return h.cfg.MaxConnsPerIP, h.cfg.MaxConnsPerMember
}

// InFlight is every open connection's number of replies still held by its
// window.
func (h *Hub) InFlight() []int {
	var n []int
	for _, c := range h.reg.all() {
		c.mu.Lock()
		n = append(n, c.inFlight())
		c.mu.Unlock()
	}
	return n
}

// DirectFrames is how many frames the fan-out wrote in an idle writer's
// place (direct.go).
func (h *Hub) DirectFrames() uint64 { return h.directFrames.Load() }

// DirectReplies is how many replies the store's completer wrote in an idle
// writer's place (acks.go).
func (h *Hub) DirectReplies() uint64 { return h.directReplies.Load() }

// InjectPanic makes f run as an upgrade's token is accepted ("upgrade")
// and as every connection handles a request ("handle"), writes what its
// reader queued in the writer's place ("direct") and writes a writer's
// batch ("write"), so that a panic from f is one in that upgrade's or
// connection's handling. Set it before the first dial.
func (h *Hub) InjectPanic(f func(where, member string)) { h.testPanic = f }

// ClientIP is the address the per-address cap counts for r (clientKey's);
// the zero Addr means unknown.
func (h *Hub) ClientIP(r *http.Request) netip.Addr {
	a, _ := clientaddr.Proxies(h.cfg.TrustedProxies).Client(r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
	return a
}

// Parked is how many open connections wait on the hub's poller, with no
// reader goroutine (sock.Conn.Park).
func (h *Hub) Parked() int {
	n := 0
	for _, c := range h.reg.all() {
		if c.s.Parked() {
			n++
		}
	}
	return n
}
