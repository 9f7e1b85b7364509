package redisstore

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// TestMaxSubmissionsTwoNodes: two stores (two gateway nodes) on one Redis
// race one member's events on a board with max_submissions 3, one of them
// late into the previous period within grace; never more than 3 applied
// per period (R18, checked in apply.lua), on Redis's own clock.
func TestMaxSubmissionsTwoNodes(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	a := newStore(t, srv, Config{Prefix: "two"})
	b := newStore(t, srv, Config{Prefix: "two"})
	cfg := rank.DefaultBoard("race")
	cfg.MaxSubmissions = 3
	cfg.Reset = "1h"
	cfg.Grace = rank.Duration(time.Hour) // the previous period takes late events for its whole successor
	if _, err := a.PutBoard(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	now, err := a.Now(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	prev := rank.PeriodAt(cfg, now).Previous(cfg)
	var wg sync.WaitGroup
	var mu sync.Mutex
	applied := map[int64]int{}
	for n, s := range []*Store{a, b} {
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 4 {
					e := rank.Event{Board: "race", ID: fmt.Sprintf("n%d-w%d-%d", n, w, i), Member: "racer", Op: rank.OpDelta, Amount: 1}
					if i%2 == 1 {
						e.At = prev.End.Add(-time.Second) // late, within grace
					}
					r, err := rank.ApplyWait(t.Context(), s, e)
					switch {
					case err == nil:
						mu.Lock()
						applied[r.Period]++
						mu.Unlock()
					case !errors.Is(err, rank.ErrLimitReached):
						t.Errorf("apply: %v", err)
					}
				}
			}()
		}
	}
	wg.Wait()
	cur := rank.PeriodAt(cfg, now).Index
	if applied[cur] != 3 || applied[prev.Index] != 3 || len(applied) != 2 {
		t.Fatalf("applied per period %v; want 3 in %d and 3 in %d", applied, cur, prev.Index)
	}
	for _, p := range []int64{cur, prev.Index} {
		pg, err := b.Top(t.Context(), "race", rank.PeriodSel(fmt.Sprint(p)), 0, 10)
		if err != nil || len(pg.Entries) != 1 || pg.Entries[0].Score != 3 {
			t.Fatalf("period %d: %+v, %v", p, pg, err)
		}
	}
}
