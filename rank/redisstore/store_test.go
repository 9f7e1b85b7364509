package redisstore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// prefixes hands out key prefixes so stores sharing one server never see
// each other's keys.
var prefixes atomic.Int64

// tlog is a logger writing to t.Log.
func tlog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// newStore makes a Store on srv with a fresh prefix; cfg's zero fields get
// the defaults. The store is closed at the end of the test.
func newStore(t testing.TB, srv *testenv.Redis, cfg Config) *Store {
	t.Helper()
	client, err := NewClient(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Client = client
	if cfg.Prefix == "" {
		cfg.Prefix = fmt.Sprintf("t%d", prefixes.Add(1))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := New(context.Background(), cfg)
	if err != nil {
		client.Close()
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newMem(t testing.TB) *memstore.Store {
	t.Helper()
	m, err := memstore.New(memstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestConformance(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	ranktest.Run(t, func(t *testing.T, now func() time.Time) rank.Store {
		return newStore(t, srv, Config{Now: now})
	})
}

func TestApplyContract(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	ranktest.RunApply(t, func(t *testing.T, sink rank.Sink) rank.Store {
		return newStore(t, srv, Config{Sink: sink})
	})
}

func TestDifferential(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	for _, seed := range []int64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			ranktest.Differential(t, newMem(t), newStore(t, srv, Config{}), seed, 3000)
		})
	}
}

// FuzzEquivalence holds the memory and Redis engines equal on fuzzed event
// sequences (ranktest.ApplyScript); the seed corpus is in testdata/fuzz.
func FuzzEquivalence(f *testing.F) {
	srv := testenv.StartRedis(f)
	red := newStore(f, srv, Config{})
	mem := newMem(f)
	f.Add([]byte{0x00, 0x18, 5, 0, 0x19, 5, 0, 0x00, 1, 0})
	f.Add([]byte{0x19, 0x98, 0x7f, 0, 0x99, 0x80, 0, 0x01, 0, 1})
	f.Fuzz(func(t *testing.T, script []byte) {
		ranktest.ApplyScript(t, mem, red, script)
	})
}
