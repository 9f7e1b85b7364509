package memstore

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

func mustStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := New(rank.Hooks{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (s *Store) peek(id string, f func(b *board)) {
	s.mu.RLock()
	b := s.boards[id]
	s.mu.RUnlock()
	b.mu.RLock()
	defer b.mu.RUnlock()
	f(b)
}

func mustApply(t testing.TB, s *Store, e rank.Event) rank.Result {
	t.Helper()
	r, err := rank.ApplyWait(t.Context(), s, e)
	if err != nil {
		t.Fatalf("Apply(%+v): %v", e, err)
	}
	return r
}

func incr(boardID, id, member string, d int64) rank.Event {
	return rank.Event{Board: boardID, ID: id, Member: member, Op: rank.OpDelta, Amount: d}
}

// Expired idempotency records are removed, by writes as they go and by Sweep.
func TestIdempotencyRecordsAreSwept(t *testing.T) {
	t.Parallel()
	clk := ranktest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := mustStore(t, Config{Now: clk.Now, SweepInterval: -1})
	cfg := rank.DefaultBoard("sweep")
	cfg.IdempotencyWindow = rank.Duration(time.Second)
	if _, err := s.PutBoard(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		mustApply(t, s, incr(cfg.ID, fmt.Sprintf("a%d", i), "m", 1))
	}
	clk.Advance(2 * time.Second)
	// Each write removes up to sweepPerApply expired records.
	for i := range 1000 {
		mustApply(t, s, incr(cfg.ID, fmt.Sprintf("b%d", i), "m", 1))
	}
	s.peek(cfg.ID, func(b *board) {
		if len(b.idem) != 1000 || b.queue.len() != 1000 {
			t.Fatalf("after writes: %d records, %d queued; want the 1000 live ones", len(b.idem), b.queue.len())
		}
	})
	clk.Advance(2 * time.Second)
	s.Sweep()
	s.peek(cfg.ID, func(b *board) {
		if len(b.idem) != 0 || b.queue.len() != 0 || b.queue.blocks() > 1 {
			t.Fatalf("after Sweep: %d records, %d queued (%d blocks)", len(b.idem), b.queue.len(), b.queue.blocks())
		}
	})
}

// The background sweeper removes records of a board that gets no writes.
func TestSweeperRuns(t *testing.T) {
	t.Parallel()
	clk := ranktest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := mustStore(t, Config{Now: clk.Now, SweepInterval: 5 * time.Millisecond})
	cfg := rank.DefaultBoard("sweeper")
	cfg.IdempotencyWindow = rank.Duration(time.Second)
	if _, err := s.PutBoard(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, incr(cfg.ID, "x", "m", 1))
	clk.Advance(2 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		s.peek(cfg.ID, func(b *board) { n = len(b.idem) })
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sweeper did not remove an expired record")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Periods past their retention are dropped with the names of members that
// are in no period any more.
func TestExpiredPeriodsAreDropped(t *testing.T) {
	t.Parallel()
	cfg := rank.DefaultBoard("hourly")
	cfg.Reset = rank.Hourly
	start := time.Date(2030, 1, 1, 10, 30, 0, 0, time.UTC)
	clk := ranktest.NewClock(start)
	s := mustStore(t, Config{Now: clk.Now, SweepInterval: -1})
	if _, err := s.PutBoard(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	e := incr(cfg.ID, "e1", "old", 5)
	e.Name = "Old"
	mustApply(t, s, e)
	p1 := rank.PeriodAt(cfg, start)

	clk.Set(p1.ExpireAt(2).Add(-time.Minute)) // still retained
	e = incr(cfg.ID, "e2", "new", 1)
	e.Name = "New"
	mustApply(t, s, e)
	if pg, err := s.Top(t.Context(), cfg.ID, rank.PeriodSel(fmt.Sprint(p1.Index)), 0, 10); err != nil || pg.Total != 1 {
		t.Fatalf("retained period: %+v, %v", pg, err)
	}

	clk.Set(p1.ExpireAt(2))
	if pg, err := s.Top(t.Context(), cfg.ID, rank.PeriodSel(fmt.Sprint(p1.Index)), 0, 10); err != nil || pg.Total != 0 {
		t.Fatalf("expired period still readable: %+v, %v", pg, err)
	}
	mustApply(t, s, incr(cfg.ID, "e3", "new", 1))
	s.peek(cfg.ID, func(b *board) {
		if _, ok := b.periods[p1.Index]; ok || len(b.periods) != 2 {
			t.Fatalf("periods after expiry: %d, p1 present %v", len(b.periods), ok)
		}
		if _, ok := b.names["old"]; ok || b.names["new"] != "New" {
			t.Fatalf("names after expiry: %v", b.names)
		}
	})
}

// Changing the order or tiebreak of a board with data re-keys it.
func TestReconfigureRekeys(t *testing.T) {
	t.Parallel()
	s := mustStore(t, Config{SweepInterval: -1})
	cfg := rank.DefaultBoard("rekey")
	ctx := t.Context()
	if _, err := s.PutBoard(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for i, m := range []string{"a", "b", "c"} {
		mustApply(t, s, incr(cfg.ID, m, m, 10))
		mustApply(t, s, incr(cfg.ID, m+"2", "low", int64(i)))
	}
	order := func() string {
		pg, err := s.Top(ctx, cfg.ID, "", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out string
		for _, e := range pg.Entries {
			out += fmt.Sprintf("%d%s ", e.Rank, e.Member)
		}
		return out
	}
	steps := []struct {
		mut  func(b *rank.Board)
		want string
	}{
		{func(b *rank.Board) {}, "1a 2b 3c 4low "},
		{func(b *rank.Board) { b.Tiebreak = rank.Last }, "1c 2b 3a 4low "},
		{func(b *rank.Board) { b.Tiebreak = rank.Shared }, "1c 1b 1a 4low "},
		{func(b *rank.Board) { b.Order = rank.Asc; b.Tiebreak = rank.First }, "1low 2a 3b 4c "},
	}
	for _, st := range steps {
		st.mut(&cfg)
		if _, err := s.PutBoard(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		if got := order(); got != st.want {
			t.Fatalf("after %s/%s: %s, want %s", cfg.Order, cfg.Tiebreak, got, st.want)
		}
	}
}

func TestClosedStoreFails(t *testing.T) {
	t.Parallel()
	s := mustStore(t, Config{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); !errors.Is(err, rank.ErrUnavailable) {
		t.Fatalf("Ping after Close: %v", err)
	}
	if _, err := s.PutBoard(t.Context(), rank.DefaultBoard("x")); !errors.Is(err, rank.ErrUnavailable) {
		t.Fatalf("PutBoard after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestGetBoardWhileApplyHoldsBoard: GetBoard reads the board's published
// view, not under its lock, so a score's config lookup never queues behind
// the applies holding it; the view follows a reconfigure (after the data is
// re-keyed) and a deletion, also through a pointer taken before it.
func TestGetBoardWhileApplyHoldsBoard(t *testing.T) {
	s := mustStore(t, Config{})
	ctx := t.Context()
	cfg := rank.DefaultBoard("held")
	if _, err := s.PutBoard(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	b := s.boards["held"]
	s.mu.RUnlock()

	b.mu.Lock() // as an apply holds it
	got := make(chan error, 1)
	go func() {
		_, err := s.GetBoard(ctx, "held")
		got <- err
	}()
	var err error
	waited := false
	select {
	case err = <-got:
	case <-time.After(time.Minute): // a deadlock detector, not a timing
		waited = true
	}
	b.mu.Unlock() // before failing, so the store's cleanup is not stuck
	if waited {
		t.Fatal("GetBoard waits for the board's lock")
	}
	if err != nil {
		t.Fatal(err)
	}

	cfg.Order = rank.Asc
	if _, err := s.PutBoard(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if cfg, err := s.GetBoard(ctx, "held"); err != nil || cfg.Order != rank.Asc {
		t.Fatalf("after the reconfigure: %+v, %v; want order asc", cfg, err)
	}
	if err := s.DeleteBoard(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	if v := b.view.Load(); !v.deleted {
		t.Fatal("a deleted board's view still reads as live")
	}
	if _, err := s.GetBoard(ctx, "held"); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("after the deletion: %v, want ErrUnknownBoard", err)
	}
}

// CachedBoard (rank.BoardCache) answers every board the store holds, as
// GetBoard would, follows a reconfigure, and answers nothing for an
// unknown, deleted or closed store's board (the caller then asks Board,
// which says why).
func TestCachedBoard(t *testing.T) {
	s := mustStore(t, Config{})
	ctx := t.Context()
	cfg := rank.DefaultBoard("cached")
	cfg.Title = "first"
	if _, err := s.PutBoard(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if b, ok := s.CachedBoard("cached"); !ok || b.Title != "first" || b.ID != "cached" {
		t.Fatalf("CachedBoard = %+v, %v; want the stored config", b, ok)
	}
	cfg.Title = "second"
	if _, err := s.PutBoard(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if b, ok := s.CachedBoard("cached"); !ok || b.Title != "second" {
		t.Fatalf("after the change: %+v, %v; want title second", b, ok)
	}
	if _, ok := s.CachedBoard("nosuch"); ok {
		t.Fatal("an unknown board answered")
	}
	if err := s.DeleteBoard(ctx, "cached"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.CachedBoard("cached"); ok {
		t.Fatal("a deleted board answered")
	}
	if _, err := s.PutBoard(ctx, rank.DefaultBoard("open")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.CachedBoard("open"); ok {
		t.Fatal("a closed store answered")
	}
}

// The expiry queue is first in, first out across its blocks, counts what
// it holds, gives back every block it emptied but one, and reuses that one.
func TestExpiryQueue(t *testing.T) {
	t.Parallel()
	var q expiryQueue
	if _, ok := q.front(); ok || q.len() != 0 {
		t.Fatal("an empty queue has a front")
	}
	next, front := 0, 0 // the next number to push, the one expected in front
	push := func(k int) {
		for range k {
			q.push(idemKey{member: fmt.Sprint(next)}, int64(next))
			next++
		}
	}
	pop := func(k int) {
		for range k {
			e, ok := q.front()
			if !ok || e.expires != int64(front) || e.key.member != fmt.Sprint(front) {
				t.Fatalf("front %+v, %v; want %d", e, ok, front)
			}
			q.pop()
			front++
		}
	}
	push(3*queueBlockLen + 5)
	if q.len() != 3*queueBlockLen+5 || q.blocks() != 4 {
		t.Fatalf("len %d in %d blocks; want %d in 4", q.len(), q.blocks(), 3*queueBlockLen+5)
	}
	pop(2*queueBlockLen + 1) // two blocks emptied: one kept as the spare
	if q.blocks() != 3 {
		t.Fatalf("%d blocks after emptying two of four; want 3 (two in use, one spare)", q.blocks())
	}
	push(queueBlockLen) // fills the tail and takes the spare
	if q.blocks() != 3 {
		t.Fatalf("%d blocks; want 3: the spare is reused before a new one", q.blocks())
	}
	pop(q.len())
	if _, ok := q.front(); ok || q.len() != 0 || q.blocks() != 1 {
		t.Fatalf("after popping all: len %d, %d blocks; want 0 and the spare", q.len(), q.blocks())
	}
	push(10)
	pop(10)
	if next != front {
		t.Fatalf("pushed %d, popped %d", next, front)
	}
}

// TestOutboxMarkersSwept: markers that lapsed are dropped as new ones come,
// so the map holds about the live ones; markers kept for good stay.
func TestOutboxMarkersSwept(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	o := NewOutbox(func() time.Time { return now })
	ctx := t.Context()
	for i := range 10 {
		if ok, err := o.AppendOutbox(ctx, fmt.Sprintf("forever-%d", i), 0, rank.OutboxEvent{Event: "x"}); !ok || err != nil {
			t.Fatalf("append forever-%d: %v, %v", i, ok, err)
		}
	}
	for i := range 100_000 {
		now = now.Add(time.Millisecond)
		if _, err := o.AppendOutbox(ctx, fmt.Sprintf("m-%d", i), time.Second, rank.OutboxEvent{Event: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	o.mu.Lock()
	n := len(o.markers)
	_, kept := o.markers[rank.MarkerKey("forever-3")]
	o.mu.Unlock()
	// About a second's worth (1,000) are live; a sweep runs before the map
	// doubles past the last sweep plus 1,024.
	if n > 2*1000+1024+10 {
		t.Errorf("%d markers held after 100,000 with a 1 s life", n)
	}
	if !kept {
		t.Error("a marker kept for good was swept")
	}
	if ok, _ := o.AppendOutbox(ctx, "m-99999", time.Second, rank.OutboxEvent{Event: "x"}); ok {
		t.Error("a live marker was swept: its event appended twice")
	}
}
