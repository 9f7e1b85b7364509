package memstore_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// testLogger writes the store's log lines to t.Log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

func newStore(t *testing.T, now func() time.Time) *memstore.Store {
	t.Helper()
	s, err := memstore.New(rank.Hooks{}, memstore.Config{Now: now, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	ranktest.Run(t, func(t *testing.T, now func() time.Time) rank.Store { return newStore(t, now) })
}

func TestApplyContract(t *testing.T) {
	t.Parallel()
	ranktest.RunApply(t, func(t *testing.T, hooks rank.Hooks) rank.Store {
		s, err := memstore.New(hooks, memstore.Config{Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
