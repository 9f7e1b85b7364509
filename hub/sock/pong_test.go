package sock

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

func TestPongBudget(t *testing.T) {
	t.Parallel()
	now := time.Unix(100, 0)
	var b pongBudget
	for i := range pongBurst {
		if !b.allow(now) {
			t.Fatalf("pong %d of the burst refused", i)
		}
	}
	if b.allow(now) {
		t.Fatal("a pong past the burst allowed")
	}
	now = now.Add(time.Second)
	for i := range pongRate {
		if !b.allow(now) {
			t.Fatalf("pong %d of the refill refused", i)
		}
	}
	if b.allow(now) {
		t.Fatal("a pong past the refill allowed")
	}
	// A client pinging every second (or every few) never loses one.
	var steady pongBudget
	for i := range 1000 {
		if !steady.allow(now.Add(time.Duration(i) * time.Second / 2)) {
			t.Fatalf("ping %d at 2/s lost its pong", i)
		}
	}
}

func TestIsPong(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    []byte
		want bool
	}{
		{[]byte{0x8A, 0}, true},
		{[]byte{0x8A, 2, 'h', 'i'}, true},
		{[]byte{0x8A, 2, 'h'}, false},            // not one whole frame
		{[]byte{0x8A, 0, 0x81, 1, 'x'}, false},   // a pong and a message
		{[]byte{0x89, 0}, false},                 // ping
		{[]byte{0x88, 2, 0x03, 0xF0}, false},     // close
		{[]byte{0x81, 3, '{', '}', '\n'}, false}, // text
		{[]byte{0x8A}, false},
		{nil, false},
	} {
		if got := isPong(tc.p); got != tc.want {
			t.Errorf("isPong(%x) = %v", tc.p, got)
		}
	}
}

// TestConnDropsPongsOverBudget: of 4096 pongs written at once, the
// peer gets the burst; every other write passes, in order.
func TestConnDropsPongsOverBudget(t *testing.T) {
	t.Parallel()
	server, client := net.Pipe()
	defer client.Close()
	cc := New(server, nil, 5*time.Second, testPool())
	var got []byte
	var wg sync.WaitGroup
	wg.Go(func() { got, _ = io.ReadAll(client) })
	for range 4096 {
		if n, err := cc.Write([]byte{0x8A, 0}); err != nil || n != 2 {
			t.Fatalf("pong write: %d, %v", n, err)
		}
	}
	msg := []byte{0x81, 2, 'o', 'k'}
	if _, err := cc.Write(msg); err != nil {
		t.Fatal(err)
	}
	server.Close()
	wg.Wait()
	pongs := 0
	for len(got) >= 2 && got[0] == 0x8A {
		pongs++
		got = got[2:]
	}
	if pongs < pongBurst || pongs > pongBurst+2 || string(got) != string(msg) {
		t.Fatalf("%d pongs then %x; want about %d, then the message", pongs, got, pongBurst)
	}
}

// TestSkipPongs: pongs at the front of what the client sent are taken and
// recorded without the library; anything else, or a pong not yet whole,
// is left for it; a flood of pongs spends the frame budget as read frames
// do.
func TestSkipPongs(t *testing.T) {
	t.Parallel()
	pong, text := frame(0xA, true, 0), frame(0x1, true, 3)
	for _, tc := range []struct {
		name     string
		in       []byte
		skipped  bool // SkipPongs' answer
		ponged   bool // a pong recorded
		buffered bool // bytes left for the library
	}{
		{"one pong", pong, true, true, false},
		{"two pongs", join(pong, frame(0xA, true, 4)), true, true, false},
		{"pong then text", join(pong, text), false, true, true},
		{"text then pong", join(text, pong), false, false, true},
		{"half a pong", pong[:4], false, false, true},
		{"ping", frame(0x9, true, 0), false, false, true},
		{"unmasked pong", []byte{0x8A, 0}, false, false, true},
		{"pong not final", frame(0xA, false, 0), false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, client := net.Pipe()
			defer client.Close()
			cc := New(server, tc.in, 5*time.Second, testPool())
			defer cc.Close()
			start := time.Now()
			if got := cc.SkipPongs(); got != tc.skipped {
				t.Errorf("SkipPongs = %v, want %v", got, tc.skipped)
			}
			if got := cc.PongSince(start); got != tc.ponged {
				t.Errorf("pong recorded = %v, want %v", got, tc.ponged)
			}
			if got := cc.Buffered(); got != tc.buffered {
				t.Errorf("buffered = %v, want %v", got, tc.buffered)
			}
		})
	}
	t.Run("flood", func(t *testing.T) {
		var in []byte
		for range floodBurst + 10 {
			in = append(in, pong...)
		}
		server, client := net.Pipe()
		defer client.Close()
		cc := New(server, in, 5*time.Second, testPool())
		flooded := false
		cc.SetOnFlood(func() { flooded = true })
		if cc.SkipPongs() {
			t.Error("a flood of pongs taken whole")
		}
		if !flooded || !cc.Flooded() {
			t.Error("a flood of pongs did not spend the frame budget")
		}
		go cc.Close() // the stalled read below waits for it
		if _, err := cc.Read(make([]byte, 16)); err == nil {
			t.Error("a read after the flood succeeded")
		}
	})
}
