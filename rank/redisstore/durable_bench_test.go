package redisstore

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// BenchmarkIngestReplicas is what Config.Replicas costs: many callers
// applying events on a master with one replica, acknowledged at the
// master's answer (replicas=0) or after WAIT 1 (replicas=1), in the same
// run. It reports the ack latency's p50 and p99 besides ns/op.
func BenchmarkIngestReplicas(b *testing.B) {
	rs := testenv.StartRedisSentinel(b, 1, 0)
	var ids atomic.Int64
	for _, n := range []int{0, 1} {
		b.Run("replicas="+strconv.Itoa(n), func(b *testing.B) {
			s := newOn(b, rs.Redis[0].URL(), rank.Hooks{}, Config{Prefix: "bi" + strconv.Itoa(n), Replicas: n})
			if _, err := s.PutBoard(context.Background(), rank.DefaultBoard("ingest")); err != nil {
				b.Fatal(err)
			}
			var mu sync.Mutex
			var lat []time.Duration
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					i := ids.Add(1)
					e := rank.Event{Board: "ingest", ID: "b" + strconv.FormatInt(i, 36), Member: "m" + strconv.Itoa(rand.IntN(10_000)),
						Op: rank.OpDelta, Amount: 1}
					start := time.Now()
					if _, err := rank.ApplyWait(context.Background(), s, e); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(start))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			b.StopTimer()
			if len(lat) > 0 {
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			}
		})
	}
}
