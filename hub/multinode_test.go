package hub_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// TestR9MultiNode runs two gateway nodes on one Redis and one real
// nats-server: frames on B follow events applied on A, idempotency holds
// across nodes, and concurrent retries leave an exact ledger.
func TestR9MultiNode(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	in := newInfra(t, redisKind)
	a := in.gateway(t, gwOptions{node: "a"})
	b := in.gateway(t, gwOptions{node: "b"})
	a.board("multi", nil)

	onA := a.dial(in.token(t, "srv-a", auth.Server))
	onB := b.dial(in.token(t, "srv-b", auth.Server))
	for i, m := range []string{"p1", "p2", "w", "p3"} {
		onA.score("multi", m, int64(100-10*i))
	}

	spec := b.dial(in.token(t, "spec", auth.Spectator))
	spec.expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "multi", "top": 3})
	watcher := b.dial(in.token(t, "w", auth.Player))
	watcher.expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "multi", "top": 0, "around": 1})

	// p3 overtakes w and reaches the top, through node A.
	onA.score("multi", "p3", 50)
	want := a.top("multi", 3)
	waitTop(t, spec, want)
	testenv.Until(t, 5*time.Second, "B's view of w showing rank 4", func() bool {
		m, ok := watcher.nextFrame(proto.TypeView, 5*time.Second)
		if !ok {
			t.Fatal("no view frame on B")
		}
		v := as[proto.View](t, m)
		return v.Rank != nil && *v.Rank == 4 && v.Seq == want.Seq
	})

	// The same id and payload through B: the first result, duplicate.
	f := map[string]any{"board": "multi", "member": "p1", "delta": 5}
	onA.send(proto.TypeScore, "x-1", f)
	first := as[proto.Ack](t, onA.reply("x-1"))
	onB.send(proto.TypeScore, "x-1", f)
	again := as[proto.Ack](t, onB.reply("x-1"))
	if first.Duplicate || !again.Duplicate || again.Score != first.Score || again.Seq != first.Seq || again.Rank != first.Rank {
		t.Fatalf("repeat via B %+v, first via A %+v", again, first)
	}
	onB.send(proto.TypeScore, "x-1", map[string]any{"board": "multi", "member": "p1", "delta": 6})
	if m := onB.reply("x-1"); m.Code != proto.CodeIdempotencyConflict {
		t.Fatalf("other payload via B: %s", m)
	}

	// Ledger: connections on both nodes send events, each event re-sent up
	// to twice with the same id, on either node. The board must hold the
	// sum of distinct events, whatever the duplicates.
	a.board("ledger", nil)
	type event struct {
		id     string
		member string
		delta  int64
	}
	var events []event
	r := rand.New(rand.NewPCG(7, 9))
	for i := range 240 {
		events = append(events, event{fmt.Sprintf("e%d", i), fmt.Sprintf("m%d", r.IntN(12)), 1 + r.Int64N(50)})
	}
	const workers = 8
	var wg sync.WaitGroup
	for w := range workers {
		nodes := []*gateway{a, b}
		mine := nodes[w%2].dial(in.token(t, fmt.Sprintf("srv%d", w), auth.Server))
		other := nodes[(w+1)%2].dial(in.token(t, fmt.Sprintf("srv%dx", w), auth.Server))
		wg.Add(1)
		go func() {
			defer wg.Done()
			rr := rand.New(rand.NewPCG(uint64(w), 3))
			for i := w; i < len(events); i += workers {
				e := events[i]
				fields := map[string]any{"board": "ledger", "member": e.member, "delta": e.delta}
				for try := range 1 + rr.IntN(3) {
					c := mine
					if try > 0 && rr.IntN(2) == 0 {
						c = other
					}
					c.send(proto.TypeScore, e.id, fields)
					m, err := c.read(10 * time.Second)
					if err != nil || m.Type != proto.TypeAck || m.ID != e.id {
						t.Errorf("event %s try %d: %v %v", e.id, try, m, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	sums := map[string]int64{}
	for _, e := range events {
		sums[e.member] += e.delta
	}
	p := a.top("ledger", 100)
	if int(p.Total) != len(sums) {
		t.Fatalf("%d members on the board, want %d", p.Total, len(sums))
	}
	for _, e := range p.Entries {
		if e.Score != sums[e.Member] {
			t.Errorf("%s: %d, want %d", e.Member, e.Score, sums[e.Member])
		}
	}
	if p.Seq != int64(len(events)) {
		t.Errorf("seq %d, want %d distinct events", p.Seq, len(events))
	}
}

// waitTop reads top frames until one equals want (the store's top-N).
func waitTop(t *testing.T, c *wsClient, want rank.Page) {
	t.Helper()
	var last proto.Top
	testenv.Until(t, 5*time.Second, "a top frame equal to the store's", func() bool {
		m, ok := c.nextFrame(proto.TypeTop, 5*time.Second)
		if !ok {
			t.Fatalf("no top frame; last %+v, want %+v", last, want.Entries)
		}
		last = as[proto.Top](t, m)
		return last.Seq == want.Seq && last.Total == want.Total && sameEntries(last.Entries, want.Entries)
	})
}
