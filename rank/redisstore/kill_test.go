package redisstore

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// TestKillAtBoundaryAndInGrace: Redis is killed (SIGKILL, AOF with fsync
// always) while events race a period boundary that is also a scheduled
// board's ends_at, and again inside the grace window while late events
// (`at` before the boundary) arrive; the store clock is injected and moved
// across the boundary while Redis is down. Clients re-send an event with
// the same id until they get a definite answer, as the contract tells
// them (R13). Then: every acknowledged event is counted exactly once in
// the period its ack names (the ledger equals both periods' standings and
// the final board's, and each board's seq is the number of events
// applied), and no late event sent once the clock reached final_at is
// applied.
func TestKillAtBoundaryAndInGrace(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	srv := testenv.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	boundary := time.Date(2031, 7, 8, 10, 0, 0, 0, time.UTC)
	const grace = 90 * time.Second
	clk := ranktest.NewClock(boundary.Add(-30 * time.Second))
	s := newStore(t, srv, Config{Timeout: 500 * time.Millisecond, Now: clk.Now, Logger: tlog(t)})
	periodic := rank.DefaultBoard("kill-periodic")
	periodic.Reset = "1h"
	periodic.Grace = rank.Duration(grace)
	sched := rank.DefaultBoard("kill-sched")
	sched.EndsAt = rank.At(boundary)
	sched.Grace = rank.Duration(grace)
	mustPut(t, s, periodic)
	mustPut(t, s, sched)
	prev := rank.PeriodAt(periodic, boundary.Add(-time.Second))
	cur := rank.PeriodAt(periodic, boundary)
	finalAt := boundary.Add(grace)

	type acked struct {
		e   rank.Event
		r   rank.Result
		dup bool
	}
	var (
		phase   atomic.Int32 // 0 before the boundary, 1 in grace, 2 after it
		sent    atomic.Int64 // events answered, for pacing the faults
		mu      sync.Mutex
		ledger  = map[string]acked{} // by board/id: each event once
		retries atomic.Int64
		stop    = make(chan struct{})
	)
	// send applies e until the answer is definite and returns it.
	send := func(e rank.Event) (rank.Result, error, time.Time) {
		for {
			start := clk.Now()
			r, err := rank.ApplyWait(t.Context(), s, e)
			if !errors.Is(err, rank.ErrUnavailable) {
				return r, err, start
			}
			retries.Add(1)
			select {
			case <-t.Context().Done():
				return r, err, start
			case <-time.After(5 * time.Millisecond): // a client's back-off
			}
		}
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ph := phase.Load()
				bd := periodic.ID
				if i%2 == 1 {
					bd = sched.ID
				}
				e := incr(bd, fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("m%d", i%5), int64(1+i%3))
				late := ph >= 1 && i%4 < 2
				if late {
					e.At = boundary.Add(-time.Second)
				}
				r, err, start := send(e)
				sent.Add(1)
				switch {
				case err == nil:
					if late && !r.Duplicate && !start.Before(finalAt) {
						t.Errorf("late event %+v sent at %s (final_at %s) applied: %+v", e, start, finalAt, r)
					}
					mu.Lock()
					if old, ok := ledger[bd+"/"+e.ID]; ok && !r.Duplicate {
						t.Errorf("event %s/%s applied twice: %+v then %+v", bd, e.ID, old.r, r)
					}
					// A duplicate answer to a re-sent event is its ack: an
					// attempt that got no answer was applied.
					if _, ok := ledger[bd+"/"+e.ID]; !ok {
						ledger[bd+"/"+e.ID] = acked{e: e, r: r, dup: r.Duplicate}
					}
					mu.Unlock()
				case errors.Is(err, rank.ErrBoardClosed):
					// refused: counted nowhere
				default:
					t.Errorf("apply %+v: %v", e, err)
					return
				}
			}
		})
	}
	waitSent := func(n int64, what string) {
		t.Helper()
		target := sent.Load() + n
		testenv.Until(t, 30*time.Second, what, func() bool { return sent.Load() >= target })
	}

	waitSent(300, "events before the boundary")
	srv.Kill()
	clk.Set(boundary) // exactly the boundary and ends_at, while Redis is down
	srv.Start()
	waitSent(300, "events after the restart at the boundary")
	clk.Set(boundary.Add(30 * time.Second))
	phase.Store(1)
	waitSent(300, "late events in grace")
	srv.Kill()
	clk.Advance(10 * time.Second)
	srv.Start()
	waitSent(300, "late events in grace after the restart")
	clk.Set(finalAt) // exactly final_at: nothing late may count any more
	phase.Store(2)
	waitSent(300, "late events after the grace")
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}

	// The ledger: per board and period, member sums and event counts.
	want := map[string]map[string]int64{}
	applied := map[string]int64{}
	for _, a := range ledger {
		k := fmt.Sprintf("%s/%d", a.e.Board, a.r.Period)
		if want[k] == nil {
			want[k] = map[string]int64{}
		}
		want[k][a.e.Member] += a.e.Amount
		applied[a.e.Board]++
	}
	check := func(board string, p int64) {
		t.Helper()
		sel := rank.PeriodSel("")
		if p != 0 {
			sel = rank.PeriodSel(fmt.Sprint(p))
		}
		pg, err := s.Top(t.Context(), board, sel, 0, 100)
		if err != nil {
			t.Fatalf("Top(%s, %d): %v", board, p, err)
		}
		w := want[fmt.Sprintf("%s/%d", board, p)]
		got := map[string]int64{}
		for _, e := range pg.Entries {
			got[e.Member] = e.Score
		}
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Fatalf("%s period %d: standings %v, ledger %v", board, p, got, w)
		}
		if pg.Seq != applied[board] {
			t.Fatalf("%s: seq %d, %d events applied", board, pg.Seq, applied[board])
		}
	}
	check(periodic.ID, prev.Index)
	check(periodic.ID, cur.Index)
	check(sched.ID, 0)
	for k := range want {
		if k != fmt.Sprintf("%s/%d", periodic.ID, prev.Index) && k != fmt.Sprintf("%s/%d", periodic.ID, cur.Index) && k != sched.ID+"/0" {
			t.Fatalf("events acknowledged in an unexpected period %s", k)
		}
	}
	lateApplied := 0
	for _, a := range ledger {
		if !a.e.At.IsZero() {
			lateApplied++
		}
	}
	if lateApplied == 0 || len(want[fmt.Sprintf("%s/%d", periodic.ID, cur.Index)]) == 0 {
		t.Fatalf("the run applied %d late events and none in the new period: it tested nothing", lateApplied)
	}
	dups := 0
	for _, a := range ledger {
		if a.dup {
			dups++
		}
	}
	t.Logf("%d events applied (%d late), %d re-sends across the kills, %d acknowledged by a re-send as a duplicate", len(ledger), lateApplied, retries.Load(), dups)
}
