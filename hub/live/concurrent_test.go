package live

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
)

// TestConcurrent runs the engine on the real clock while several writers
// apply and report events concurrently (so changes arrive out of order) and
// connection writers drain their Outboxes; once the writers stop, every
// subscriber converges on the store's state.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	ms, err := memstore.New(rank.Hooks{}, memstore.Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	st := &countingStore{Store: ms}
	ctx := t.Context()
	if _, err := st.PutBoard(ctx, rank.DefaultBoard("c")); err != nil {
		t.Fatal(err)
	}
	const interval = 10 * time.Millisecond
	e, err := New(Config{Store: st, Interval: interval, Refresh: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(testLogWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { e.Run(runCtx) })

	type conn struct {
		r             *reader
		top, around   int
		member        string
		mu            sync.Mutex // guards r, shared by the writer goroutine and the final check
		writerStopped chan struct{}
	}
	var conns []*conn
	for i := range 6 {
		c := &conn{r: newReader(t), top: 1 + i*3, member: member(i * 7), around: 1 + i%3, writerStopped: make(chan struct{})}
		c.r.o = NewOutbox(interval, nil)
		if err := e.Subscribe(ctx, c.r.o, "c", c.top, c.member, c.around); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		go func() { // the connection's writer goroutine
			defer close(c.writerStopped)
			writeLoop(runCtx, c.r.o, func() time.Duration {
				c.mu.Lock()
				defer c.mu.Unlock()
				return c.r.drain()
			})
		}()
	}

	var writers sync.WaitGroup
	for w := range 4 {
		writers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			for i := range 300 {
				r, err := rank.ApplyWait(ctx, st, rank.Event{Board: "c", ID: fmt.Sprintf("w%d-%d", w, i), Member: member(rng.IntN(50)), Op: rank.OpDelta, Amount: rng.Int64N(200) - 50})
				if err != nil {
					t.Error(err)
					return
				}
				e.Changed([]rank.Change{changeOf(r)})
				if i%10 == 0 {
					time.Sleep(time.Millisecond) // spread the load over many ticks
				}
			}
		})
	}
	writers.Wait()

	for _, c := range conns {
		testenv.Eventually(t, 5*time.Second, "the last frames to match the board", func() error {
			c.mu.Lock()
			defer c.mu.Unlock()
			if err := topMatches(ms, c.r, "c", c.top); err != nil {
				return err
			}
			return viewMatches(ms, c.r, "c", c.member, c.around)
		})
	}
	stop()
	wg.Wait()
	for _, c := range conns {
		<-c.writerStopped
	}
	if s := e.Stats(); s.Errors != 0 {
		t.Errorf("%d store errors", s.Errors)
	}
}
