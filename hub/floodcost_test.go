package hub

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestFloodHoldsSlots: a connection closed for flooding gives its address
// and member slots back floodHold after it ends, not at once, so a flooder
// that dials again meets the caps; any other connection gives them back at
// once.
func TestFloodHoldsSlots(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := &Hub{}
		h.reg.init()
		const ip, member = "198.51.100.7", "mallory"
		take := func(flooded bool) *reservation {
			if !h.reg.acquire(slotIP, ip, 1) || !h.reg.acquire(slotMember, member, 1) {
				t.Fatal("slots not free")
			}
			rv := &reservation{h: h, ipKey: ip, mKey: member, sock: floodedConn(flooded)}
			return rv
		}
		free := func() (ipFree, memberFree bool) {
			ipFree, memberFree = h.reg.acquire(slotIP, ip, 1), h.reg.acquire(slotMember, member, 1)
			if ipFree {
				h.reg.release(slotIP, ip)
			}
			if memberFree {
				h.reg.release(slotMember, member)
			}
			return ipFree, memberFree
		}

		take(false).release()
		if a, m := free(); !a || !m {
			t.Fatalf("a normal close kept its slots (address free %v, member free %v)", a, m)
		}

		take(true).release()
		if a, m := free(); a || m {
			t.Fatalf("a flood close gave its slots back at once (address free %v, member free %v)", a, m)
		}
		time.Sleep(floodHold - time.Millisecond)
		synctest.Wait()
		if a, m := free(); a || m {
			t.Fatalf("slots given back before floodHold (address free %v, member free %v)", a, m)
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		if a, m := free(); !a || !m {
			t.Fatalf("slots still held after floodHold (address free %v, member free %v)", a, m)
		}
	})
}

// floodedConn is a socket that was (or was not) closed for flooding.
type floodedConn bool

func (f floodedConn) Flooded() bool { return bool(f) }
