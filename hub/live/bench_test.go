package live

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
)

// benchEngine is an Engine on a memory board "g" of `members` members
// (p00000 the best, 10 points apart), not running: benchmarks call tick.
func benchEngine(b *testing.B, members int, clock *time.Time) (*Engine, *memstore.Store) {
	b.Helper()
	ms, err := memstore.New(rank.Hooks{}, memstore.Config{SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ms.Close() })
	ctx := context.Background()
	if _, err := ms.PutBoard(ctx, rank.DefaultBoard("g")); err != nil {
		b.Fatal(err)
	}
	for i := range members {
		_, err := rank.ApplyWait(ctx, ms, rank.Event{Board: "g", ID: fmt.Sprint(i), Member: fmt.Sprintf("p%05d", i), Op: rank.OpDelta, Amount: int64(10 * (members - i))})
		if err != nil {
			b.Fatal(err)
		}
	}
	e, err := New(Config{Store: ms, Refresh: -1, Now: func() time.Time { return *clock }})
	if err != nil {
		b.Fatal(err)
	}
	return e, ms
}

// clean drops every dirty mark of board g, as a tick would.
func clean(e *Engine) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.boards["g"]
	vs := kindOf[*views](b)
	for _, v := range vs.marked {
		v.dirty = false
	}
	vs.marked = vs.marked[:0]
	s := kindOf[*standings](b)
	for _, g := range s.marked {
		g.dirty = false
	}
	s.marked = s.marked[:0]
}

// BenchmarkChanged measures one change event against 10,000 views on one
// board (the best 10,000 of 20,000 members, around 2 each).
func BenchmarkChanged(b *testing.B) {
	const nviews, members = 10000, 20000
	clock := time.Unix(1e9, 0)
	e, _ := benchEngine(b, members, &clock)
	ctx := context.Background()
	for i := range nviews {
		if err := e.Subscribe(ctx, NewOutbox(0, nil), "g", 0, fmt.Sprintf("p%05d", i), 2); err != nil {
			b.Fatal(err)
		}
	}
	e.tick(ctx) // the views' first read: their windows
	if n := kindOf[*views](e.boards["g"]).index.n; n != nviews {
		b.Fatalf("%d views indexed, want %d", n, nviews)
	}
	seq := int64(members)
	e.Changed([]rank.Change{{Board: "g", Seq: seq, Member: "p19999", New: 10, Old: new(int64(10)), Rank: members, PrevRank: members}})
	score := func(i int) int64 { return int64(10 * (members - i)) }
	for _, tc := range []struct {
		name     string
		member   int
		to       int64
		affected int
	}{
		{"unaffected", 15000, score(15000) + 5, 0},     // below every window
		{"affected-5", 5000, score(5000) + 5, 5},       // inside five windows
		{"crossing-1000", 5000, score(4000) + 5, 1005}, // jumps over 1000 members
	} {
		b.Run(tc.name, func(b *testing.B) {
			m := fmt.Sprintf("p%05d", tc.member)
			old := score(tc.member)
			clean(e)
			for b.Loop() {
				seq++
				e.Changed([]rank.Change{{Board: "g", Seq: seq, Member: m, Old: &old, New: tc.to, Rank: int64(tc.member), PrevRank: int64(tc.member)}})
				if tc.affected > 0 {
					clean(e)
				}
			}
			e.mu.Lock()
			n := len(kindOf[*views](e.boards["g"]).marked)
			e.mu.Unlock()
			if tc.affected == 0 && n != 0 {
				b.Fatalf("%d views dirtied, want 0", n)
			}
		})
	}
	// Check the affected counts once, outside the timing.
	for _, tc := range []struct{ member, to, want int }{{5000, int(score(5000) + 5), 5}, {5000, int(score(4000) + 5), 1001}} {
		clean(e)
		seq++
		old := score(tc.member)
		e.Changed([]rank.Change{{Board: "g", Seq: seq, Member: fmt.Sprintf("p%05d", tc.member), Old: &old, New: int64(tc.to), Rank: 1, PrevRank: 1}})
		e.mu.Lock()
		n := len(kindOf[*views](e.boards["g"]).marked)
		e.mu.Unlock()
		if n < tc.want {
			b.Fatalf("change of p%05d to %d dirtied %d views, want at least %d", tc.member, tc.to, n, tc.want)
		}
	}
}

// BenchmarkTopFanout measures one tick that reads a changed top-10 and hands
// the one encoded frame to 10,000 outboxes.
func BenchmarkTopFanout(b *testing.B) {
	const subscribers = 10000
	clock := time.Unix(1e9, 0)
	e, ms := benchEngine(b, 1000, &clock)
	ctx := context.Background()
	outs := make([]*Outbox, subscribers)
	for i := range outs {
		outs[i] = NewOutbox(0, nil)
		if err := e.Subscribe(ctx, outs[i], "g", 10, "", 0); err != nil {
			b.Fatal(err)
		}
	}
	seq := int64(1000)
	e.Changed([]rank.Change{{Board: "g", Seq: seq, Member: "p00999", New: 10, Old: new(int64(10)), Rank: 1000, PrevRank: 1000}})
	e.tick(ctx) // the first frames
	for b.Loop() {
		// A new leader each time, so the frame really changes.
		seq++
		r, err := rank.ApplyWait(ctx, ms, rank.Event{Board: "g", ID: fmt.Sprint("x", seq), Member: "p00500", Op: rank.OpDelta, Amount: 100000})
		if err != nil {
			b.Fatal(err)
		}
		e.Changed([]rank.Change{changeOf(r)})
		clock = clock.Add(time.Second)
		e.tick(ctx)
	}
	b.StopTimer()
	if d, c := outs[0].Stats(); d != 0 || c < uint64(b.N) {
		b.Fatalf("outbox 0: %d delivered, %d coalesced over %d ticks", d, c, b.N)
	}
	b.ReportMetric(float64(subscribers), "outboxes/op")
}
