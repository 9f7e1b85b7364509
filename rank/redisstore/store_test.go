package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
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
	return newHooked(t, srv, rank.Hooks{}, cfg)
}

// newHooked is newStore with hooks.
func newHooked(t testing.TB, srv *testenv.Redis, hooks rank.Hooks, cfg Config) *Store {
	t.Helper()
	client, err := NewClient(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = fmt.Sprintf("t%d", prefixes.Add(1))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := New(context.Background(), client, hooks, cfg)
	if err != nil {
		client.Close()
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newMem(t testing.TB) *memstore.Store {
	t.Helper()
	m, err := memstore.New(rank.Hooks{}, memstore.Config{})
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
	ranktest.RunApply(t, func(t *testing.T, hooks rank.Hooks) rank.Store {
		return newHooked(t, srv, hooks, Config{})
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

// hmgets is how many HMGET commands the server has run: Board reads a
// config with one.
func hmgets(t *testing.T, s *Store) int64 {
	t.Helper()
	info, err := s.client.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(line, "cmdstat_hmget:calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}

// An unknown board is remembered briefly: naming it again costs no Redis
// read, until PutBoard or Forget (or a second) drops that; the cache stays
// bounded however many boards are named.
func TestUnknownBoardCached(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "neg"})
	other := newStore(t, srv, Config{Prefix: "neg"})
	ctx := t.Context()

	n0 := hmgets(t, s)
	for range 50 {
		if _, err := s.Board(ctx, "ghost"); !errors.Is(err, rank.ErrUnknownBoard) {
			t.Fatalf("Board(ghost): %v, want ErrUnknownBoard", err)
		}
		if _, err := rank.ApplyWait(ctx, s, incr("ghost", "g", "a", 1)); !errors.Is(err, rank.ErrUnknownBoard) {
			t.Fatalf("Apply to ghost: %v, want ErrUnknownBoard", err)
		}
	}
	if n := hmgets(t, s) - n0; n != 1 {
		t.Fatalf("%d config reads for 100 requests naming one unknown board; want 1", n)
	}

	// Created on another node: the bus's Forget makes it known at once.
	mustPut(t, other, rank.DefaultBoard("ghost"))
	s.Forget("ghost")
	if _, err := s.Board(ctx, "ghost"); err != nil {
		t.Fatalf("Board(ghost) after Forget: %v", err)
	}
	// Created on this node: at once too.
	if _, err := s.Board(ctx, "ghost2"); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("Board(ghost2): %v", err)
	}
	mustPut(t, s, rank.DefaultBoard("ghost2"))
	mustApply(t, s, incr("ghost2", "g", "a", 1))
	// Created elsewhere and never heard of: within about a second.
	if _, err := s.Board(ctx, "ghost3"); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("Board(ghost3): %v", err)
	}
	mustPut(t, other, rank.DefaultBoard("ghost3"))
	testenv.Eventually(t, 5*time.Second, "ghost3 known after the negative entry expires", func() error {
		_, err := s.Board(ctx, "ghost3")
		return err
	})

	for i := range maxCachedBoards + 100 {
		if _, err := s.Board(ctx, fmt.Sprintf("r%d", i)); !errors.Is(err, rank.ErrUnknownBoard) {
			t.Fatalf("Board(r%d): %v", i, err)
		}
	}
	s.mu.Lock()
	n := len(s.boards)
	s.mu.Unlock()
	if n > maxCachedBoards {
		t.Fatalf("%d cached boards; the bound is %d", n, maxCachedBoards)
	}
}

// age makes the cache's entry for id look read d ago (a new entry, as a
// read would store: entries are never modified in place).
func age(s *Store, id string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *s.boards[id]
	c.at = time.Now().Add(-d)
	s.boards[id] = &c
}

// A cached config is answered without a Redis read (Board and CachedBoard
// alike) until it is boardTTL old, then read again: a change made on
// another node is seen within the TTL; Forget drops it at once. Invalid ids
// are refused and never cached.
func TestBoardCacheTTL(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "ttl"})
	other := newStore(t, srv, Config{Prefix: "ttl"})
	ctx := t.Context()

	b := rank.DefaultBoard("cached")
	mustPut(t, s, b)
	if _, err := s.Board(ctx, "cached"); err != nil {
		t.Fatal(err)
	}
	b.Title = "changed elsewhere"
	mustPut(t, other, b)

	n0 := hmgets(t, s)
	age(s, "cached", boardTTL-time.Second)
	got, err := s.Board(ctx, "cached")
	if err != nil || got.Title != "" {
		t.Fatalf("Board before the TTL: %q, %v; want the cached config", got.Title, err)
	}
	if c, ok := s.CachedBoard("cached"); !ok || c.Title != "" {
		t.Fatalf("CachedBoard before the TTL: %v; want the cached config", ok)
	}
	if n := hmgets(t, s) - n0; n != 0 {
		t.Fatalf("%d config reads for a fresh entry; want 0", n)
	}

	age(s, "cached", boardTTL)
	if _, ok := s.CachedBoard("cached"); ok {
		t.Fatal("CachedBoard answered an entry boardTTL old")
	}
	if got, err := s.Board(ctx, "cached"); err != nil || got.Title != b.Title {
		t.Fatalf("Board at the TTL: %q, %v; want %q, read again", got.Title, err, b.Title)
	}
	if n := hmgets(t, s) - n0; n != 1 {
		t.Fatalf("%d config reads for an expired entry; want 1", n)
	}
	if c, ok := s.CachedBoard("cached"); !ok || c.Title != b.Title {
		t.Fatalf("CachedBoard after the read: %v; want the new config", ok)
	}

	s.Forget("cached")
	if _, ok := s.CachedBoard("cached"); ok {
		t.Fatal("CachedBoard answered a forgotten board")
	}

	// Unknown boards are cached, but not for CachedBoard.
	if _, err := s.Board(ctx, "ghost"); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("Board(ghost): %v", err)
	}
	if _, ok := s.CachedBoard("ghost"); ok {
		t.Fatal("CachedBoard answered an unknown board")
	}

	for _, id := range []string{"", "a{b}", "sp ace", strings.Repeat("x", 65)} {
		if _, err := s.Board(ctx, id); !errors.Is(err, rank.ErrInvalidBoard) {
			t.Fatalf("Board(%q): %v, want ErrInvalidBoard", id, err)
		}
		s.mu.Lock()
		s.rememberLocked(id, cachedBoard{unknown: true, at: time.Now()})
		_, cached := s.boards[id]
		s.mu.Unlock()
		if cached {
			t.Fatalf("invalid id %q cached", id)
		}
		if _, err := s.Board(ctx, id); !errors.Is(err, rank.ErrInvalidBoard) {
			t.Fatalf("Board(%q) again: %v, want ErrInvalidBoard", id, err)
		}
	}
}

// An entry that ages out while many callers want it is read once for all
// of them (a storm of subscribes or scores at that moment), and a caller
// that gives up does not fail the others.
func TestBoardLoadShared(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "shared"})
	ctx := t.Context()
	mustPut(t, s, rank.DefaultBoard("busy"))
	if _, err := s.Board(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		age(s, "busy", boardTTL)
		n0 := hmgets(t, s)
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		gone, cancel := context.WithCancel(ctx)
		cancel() // this caller has left already
		if _, err := s.Board(gone, "busy"); err == nil {
			t.Fatal("a caller whose context ended got an answer")
		}
		for range 200 {
			wg.Go(func() {
				if b, err := s.Board(ctx, "busy"); err != nil || b.ID != "busy" {
					errs <- fmt.Errorf("%v, %v", b.ID, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		if n := hmgets(t, s) - n0; n > 2 {
			t.Fatalf("round %d: 200 callers of an aged entry made %d config reads; want 1 (2 if one finished before the others began)", round, n)
		}
	}
}
