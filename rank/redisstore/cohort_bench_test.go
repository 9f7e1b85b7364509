package redisstore

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"math/rand/v2"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
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
