package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// populateSharded fills a tiebreak-first board of the given shards with n
// members directly, in the key layout apply.lua writes (each member in its
// shard's key space).
func populateSharded(b *testing.B, s *Store, id string, shards, n int) {
	b.Helper()
	ctx := context.Background()
	cfg := rank.DefaultBoard(id)
	cfg.Shards = shards
	if _, err := s.PutBoard(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const chunk = 5000
	for start := 0; start < n; start += chunk {
		pipe := s.client.Pipeline()
		for i := start; i < min(start+chunk, n); i++ {
			m := "m" + strconv.Itoa(i)
			ks := id
			if shards > 1 {
				ks = shardID(id, shards, rank.ShardOf(m, shards))
			}
			z := fmt.Sprintf("%016d|%s", int64(9999999999999999)-int64(i+1), m)
			pipe.ZAdd(ctx, s.zkey(s.ref(ks), 0), redis.Z{Score: float64(rng.IntN(1_000_000)), Member: z})
			pipe.HSet(ctx, s.mkey(s.ref(ks), 0), m, z)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShardedTop reads the top 100 of a 100k-member board of 1 and
// of 16 shards (R24's merged read: the board's seq, then one pipelined
// range per shard, merged); and one member's rank with 5 neighbours.
func BenchmarkShardedTop(b *testing.B) {
	srv := testenv.StartRedis(b)
	s := newStore(b, srv, Config{})
	const n = 100_000
	for _, shards := range []int{1, 16} {
		id := "top" + strconv.Itoa(shards)
		populateSharded(b, s, id, shards, n)
		b.Run(fmt.Sprintf("shards=%d/top100", shards), func(b *testing.B) {
			b.ReportAllocs()
			cpu := redisCPU(b, s)
			for b.Loop() {
				p, err := s.Top(context.Background(), id, "", 0, 100)
				if err != nil || len(p.Entries) != 100 || p.Total != n {
					b.Fatalf("Top = %d entries of %d, %v", len(p.Entries), p.Total, err)
				}
			}
			b.ReportMetric((redisCPU(b, s)-cpu)*1e6/float64(b.N), "redis-cpu-µs/op")
		})
		b.Run(fmt.Sprintf("shards=%d/rank_around5", shards), func(b *testing.B) {
			b.ReportAllocs()
			cpu := redisCPU(b, s)
			for b.Loop() {
				m := "m" + strconv.Itoa(rand.IntN(n))
				r, err := s.Ranks(context.Background(), id, "", []string{m}, 5)
				if err != nil || !r.Members[0].Found {
					b.Fatalf("Ranks(%s) = %+v, %v", m, r, err)
				}
			}
			b.ReportMetric((redisCPU(b, s)-cpu)*1e6/float64(b.N), "redis-cpu-µs/op")
		})
	}
}

// redisCPU is the server's CPU time so far in seconds (user + system): the
// cost of a read on the Redis side, which a loaded machine's wall clock
// hides.
func redisCPU(b *testing.B, s *Store) float64 {
	info, err := s.client.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var t float64
	for _, line := range strings.Split(info, "\r\n") {
		for _, k := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				f, _ := strconv.ParseFloat(v, 64)
				t += f
			}
		}
	}
	return t
}

// BenchmarkShardedViews reads what one node's live views of a
// 100k-member board cost the store per interval: 1,000 and 10,000 views
// (around 5) of a board of 1 and of 16 shards, in one Ranks call, as the
// live engine batches a board's views of one around per tick. The
// store's and the client's timeouts are lifted: such a tick outlasts
// the defaults.
func BenchmarkShardedViews(b *testing.B) {
	srv := testenv.StartRedis(b)
	client, err := NewClient(srv.URL() + "?read_timeout=5m&write_timeout=5m")
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(context.Background(), client, rank.Hooks{}, Config{Prefix: "views", Timeout: 5 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	const n = 100_000
	for _, shards := range []int{1, 16} {
		id := "views" + strconv.Itoa(shards)
		populateSharded(b, s, id, shards, n)
		for _, views := range []int{1000, 10000} {
			members := make([]string, views)
			for i := range members {
				members[i] = "m" + strconv.Itoa(i*(n/views))
			}
			b.Run(fmt.Sprintf("shards=%d/views=%d", shards, views), func(b *testing.B) {
				b.ReportAllocs()
				cpu := redisCPU(b, s)
				for b.Loop() {
					r, err := s.Ranks(context.Background(), id, "", members, 5)
					if err != nil || len(r.Members) != views || !r.Members[views-1].Found || len(r.Members[0].Around) == 0 {
						b.Fatalf("Ranks of %d members: %v", views, err)
					}
				}
				us := (redisCPU(b, s) - cpu) * 1e6 / float64(b.N)
				b.ReportMetric(us, "redis-cpu-µs/tick")
				b.ReportMetric(us/float64(views), "redis-cpu-µs/view")
			})
		}
	}
}

// BenchmarkShardedApply applies events from 32 callers (the lanes
// pipelines them) to a 100k-member board of 1, 3 and 16 shards on one
// Redis, the sharded ones with ack_rank none (the default: the follow-up
// gives seqs only) and global (the follow-up counts every other shard for
// each ack's ranks and rewrites the records).
func BenchmarkShardedApply(b *testing.B) {
	srv := testenv.StartRedis(b)
	s := newStore(b, srv, Config{})
	const n = 100_000
	var ids atomic.Int64
	type tc struct {
		shards int
		ack    rank.AckRank
	}
	for _, c := range []tc{{1, ""}, {3, rank.AckRankNone}, {3, rank.AckRankGlobal}, {16, rank.AckRankNone}, {16, rank.AckRankGlobal}} {
		shards := c.shards
		id := fmt.Sprintf("apply%d%s", shards, c.ack)
		populateSharded(b, s, id, shards, n)
		if c.ack != "" {
			cfg, err := s.Board(context.Background(), id)
			if err != nil {
				b.Fatal(err)
			}
			cfg.AckRank = c.ack
			if _, err := s.PutBoard(context.Background(), cfg); err != nil {
				b.Fatal(err)
			}
		}
		name := fmt.Sprintf("shards=%d", shards)
		if c.ack != "" {
			name += "/ack_rank=" + string(c.ack)
		}
		b.Run(name, func(b *testing.B) {
			b.SetParallelism(16)
			b.ReportAllocs()
			cpu := redisCPU(b, s)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					e := rank.Event{Board: id, ID: "b" + strconv.FormatInt(ids.Add(1), 36), Member: "m" + strconv.Itoa(rand.IntN(n)),
						Op: rank.OpDelta, Amount: int64(rand.IntN(100))}
					if _, err := rank.ApplyWait(context.Background(), s, e); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric((redisCPU(b, s)-cpu)*1e6/float64(b.N), "redis-cpu-µs/op")
		})
	}
}

// BenchmarkShardIR counts what Redis runs (callgrindRedis) per event on a
// 20k-member board of 1 shard and of 16 (ack_rank none), alternately, from
// 1 caller (a call per event) and from 256 (the lane's rounds batch them):
// per configuration the instructions per event and per EVALSHA call at
// each, and the fixed cost per call and the cost per event that explain
// both (Ir = calls·c + events·e). Run it with -benchtime 1x; needs
// valgrind. LB_CALLGRIND_KEEP=DIR keeps the dumps (cg.out.<n>, in the
// order the log names the phases).
func BenchmarkShardIR(b *testing.B) {
	cg := callgrindRedis(b)
	s := cg.store
	ctx := context.Background()
	const n, events = 20_000, 4_000
	var ids atomic.Int64
	run := func(board string, count, callers int) {
		var wg sync.WaitGroup
		for w := range callers {
			wg.Go(func() {
				for i := w; i < count; i += callers {
					e := rank.Event{Board: board, ID: "i" + strconv.FormatInt(ids.Add(1), 36), Member: "m" + strconv.Itoa(rand.IntN(n)),
						Op: rank.OpDelta, Amount: int64(rand.IntN(100)), Submitter: uint64(w%16 + 1)}
					if _, err := rank.ApplyWait(ctx, s, e); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	for _, shards := range []int{1, 16} {
		id := "ir" + strconv.Itoa(shards)
		populateSharded(b, s, id, shards, n)
		cfg, err := s.Board(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if shards > 1 {
			cfg.AckRank = rank.AckRankNone
		}
		// An hour's record buckets: a bucket's first 128 records are a
		// listpack, searched entry by entry, which a board at full rate
		// leaves within milliseconds but a measured phase under valgrind
		// would not, with sixteen shards' buckets to fill.
		cfg.IdempotencyWindow = rank.Duration(time.Hour)
		if _, err := s.PutBoard(ctx, cfg); err != nil {
			b.Fatal(err)
		}
		run(id, 400*shards, 64) // warm: past the buckets' listpacks, the scripts loaded
	}
	type point struct{ ir, calls float64 }
	got := map[string]point{}
	for _, callers := range []int{1, 256} {
		for _, shards := range []int{1, 16} {
			ir, calls := cg.measure(func() { run("ir"+strconv.Itoa(shards), events, callers) })
			key := fmt.Sprintf("%d/%d", shards, callers)
			got[key] = point{ir, calls}
			b.Logf("shards %d, %d callers: %.0f Ir/event, %.2f events per call, %.0f Ir/call", shards, callers, ir/events, events/calls, ir/calls)
		}
	}
	for _, shards := range []int{1, 16} {
		p1, p2 := got[fmt.Sprintf("%d/1", shards)], got[fmt.Sprintf("%d/256", shards)]
		// Two equations, Ir = calls·c + events·e, for c and e.
		c := (p1.ir - p2.ir) / (p1.calls - p2.calls)
		e := (p2.ir - p2.calls*c) / events
		b.Logf("shards %d: %.0f Ir per call, %.0f Ir per event", shards, c, e)
		b.ReportMetric(c, fmt.Sprintf("shards%d-Ir/call", shards))
		b.ReportMetric(e, fmt.Sprintf("shards%d-Ir/event", shards))
	}
	b.ReportMetric(got["16/256"].ir/got["1/256"].ir, "ratio@256")
}
