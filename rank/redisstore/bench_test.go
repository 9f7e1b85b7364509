package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// populate fills a tiebreak-first board with n members directly (the same
// key layout apply.lua writes), so a 1M-member setup takes seconds.
func populate(b *testing.B, s *Store, id string, n int) {
	b.Helper()
	ctx := context.Background()
	if _, err := s.PutBoard(ctx, rank.DefaultBoard(id)); err != nil {
		b.Fatal(err)
	}
	const chunk = 5000
	for start := 0; start < n; start += chunk {
		pipe := s.client.Pipeline()
		for i := start; i < min(start+chunk, n); i++ {
			seq := int64(i + 1)
			m := "m" + strconv.Itoa(i)
			z := fmt.Sprintf("%016d|%s", int64(9999999999999999)-seq, m)
			pipe.ZAdd(ctx, s.zkey(s.ref(id), 0), redis.Z{Score: float64(rand.IntN(1_000_000)), Member: z})
			pipe.HSet(ctx, s.mkey(s.ref(id), 0), m, z)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.client.Set(ctx, s.idKey(id, "seq"), n, 0).Err(); err != nil {
		b.Fatal(err)
	}
}

func usedMemory(b *testing.B, s *Store) int64 {
	info, err := s.client.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatal("no used_memory")
	return 0
}

var sizes = []struct {
	name string
	n    int
}{{"10k", 10_000}, {"1M", 1_000_000}}

// BenchmarkApply: serial is one caller (one round trip per event); parallel
// and deep are many callers, whose events the lanes pipeline. B/event is Redis
// memory growth per applied event: mostly the idempotency record.
func BenchmarkApply(b *testing.B) {
	srv := testenv.StartRedis(b)
	s := newStore(b, srv, Config{})
	var ids atomic.Int64
	for _, sz := range sizes {
		id := "bench" + sz.name
		populate(b, s, id, sz.n)
		run := func(b *testing.B, parallel bool, next func() rank.Event) {
			mem := usedMemory(b, s)
			b.ReportAllocs()
			b.ResetTimer()
			if parallel {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := rank.ApplyWait(context.Background(), s, next()); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for range b.N {
					if _, err := rank.ApplyWait(context.Background(), s, next()); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(usedMemory(b, s)-mem)/float64(b.N), "B/event")
		}
		event := func() rank.Event {
			i := ids.Add(1)
			return rank.Event{Board: id, ID: "b" + strconv.FormatInt(i, 36), Member: "m" + strconv.Itoa(rand.IntN(sz.n)),
				Op: rank.OpDelta, Amount: int64(rand.IntN(100))}
		}
		b.Run(sz.name+"/serial", func(b *testing.B) { run(b, false, event) })
		// parallel: batches below maxPerScript; deep: full batches, so a
		// board's events take several rounds (one call per board and round).
		for _, p := range []struct {
			name string
			n    int
		}{{"parallel", 32}, {"deep", 256}} {
			b.Run(sz.name+"/"+p.name, func(b *testing.B) {
				b.SetParallelism(p.n)
				p0, c0 := s.lanes[0].pipelines.Load(), s.lanes[0].calls.Load()
				run(b, true, event)
				if p := s.lanes[0].pipelines.Load() - p0; p > 0 {
					b.ReportMetric(float64(s.lanes[0].calls.Load()-c0)/float64(p), "events/pipeline")
				}
			})
		}
	}
}

// BenchmarkRanks reads one member with 5 neighbours each side.
func BenchmarkRanks(b *testing.B) {
	srv := testenv.StartRedis(b)
	s := newStore(b, srv, Config{})
	for _, sz := range sizes {
		id := "ranks" + sz.name
		populate(b, s, id, sz.n)
		b.Run(sz.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m := "m" + strconv.Itoa(rand.IntN(sz.n))
				r, err := s.Ranks(context.Background(), id, "", []string{m}, 5)
				if err != nil || !r.Members[0].Found {
					b.Fatalf("Ranks(%s) = %+v, %v", m, r, err)
				}
			}
		})
	}
}

// BenchmarkApplyMeta: the score path of one 10k-member board, pipelined
// (parallel), without meta, with a 60-byte meta on every event, and with
// that meta on a board that keeps history 10, in one run so the three
// compare (docs/performance.md).
func BenchmarkApplyMeta(b *testing.B) {
	srv := testenv.StartRedis(b)
	s := newStore(b, srv, Config{})
	const n = 10_000
	const m = `{"replay":"https://replays.example/r/0123456789","car":"red"}`
	var ids atomic.Int64
	for _, tc := range []struct {
		name    string
		meta    string
		history int
	}{{"plain", "", 0}, {"meta", m, 0}, {"meta+history10", m, 10}} {
		id := "meta-" + strings.ReplaceAll(tc.name, "+", "-")
		populate(b, s, id, n)
		if tc.history > 0 {
			cfg := rank.DefaultBoard(id)
			cfg.History = tc.history
			if _, err := s.PutBoard(context.Background(), cfg); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(tc.name, func(b *testing.B) {
			b.SetParallelism(32)
			b.ReportAllocs()
			cpu := redisCPU(b, s)
			defer func() { b.ReportMetric((redisCPU(b, s)-cpu)*1e6/float64(b.N), "redis-cpu-µs/op") }()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					e := rank.Event{Board: id, ID: "b" + strconv.FormatInt(ids.Add(1), 36), Member: "m" + strconv.Itoa(rand.IntN(n)),
						Op: rank.OpDelta, Amount: int64(rand.IntN(100)), Meta: meta.Meta(tc.meta)}
					if _, err := rank.ApplyWait(context.Background(), s, e); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
