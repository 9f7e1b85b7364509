package live

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
	"github.com/wsgateway/wsgateway/rank/redisstore"
)

// BenchmarkMembersFanout (docs/performance.md, "Member lists"): 2,000
// subscribers each following 50 friends out of a board's 10,000 members,
// on each engine. One op is one interval in which a new member takes the
// lead, which moves every listed member's rank: the engine's tick reads the
// union of the lists and hands each subscriber its new members frame.
// Reported: the Ranks calls per interval, the frames per interval, and
// this process's CPU (user + system, getrusage) per frame over the ticks;
// on Redis also redis-server's CPU per interval.
func BenchmarkMembersFanout(b *testing.B) {
	const members, subscribers, friends = 10_000, 2_000, 50
	for _, kind := range []string{"memory", "redis"} {
		b.Run(kind, func(b *testing.B) {
			var st rank.Store
			var rdb *redis.Client
			if kind == "memory" {
				ms, err := memstore.New(rank.Hooks{}, memstore.Config{SweepInterval: -1})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { ms.Close() })
				st = ms
			} else {
				srv := testenv.StartRedis(b)
				client, err := redisstore.NewClient(srv.URL())
				if err != nil {
					b.Fatal(err)
				}
				rs, err := redisstore.New(context.Background(), client, rank.Hooks{}, redisstore.Config{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { rs.Close() })
				st = rs
				rdb = redis.NewClient(&redis.Options{Addr: srv.Addr()})
				b.Cleanup(func() { rdb.Close() })
			}
			ctx := context.Background()
			if _, err := st.PutBoard(ctx, rank.DefaultBoard("g")); err != nil {
				b.Fatal(err)
			}
			fill(b, st, members)
			cs := &countingStore{Store: st}
			clock := time.Unix(2e9, 0)
			e, err := New(Config{Store: cs, Refresh: -1, Now: func() time.Time { return clock }})
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range subscribers {
				ids := make([]string, friends)
				for k := range ids {
					ids[k] = fmt.Sprintf("p%05d", rng.IntN(members))
				}
				if err := e.SubscribeSpec(ctx, NewOutbox(0, nil), Spec{Board: "g", Members: ids}); err != nil {
					b.Fatal(err)
				}
			}
			union := len(kindOf[*lists](e.boards["g"]).pos)

			var cpu, wall time.Duration
			var redisCPU float64
			reads, frames := cs.ranks.Load(), e.BoardStats()[0].Frames
			n := 0
			for b.Loop() {
				n++
				r, err := rank.ApplyWait(ctx, st, rank.Event{Board: "g", ID: "lead" + strconv.Itoa(n), Member: "lead" + strconv.Itoa(n), Op: rank.OpDelta, Amount: int64(10*members + n)})
				if err != nil {
					b.Fatal(err)
				}
				e.Changed([]rank.Change{changeOf(r)})
				clock = clock.Add(time.Second)
				rc := redisCPUSeconds(b, rdb)
				u0, t0 := cpuTime(), time.Now()
				e.tick(ctx)
				cpu += cpuTime() - u0
				wall += time.Since(t0)
				redisCPU += redisCPUSeconds(b, rdb) - rc
			}
			reads = cs.ranks.Load() - reads
			frames = e.BoardStats()[0].Frames - frames
			if frames != uint64(n*subscribers) {
				b.Fatalf("%d frames in %d intervals, want %d each", frames, n, subscribers)
			}
			b.ReportMetric(float64(reads)/float64(n), "reads/interval")
			b.ReportMetric(float64(frames)/float64(n), "frames/interval")
			b.ReportMetric(float64(union), "union")
			b.ReportMetric(float64(cpu.Microseconds())/float64(frames), "cpu-µs/frame")
			b.ReportMetric(float64(wall.Milliseconds())/float64(n), "tick-ms")
			if rdb != nil {
				b.ReportMetric(redisCPU*1e3/float64(n), "redis-cpu-ms/interval")
			}
		})
	}
}

// fill gives members p00000…p(n-1) distinct scores, 32 callers at a time.
func fill(b *testing.B, st rank.Store, n int) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := range 32 {
		wg.Go(func() {
			for i := w; i < n; i += 32 {
				if _, err := rank.ApplyWait(context.Background(), st, rank.Event{Board: "g", ID: strconv.Itoa(i), Member: fmt.Sprintf("p%05d", i), Op: rank.OpDelta, Amount: int64(10 * (n - i))}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// cpuTime is this process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPUSeconds is redis-server's user + system CPU so far (0 without
// Redis).
func redisCPUSeconds(b *testing.B, rdb *redis.Client) float64 {
	if rdb == nil {
		return 0
	}
	info, err := rdb.Info(context.Background(), "cpu").Result()
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
