package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// resumer follows one spectator's subscription to a board across
// connections: the epoch of its last `subscribed` and the greatest seq it
// received, as the clients keep them (§15).
type resumer struct {
	t     *testing.T
	g     *gateway
	board string
	epoch string
	seq   int64
	c     *wsClient
	in    chan frame // the connection's messages, read by a goroutine of its own
}

// frame is the fields of a frame a resume test looks at.
type frame struct {
	Type    string `json:"type"`
	Seq     int64  `json:"seq"`
	Final   bool   `json:"final"`
	Period  int64  `json:"period"`
	State   string `json:"state"`
	Epoch   string `json:"epoch"`
	Resumed *bool  `json:"resumed"`
	raw     string
}

// subscribe opens a connection and subscribes (resuming from what r holds
// when since is set), returning the `subscribed` reply.
func (r *resumer) subscribe(since bool) frame {
	r.t.Helper()
	r.c = r.g.dial(r.g.in.token(r.t, "fan", auth.Spectator))
	// A read whose context ends closes the connection (coder/websocket):
	// one goroutine reads, the test waits on the channel.
	in := make(chan frame, 64)
	r.in = in
	go func(c *wsClient) {
		defer close(in)
		for {
			m, err := c.read(time.Hour)
			if err != nil {
				return
			}
			var f frame
			if json.Unmarshal(m.raw, &f) != nil {
				return
			}
			f.raw = string(m.raw)
			in <- f
		}
	}(r.c)
	f := map[string]any{"board": r.board, "top": 3, "around": 1, "member": "m1"}
	if since {
		f["since"] = map[string]any{"epoch": r.epoch, "seq": r.seq}
	}
	r.c.send(proto.TypeSubscribe, "s", f)
	m := r.next(5 * time.Second)
	if m.Type != proto.TypeSubscribed || m.Epoch == "" {
		r.t.Fatalf("subscribe: %s, want subscribed with an epoch", m.raw)
	}
	if since != (m.Resumed != nil) {
		r.t.Fatalf("subscribe (since %v): %s: resumed must be answered exactly when since was sent", since, m.raw)
	}
	if m.Resumed == nil || !*m.Resumed {
		r.seq = 0
	}
	r.epoch = m.Epoch
	return m
}

// next reads the next message within d and records its seq.
func (r *resumer) next(d time.Duration) frame {
	r.t.Helper()
	m, ok := r.try(d)
	if !ok {
		r.t.Fatalf("no message within %s", d)
	}
	return m
}

// try reads the next message within d; false when none came.
func (r *resumer) try(d time.Duration) (frame, bool) {
	r.t.Helper()
	var f frame
	select {
	case m, ok := <-r.in:
		if !ok {
			r.t.Fatal("the connection ended")
		}
		f = m
	case <-time.After(d):
		return frame{}, false
	}
	if (f.Type == proto.TypeTop || f.Type == proto.TypeView) && !f.Final {
		r.seq = max(r.seq, f.Seq)
	}
	return f, true
}

// settle reads until both a top and a view frame came and nothing more
// comes for two intervals: r then holds the board's frames.
func (r *resumer) settle() {
	r.t.Helper()
	var top, view bool
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, ok := r.try(150 * time.Millisecond)
		if !ok && top && view {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no top and view frames within 10s (top %v, view %v)", top, view)
		}
		if !ok {
			continue
		}
		top = top || m.Type == proto.TypeTop
		view = view || m.Type == proto.TypeView
	}
}

// drain reads until nothing comes for 300 ms (at most 10 s).
func (r *resumer) drain() {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok := r.try(300 * time.Millisecond); !ok {
			return
		}
	}
	r.t.Fatal("frames kept coming for 10s")
}

// leave closes the connection: the client is away, and the node has seen
// it go (its subscriptions are dropped), so a resume that follows meets
// the node without them.
func (r *resumer) leave() {
	r.t.Helper()
	n := r.g.Hub.Conns()
	r.c.ws.CloseNow()
	testenv.Until(r.t, 10*time.Second, "the node to see the client leave", func() bool { return r.g.Hub.Conns() < n })
}

// quiet checks that nothing comes within d.
func (r *resumer) quiet(d time.Duration, what string) {
	r.t.Helper()
	if m, ok := r.try(d); ok {
		r.t.Fatalf("%s: got %s, want nothing", what, m.raw)
	}
}

// TestResume (§15, both setups): a resume of an unchanged board gets
// `resumed: true` and no frame at all (and frames again once the board
// changes), even on a node that does not hold the board; a resume after a
// change, on a node that holds the board, gets the current frames of what
// changed and no board frame; a foreign epoch, or one of a board deleted
// and made again, gets `resumed: false` and everything afresh.
func TestResume(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{})
		g.board("rs", nil)
		srv := g.dial(in.token(t, "srv", auth.Server))
		for i, m := range []string{"m1", "m2", "m3", "m4", "m5"} {
			srv.score("rs", m, int64(10*(i+1)))
		}
		r := &resumer{t: t, g: g, board: "rs"}
		r.subscribe(false)
		r.settle()
		r.leave()

		// Unchanged: nothing but the answer.
		if m := r.subscribe(true); !*m.Resumed {
			t.Fatalf("resume of an unchanged board: %s, want resumed", m.raw)
		}
		r.quiet(400*time.Millisecond, "a resume of an unchanged board")
		srv.score("rs", "m9", 1000)
		if m := r.next(5 * time.Second); m.Type != proto.TypeTop {
			t.Fatalf("after a change of the resumed board: %s, want its top frame", m.raw)
		}
		r.drain()
		r.leave()

		// Changed while away, on a node that holds the board's frames
		// (another spectator watches it, as in any busy deployment): the
		// frames that changed, no board frame.
		keeper := g.dial(in.token(t, "keeper", auth.Spectator))
		keeper.expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "rs", "top": 3, "around": 1, "member": "m1"})
		r.subscribe(true)
		r.drain()
		r.leave()
		before := r.seq
		srv.score("rs", "m9", 5) // the first moves up: the top changes, m1's window does not
		m := r.subscribe(true)
		if !*m.Resumed {
			t.Fatalf("resume after a change: %s, want resumed", m.raw)
		}
		got := r.next(5 * time.Second)
		if got.Type != proto.TypeTop || got.Seq <= before {
			t.Fatalf("resume after a change: %s, want a top frame newer than seq %d", got.raw, before)
		}
		r.quiet(400*time.Millisecond, "a resume after a change that moved only the top")
		r.leave()

		// A foreign epoch: everything afresh.
		epoch := r.epoch
		r.epoch = "not-the-epoch"
		if m := r.subscribe(true); *m.Resumed || m.Epoch != epoch {
			t.Fatalf("foreign epoch: %s, want resumed false and the board's epoch %s", m.raw, epoch)
		}
		if m := r.next(5 * time.Second); m.Type != proto.TypeBoard {
			t.Fatalf("fresh subscription: %s first, want the board frame", m.raw)
		}
		r.settle()
		r.leave()

		// The board made again: its old epoch is foreign.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Store.DeleteBoard(ctx, "rs"); err != nil {
			t.Fatal(err)
		}
		g.Node.BoardChanged("rs", true)
		g.board("rs", nil)
		srv.score("rs", "m1", 5)
		if m := r.subscribe(true); *m.Resumed || m.Epoch == epoch {
			t.Fatalf("a board made again: %s, want resumed false and a new epoch (old %s)", m.raw, epoch)
		}
		if m := r.next(5 * time.Second); m.Type != proto.TypeBoard {
			t.Fatalf("fresh subscription: %s first, want the board frame", m.raw)
		}
	})
}

// TestResumeMissedFinal (§15, both setups, the store's clock injected): a
// client away when a period became final gets that period's final frame on
// its resume, first, then the board frame of the new period, then the new
// period's frames; a client that was there when the next period became
// final got it live, and its resume does not send it again.
func TestResumeMissedFinal(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		clk := ranktest.NewClock(time.Date(2026, 12, 1, 12, 0, 30, 0, time.UTC))
		g := in.gateway(t, gwOptions{now: clk.Now})
		g.board("rf", func(b *rank.Board) { b.Reset = "1m" })
		srv := g.dial(in.token(t, "srv", auth.Server))
		srv.score("rf", "m1", 5)
		srv.score("rf", "m2", 7)
		away := &resumer{t: t, g: g, board: "rf"}
		away.subscribe(false)
		away.settle()
		away.leave()

		clk.Set(time.Date(2026, 12, 1, 12, 1, 5, 0, time.UTC)) // 12:00's period is final
		srv.score("rf", "m3", 9)
		if m := away.subscribe(true); !*m.Resumed {
			t.Fatalf("resume across a period's end: %s, want resumed", m.raw)
		}
		final := away.next(5 * time.Second)
		if final.Type != proto.TypeTop || !final.Final || final.Period != 202612010720 {
			t.Fatalf("first after the resume: %s, want the final top frame of period 202612010720", final.raw)
		}
		var top proto.Top
		json.Unmarshal([]byte(final.raw), &top)
		if len(top.Entries) != 2 || top.Entries[0].Member != "m2" {
			t.Fatalf("final frame %s, want the ended period's standings (m2, m1)", final.raw)
		}
		if b := away.next(5 * time.Second); b.Type != proto.TypeBoard || b.Period != 202612010721 {
			t.Fatalf("second after the resume: %s, want the board frame of period 202612010721", b.raw)
		}
		finals := 0
		for {
			m, ok := away.try(400 * time.Millisecond)
			if !ok {
				break
			}
			if m.Final {
				finals++
			}
		}
		if finals != 0 {
			t.Fatalf("the missed final came %d more times", finals)
		}

		// Here when 12:01's period ends: the final comes live, once, and a
		// resume after does not repeat it.
		clk.Set(time.Date(2026, 12, 1, 12, 2, 0, 500, time.UTC))
		testenv.Eventually(t, 5*time.Second, "the live final frame of 12:01", func() error {
			m, ok := away.try(200 * time.Millisecond)
			if ok && m.Final && m.Period == 202612010721 {
				return nil
			}
			return fmt.Errorf("last: %s", m.raw)
		})
		away.drain()
		away.leave()
		if m := away.subscribe(true); !*m.Resumed {
			t.Fatalf("resume after a final seen live: %s, want resumed", m.raw)
		}
		for {
			m, ok := away.try(400 * time.Millisecond)
			if !ok {
				break
			}
			if m.Final || m.Type == proto.TypeBoard {
				t.Fatalf("resume after a final seen live: %s, want neither the final nor the board frame again", m.raw)
			}
		}
	})
}

// TestResumeSeqWentBack (§15, Redis): a client that holds a seq the store
// does not have (the store lost writes) is not resumed: the board gets a
// new epoch and the subscription is fresh; later clients resume from it.
func TestResumeSeqWentBack(t *testing.T) {
	t.Parallel()
	in, g := redisGateway(t)
	g.board("rb", nil)
	srv := g.dial(in.token(t, "srv", auth.Server))
	for i := range 5 {
		srv.score("rb", fmt.Sprintf("m%d", i+1), int64(i+1))
	}
	r := &resumer{t: t, g: g, board: "rb"}
	r.subscribe(false)
	r.settle()
	r.leave()
	old, seq := r.epoch, r.seq

	// The store loses its last writes (a failover to a replica behind).
	rdb := redis.NewClient(&redis.Options{Addr: in.redis.Addr()})
	defer rdb.Close()
	if err := rdb.Set(context.Background(), "lb:{rb}:seq", 2, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if m := r.subscribe(true); *m.Resumed || m.Epoch == old {
		t.Fatalf("resume from seq %d beyond the store's: %s, want resumed false and a new epoch", seq, m.raw)
	}
	if m := r.next(5 * time.Second); m.Type != proto.TypeBoard {
		t.Fatalf("fresh subscription: %s first, want the board frame", m.raw)
	}
	r.settle()
	r.leave()
	if m := r.subscribe(true); !*m.Resumed {
		t.Fatalf("resume in the new epoch: %s, want resumed", m.raw)
	}
}
