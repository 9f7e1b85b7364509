package redisstore

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// TestPutBoardRacingFinal: node A's PUT reads the config while the board is
// open; before it writes, node B stores a config that is final already
// (ends_at and grace in the past on the store clock). A's PUT must be
// refused with ErrBoardClosed and leave B's config in place: the final
// check belongs to the step that writes (putboard.lua), not to the read
// before it. The store clock of A is the hook: PutBoard reads it between
// the two, so B's PUT happens there.
func TestPutBoardRacingFinal(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	clk := ranktest.NewClock(time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC))
	var armed atomic.Bool
	var b *Store
	var bErr atomic.Value
	final := rank.DefaultBoard("race-final")
	final.EndsAt = rank.At(clk.Now().Add(-2 * time.Minute))
	final.Grace = rank.Duration(time.Minute)
	final.Title = "made final by node B"
	hook := func() time.Time {
		if armed.CompareAndSwap(true, false) {
			if _, err := b.PutBoard(t.Context(), final); err != nil {
				bErr.Store(err)
			}
		}
		return clk.Now()
	}
	a := newStore(t, srv, Config{Prefix: "racefinal", Now: hook})
	b = newStore(t, srv, Config{Prefix: "racefinal", Now: clk.Now})

	open := rank.DefaultBoard("race-final")
	open.EndsAt = rank.At(clk.Now().Add(time.Hour))
	open.Grace = rank.Duration(time.Minute)
	if _, err := a.PutBoard(t.Context(), open); err != nil {
		t.Fatal(err)
	}
	renamed := open
	renamed.Title = "renamed by node A"
	armed.Store(true)
	_, err := a.PutBoard(t.Context(), renamed)
	if e := bErr.Load(); e != nil {
		t.Fatalf("node B's PUT: %v", e)
	}
	if armed.Load() {
		t.Fatal("node A's PUT never read the store clock: the race did not happen")
	}
	if !errors.Is(err, rank.ErrBoardClosed) {
		t.Fatalf("node A's PUT over a board made final during it: %v; want ErrBoardClosed", err)
	}
	for _, s := range []*Store{a, b} {
		got, err := s.GetBoard(t.Context(), "race-final")
		if err != nil || got != final {
			t.Fatalf("stored config %+v, %v; want node B's final one %+v", got, err, final)
		}
	}
}

// TestPutBoardRacingDelete: a board deleted between PutBoard's read and
// its write is created anew (and listed), not refused or half-written.
func TestPutBoardRacingDelete(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	clk := ranktest.NewClock(time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC))
	var armed atomic.Bool
	var b *Store
	hook := func() time.Time {
		if armed.CompareAndSwap(true, false) {
			if err := b.DeleteBoard(t.Context(), "race-del"); err != nil {
				t.Errorf("node B's delete: %v", err)
			}
		}
		return clk.Now()
	}
	a := newStore(t, srv, Config{Prefix: "racedel", Now: hook})
	b = newStore(t, srv, Config{Prefix: "racedel", Now: clk.Now})
	cfg := rank.DefaultBoard("race-del")
	cfg.EndsAt = rank.At(clk.Now().Add(time.Hour))
	if _, err := a.PutBoard(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Title = "again"
	armed.Store(true)
	if _, err := a.PutBoard(t.Context(), cfg); err != nil {
		t.Fatalf("PUT racing a delete: %v", err)
	}
	if armed.Load() {
		t.Fatal("the race did not happen")
	}
	bs, err := b.Boards(t.Context())
	if err != nil || len(bs) != 1 || bs[0] != cfg {
		t.Fatalf("boards after the race: %+v, %v; want [%+v]", bs, err, cfg)
	}
}
