package bus

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"

	"github.com/wsgateway/wsgateway/rank"
)

// tlog writes log lines to t.Log until the test ends; nats.go callbacks may
// still run during Cleanup.
type tlog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *tlog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(string(p))
	}
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	w := &tlog{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(io.Writer(w), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// recorder collects what a Bus delivers.
type recorder struct {
	mu      sync.Mutex
	batches [][]rank.Change
	resyncs []string
	boards  []BoardEvent
}

func (r *recorder) wire(cfg Config) Config {
	cfg.OnChanges = func(batch []rank.Change) {
		r.mu.Lock()
		r.batches = append(r.batches, batch)
		r.mu.Unlock()
	}
	cfg.OnResync = func(board string) {
		r.mu.Lock()
		r.resyncs = append(r.resyncs, board)
		r.mu.Unlock()
	}
	cfg.OnBoard = func(e BoardEvent) {
		r.mu.Lock()
		r.boards = append(r.boards, e)
		r.mu.Unlock()
	}
	return cfg
}

func (r *recorder) changes() []rank.Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []rank.Change
	for _, b := range r.batches {
		out = append(out, b...)
	}
	return out
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, b := range r.batches {
		n += len(b)
	}
	return n
}

func (r *recorder) resyncCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.resyncs)
}

// resyncedSince reports whether a resync covering board ("" covers all)
// arrived after the first `from` resyncs.
func (r *recorder) resyncedSince(from int, board string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.resyncs[from:], func(s string) bool { return s == "" || s == board })
}

func (r *recorder) boardEvents() []BoardEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.boards)
}

// newBus starts a Bus closed at the end of the test.
func newBus(t testing.TB, cfg Config) *Bus {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// ready waits until every bus answers a round trip, so its subscription is
// registered on the server.
func ready(t testing.TB, buses ...*Bus) {
	t.Helper()
	for _, b := range buses {
		testenv.Until(t, 20*time.Second, "bus ping", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return b.Ping(ctx) == nil
		})
	}
}

func ptr(v int64) *int64 { return &v }

// queued is the length of the publish queue.
func (b *Bus) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changes.len()
}
