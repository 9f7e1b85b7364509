package redisstore

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

func hourly(id string) rank.Board {
	b := rank.DefaultBoard(id)
	b.Reset = rank.Hourly
	return b
}

// periodNow is the current hourly period by the local clock, which is the
// server's clock here; an hour can turn during the test, so callers accept
// the index before or after.
func periodNow(b rank.Board) int64 { return rank.PeriodAt(b, time.Now()).Index }

// With the server's TIME as the clock: writes land in the current period,
// "previous" is empty, and the period keys expire per the board's retain.
func TestPeriodsServerClock(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{})
	b := hourly("hour")
	mustPut(t, s, b)
	before := periodNow(b)
	r := mustApply(t, s, incr(b.ID, "e1", "a", 3))
	after := periodNow(b)
	if r.Period != before && r.Period != after {
		t.Fatalf("applied to period %d, want %d", r.Period, before)
	}
	pg, err := s.Top(t.Context(), b.ID, "", 0, 10)
	if err != nil || pg.Total != 1 || pg.Period != r.Period && pg.Period != periodNow(b) {
		t.Fatalf("Top(current) = %+v, %v", pg, err)
	}
	prev, err := s.Top(t.Context(), b.ID, "previous", 0, 10)
	if err != nil || prev.Total != 0 || prev.Period >= pg.Period {
		t.Fatalf("Top(previous) = %+v, %v", prev, err)
	}
	byIndex, err := s.Top(t.Context(), b.ID, rank.PeriodSel(fmt.Sprint(r.Period)), 0, 10)
	if err != nil || byIndex.Total != 1 || byIndex.Period != r.Period {
		t.Fatalf("Top(%d) = %+v, %v", r.Period, byIndex, err)
	}
	p := rank.PeriodAt(b, time.Now())
	for _, k := range []string{s.zkey(s.ref(b.ID), r.Period), s.mkey(s.ref(b.ID), r.Period)} {
		ttl, err := s.client.PTTL(t.Context(), k).Result()
		if err != nil || ttl <= 0 || ttl > time.Until(p.ExpireAt(2))+time.Hour {
			t.Fatalf("PTTL(%s) = %s, %v; want until about %s", k, ttl, err, p.ExpireAt(2))
		}
	}
	if _, err := s.Top(t.Context(), b.ID, "yesterday", 0, 10); !errors.Is(err, rank.ErrBadRequest) {
		t.Fatalf("bad selector: %v", err)
	}
}

// A wrong estimate of the server clock (here three hours off either way)
// makes the script answer "clock"; the store resyncs and the event still
// lands in the server's current period.
func TestClockEstimateResync(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{})
	b := hourly("skew")
	mustPut(t, s, b)
	for i, skew := range []time.Duration{3 * time.Hour, -3 * time.Hour} {
		s.clock.mu.Lock()
		s.clock.offset, s.clock.synced = skew, time.Now()
		s.clock.mu.Unlock()
		before := periodNow(b)
		r := mustApply(t, s, incr(b.ID, fmt.Sprint("e", i), "a", 1))
		if after := periodNow(b); r.Period != before && r.Period != after {
			t.Fatalf("skew %s: applied to period %d, want %d", skew, r.Period, before)
		}
		s.clock.mu.Lock()
		s.clock.offset, s.clock.synced = skew, time.Now()
		s.clock.mu.Unlock()
		pg, err := s.Top(t.Context(), b.ID, "", 0, 10)
		if err != nil || pg.Total != 1 || pg.Entries[0].Score != int64(i+1) {
			t.Fatalf("skew %s: Top(current) = %+v, %v", skew, pg, err)
		}
	}
}

// DeleteBoard leaves no key of the board behind: periods, member maps,
// names, seq and idempotency records; other boards keep theirs.
func TestDeleteBoardRemovesEveryKey(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{})
	b := hourly("gone")
	mustPut(t, s, b)
	mustPut(t, s, rank.DefaultBoard("kept"))
	for i := range 50 {
		e := incr(b.ID, fmt.Sprint("e", i), fmt.Sprint("m", i%9), 1)
		e.Name = "N"
		mustApply(t, s, e)
	}
	mustApply(t, s, incr("kept", "e1", "a", 1))
	keys := func(pattern string) []string {
		ks, err := s.client.Keys(t.Context(), pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		return ks
	}
	// cfg, seq, names, z and m of the period, and the records' bucket hash.
	if n, r := len(keys(s.cfg.Prefix+":{gone}:*")), len(keys(s.cfg.Prefix+":{gone}:r:*")); n < 6 || r < 1 {
		t.Fatalf("only %d keys (%d record hashes) before delete", n, r)
	}
	keptBefore := len(keys(s.cfg.Prefix + ":{kept}:*"))
	if err := s.DeleteBoard(t.Context(), b.ID); err != nil {
		t.Fatal(err)
	}
	if left := keys(s.cfg.Prefix + ":{gone}:*"); len(left) != 0 {
		t.Fatalf("keys left after DeleteBoard: %s", strings.Join(left, " "))
	}
	if in, _ := s.client.SIsMember(t.Context(), s.boardsKey(), b.ID).Result(); in {
		t.Fatal("board id still listed")
	}
	if n := len(keys(s.cfg.Prefix + ":{kept}:*")); n != keptBefore {
		t.Fatalf("another board lost keys: %d, had %d", n, keptBefore)
	}
}

// The idempotency record stays compact: its size is reported, and bounded
// so a format change that bloats it fails here.
func TestIdempotencyRecordSize(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "lb"})
	mustPut(t, s, rank.DefaultBoard("run_hero"))
	r := mustApply(t, s, incr("run_hero", "req-000123", "player_42", 1200))
	hs, err := s.client.Keys(t.Context(), s.idKey("run_hero", "r:*")).Result()
	if err != nil || len(hs) != 1 {
		t.Fatalf("record hashes %v, %v; want one", hs, err)
	}
	k := hs[0]
	val, err := s.client.HGet(t.Context(), k, "player_42|req-000123").Result()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := s.client.MemoryUsage(t.Context(), k).Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("idempotency record %s = %q: value %d bytes, MEMORY USAGE of its bucket hash %d bytes (result %+v)", k, val, len(val), mem, r)
	if len(val) > 44 { // Redis keeps strings up to 44 bytes inline (embstr)
		t.Fatalf("record %q is %d bytes, want at most 44", val, len(val))
	}
}
