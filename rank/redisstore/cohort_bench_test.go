package redisstore

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// BenchmarkCohort: the score path of a 10k-member board, pipelined
// (parallel), on a plain board, a cohort board (cohorts of 50) and a league
// board (cohorts of 50 in 3 tiers), in one run so they compare
// (docs/performance.md). "placed" events go to members already in their
// cohort; "new" events each place a member not seen before.
func BenchmarkCohort(b *testing.B) {
	srv := testenv.StartRedis(b)
	s := newStore(b, srv, Config{})
	const n = 10_000
	var ids atomic.Int64
	ctx := context.Background()
	lt, _ := rank.LeagueTiersOf("bronze", "silver", "gold")
	for _, tc := range []struct {
		name string
		mut  func(c *rank.Board)
	}{
		{"plain", func(*rank.Board) {}},
		{"cohort50", func(c *rank.Board) { c.Cohort.Size = 50 }},
		{"league50", func(c *rank.Board) {
			c.Cohort.Size, c.Reset = 50, rank.Daily
			c.League = rank.League{Tiers: lt, Promote: 5, Demote: 5}
		}},
	} {
		cfg := rank.DefaultBoard("co-" + tc.name)
		tc.mut(&cfg)
		if _, err := s.PutBoard(ctx, cfg); err != nil {
			b.Fatal(err)
		}
		// Every member placed through the engine (a cohort board's keys
		// are written only by apply.lua).
		var wg sync.WaitGroup
		for w := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 32 {
					e := rank.Event{Board: cfg.ID, ID: "p", Member: "m" + strconv.Itoa(i), Op: rank.OpDelta, Amount: int64(rand.IntN(100)), Submitter: uint64(w + 1)}
					if _, err := rank.ApplyWait(ctx, s, e); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		var fresh atomic.Int64
		for _, kind := range []string{"placed", "new"} {
			b.Run(tc.name+"/"+kind, func(b *testing.B) {
				b.SetParallelism(32)
				b.ReportAllocs()
				cpu := redisCPU(b, s)
				defer func() { b.ReportMetric((redisCPU(b, s)-cpu)*1e6/float64(b.N), "redis-cpu-µs/op") }()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						m := "m" + strconv.Itoa(rand.IntN(n))
						if kind == "new" {
							m = "n" + strconv.FormatInt(fresh.Add(1), 36)
						}
						e := rank.Event{Board: cfg.ID, ID: "b" + strconv.FormatInt(ids.Add(1), 36), Member: m,
							Op: rank.OpDelta, Amount: int64(rand.IntN(100))}
						if _, err := rank.ApplyWait(ctx, s, e); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkLeagueFold: the one apply that makes a league period's moves
// (apply.lua's leagueOpen, one script call over every cohort of the
// period) after n members played it, in cohorts of 50; run it with
// -benchtime 1x: each iteration plays a period first.
func BenchmarkLeagueFold(b *testing.B) {
	srv := testenv.StartRedis(b)
	clk := ranktest.NewClock(time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC))
	s := newStore(b, srv, Config{Now: clk.Now})
	ctx := context.Background()
	lt, _ := rank.LeagueTiersOf("bronze", "silver", "gold")
	for _, n := range []int{10_000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			cfg := rank.DefaultBoard("fold-" + strconv.Itoa(n))
			cfg.Cohort.Size, cfg.Reset = 50, rank.Daily
			cfg.League = rank.League{Tiers: lt, Promote: 5, Demote: 5}
			if _, err := s.PutBoard(ctx, cfg); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				var wg sync.WaitGroup
				for w := range 32 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for m := w; m < n; m += 32 {
							e := rank.Event{Board: cfg.ID, ID: "p" + strconv.Itoa(i), Member: "m" + strconv.Itoa(m), Op: rank.OpDelta, Amount: int64(rand.IntN(1000)), Submitter: uint64(w + 1)}
							if _, err := rank.ApplyWait(ctx, s, e); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				clk.Advance(24 * time.Hour)
				b.StartTimer()
				if _, err := rank.ApplyWait(ctx, s, rank.Event{Board: cfg.ID, ID: "fold" + strconv.Itoa(i), Member: "m0", Op: rank.OpDelta, Amount: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
