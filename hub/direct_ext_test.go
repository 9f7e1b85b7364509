package hub_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// TestDirectFanout: in a real fan-out, spectators whose writers are idle
// get their frames written by the fan-out itself (the direct path, so the
// optimisation cannot silently die), every frame is counted as written,
// and each spectator still sees `subscribed`, then the board frame, then
// top frames in seq order, ending at the store's state (R7, R19).
func TestDirectFanout(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{interval: 50 * time.Millisecond})
		g.board("direct", nil)
		w := g.dial(in.token(t, "srv", auth.Server))
		w.score("direct", "p0", 1)
		var specs []*wsClient
		for i := range 4 {
			s := g.dial(in.token(t, fmt.Sprintf("spec%d", i), auth.Spectator))
			id := s.id()
			s.send(proto.TypeSubscribe, id, map[string]any{"board": "direct", "top": 3})
			if m := s.next(); m.Type != proto.TypeSubscribed || m.ID != id {
				t.Fatalf("first reply %s, want subscribed", m)
			}
			if m := s.next(); m.Type != proto.TypeBoard {
				t.Fatalf("after subscribed: %s, want the board frame", m)
			}
			specs = append(specs, s)
		}
		// One event per interval and a bit: each read's frame is due when
		// it arrives and the writers are idle by then.
		const events = 30
		for i := range events {
			w.score("direct", fmt.Sprintf("p%d", i%5), int64(i+1))
			time.Sleep(60 * time.Millisecond)
		}
		want := g.top("direct", 3)
		for _, s := range specs {
			last := int64(-1)
			for {
				m, ok := s.nextFrame(proto.TypeTop, 5*time.Second)
				if !ok {
					t.Fatalf("no top frame equal to the store's (seq %d) after seq %d", want.Seq, last)
				}
				f := as[proto.Top](t, m)
				if f.Seq < last {
					t.Fatalf("seq went back: %d after %d", f.Seq, last)
				}
				last = f.Seq
				if f.Seq == want.Seq && sameEntries(f.Entries, want.Entries) {
					break
				}
			}
		}
		direct := g.Hub.DirectFrames()
		if direct < events {
			t.Fatalf("%d frames went the direct path over %d reads to 4 idle spectators", direct, events)
		}
		if out := g.metric("wsgateway_frames_out_total"); out < float64(direct) {
			t.Fatalf("frames_out_total %v is below the %d frames written directly: they are not counted", out, direct)
		}
		t.Logf("%d frames direct, %v written", direct, g.metric("wsgateway_frames_out_total"))
	})
}

// TestDirectSlowSpectator: a spectator that stops reading while its frames
// go the direct path is still closed as a slow consumer (R12): the bytes
// its socket does not take are owed to the writer, whose write is bounded
// by WriteTimeout. The other spectator is served throughout.
func TestDirectSlowSpectator(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{interval: 20 * time.Millisecond, cfg: func(c *hub.Config) {
		c.WriteTimeout = 700 * time.Millisecond
	}})
	g.board("slowtop", nil)
	srv := g.dial(in.token(t, "srv", auth.Server))
	for i := range 100 {
		srv.score("slowtop", fmt.Sprintf("member-with-a-long-name-%03d", i), int64(i))
	}
	slow, _, err := g.dialErr(in.token(t, "slowpoke", auth.Spectator), dialOptions{rcvBuf: 4096})
	if err != nil {
		t.Fatal(err)
	}
	other := g.dial(in.token(t, "other", auth.Spectator))
	for _, s := range []*wsClient{slow, other} {
		s.send(proto.TypeSubscribe, s.id(), map[string]any{"board": "slowtop", "top": 100})
	}
	other.next() // subscribed
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // a new top every read: ~8 KB frames every 20 ms
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			srv.score("slowtop", fmt.Sprintf("member-with-a-long-name-%03d", i%100), 1000)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	testenv.Until(t, 20*time.Second, "the slow spectator to be closed", func() bool {
		if _, ok := other.nextFrame(proto.TypeTop, 2*time.Second); !ok {
			t.Fatal("the other spectator got no frame")
		}
		return g.metric("wsgateway_slow_consumer_closes_total") >= 1
	})
	close(stop)
	<-done
	if g.Hub.DirectFrames() == 0 {
		t.Fatal("no frame went the direct path")
	}
	testenv.Until(t, 10*time.Second, "the slow spectator's connection to end", func() bool {
		return g.Hub.Conns() == 2 // srv and other
	})
	_ = slow
}
