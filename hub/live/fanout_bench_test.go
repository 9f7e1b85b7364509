package live

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
)

// BenchmarkFrameFanout is one frame of a busy board through the live path
// to 1,000 subscribers: a change, the board's next read (tick), the frame
// encoded once and offered to every outbox, and every outbox's writer
// taking it (Take), one interval later each time. ns/op ÷ 1,000 is the
// engine's and outboxes' CPU per frame written (the socket write is the
// hub's: BenchmarkFrameWrite).
func BenchmarkFrameFanout(b *testing.B) {
	const subscribers = 1000
	clock := time.Unix(1e9, 0)
	now := func() time.Time { return clock }
	e, ms := benchEngine(b, 1000, &clock)
	ctx := context.Background()
	outs := make([]*Outbox, subscribers)
	for i := range outs {
		outs[i] = NewOutbox(100*time.Millisecond, now)
		if err := e.Subscribe(ctx, outs[i], "g", 10, "", 0); err != nil {
			b.Fatal(err)
		}
	}
	e.tick(ctx) // the board's first read: every subscriber's first frame
	for _, o := range outs {
		if fs, _ := o.Take(clock); len(fs) != 2 { // the board frame and the top
			b.Fatalf("%d first frames", len(fs))
		}
	}
	seq := int64(0)
	frames := 0
	for b.Loop() {
		seq++
		r, err := rank.ApplyWait(ctx, ms, rank.Event{Board: "g", ID: fmt.Sprint("x", seq), Member: "p00500", Op: rank.OpDelta, Amount: 100000})
		if err != nil {
			b.Fatal(err)
		}
		e.Changed([]rank.Change{changeOf(r)})
		clock = clock.Add(100 * time.Millisecond)
		e.tick(ctx)
		for _, o := range outs {
			fs, _ := o.Take(clock)
			frames += len(fs)
		}
	}
	b.StopTimer()
	if frames < b.N*subscribers*9/10 {
		b.Fatalf("%d frames taken in %d rounds of %d subscribers", frames, b.N, subscribers)
	}
	b.ReportMetric(float64(frames)/float64(b.N), "frames/op")
}

// BenchmarkBusyBoardReads runs an engine for real time (one second per op)
// on a board changed every 2 ms with 100 top subscribers and 20 views, and
// reports the store reads per second it made: about one per interval (10/s
// at the 100 ms interval) of each kind, top and ranks, however busy the
// board.
func BenchmarkBusyBoardReads(b *testing.B) {
	ms, err := memstore.New(rank.Hooks{}, memstore.Config{SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ms.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := ms.PutBoard(ctx, rank.DefaultBoard("g")); err != nil {
		b.Fatal(err)
	}
	st := &countingStore{Store: ms}
	e, err := New(Config{Store: st, Interval: 100 * time.Millisecond, Refresh: -1})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	apply := func(i int) {
		r, err := rank.ApplyWait(ctx, ms, rank.Event{Board: "g", ID: fmt.Sprint("e", i), Member: fmt.Sprintf("m%d", i%20), Op: rank.OpDelta, Amount: 1})
		if err != nil {
			b.Fatal(err)
		}
		e.Changed([]rank.Change{changeOf(r)})
	}
	for i := range 20 {
		apply(i)
	}
	for i := range 100 {
		o := NewOutbox(100*time.Millisecond, nil)
		go func() { // a writer that keeps the outbox drained
			for {
				select {
				case <-ctx.Done():
					return
				case <-o.Ready():
				case <-time.After(100 * time.Millisecond):
				}
				o.Take(time.Time{})
			}
		}()
		member, around := "", 0
		if i < 20 {
			member, around = fmt.Sprintf("m%d", i), 2
		}
		if err := e.Subscribe(ctx, o, "g", 10, member, around); err != nil {
			b.Fatal(err)
		}
	}
	tops0, ranks0 := st.tops.Load(), st.ranks.Load()
	start := time.Now()
	n := 100
	for b.Loop() {
		for end := time.Now().Add(time.Second); time.Now().Before(end); n++ {
			apply(n)
			time.Sleep(2 * time.Millisecond)
		}
	}
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64(st.tops.Load()-tops0)/secs, "top-reads/s")
	b.ReportMetric(float64(st.ranks.Load()-ranks0)/secs, "ranks-reads/s")
}
