package redisstore

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// BenchmarkEraseBusyBoard is an erasure on a busy board (docs/performance.md,
// "Erasure on a busy board"): one board whose bucket of idempotency records
// holds ERASE_RECORDS (3,000,000) fields, 100 of them the member's, as a
// board taking 5,000 events a second holds over its 10-minute window; the
// erasure runs with no deadline of its own (each store call has the
// store's 2 s). It reports the erasure's time, and the longest and the
// number of script calls Redis ran for it (its SLOWLOG and commandstats).
// Run with -benchtime 1x.
func BenchmarkEraseBusyBoard(b *testing.B) {
	n := 3_000_000
	if v, err := strconv.Atoi(os.Getenv("ERASE_RECORDS")); err == nil && v > 0 {
		n = v
	}
	srv := testenv.StartRedis(b)
	s := newStore(b, srv, Config{HotInterval: -1})
	ctx := context.Background()
	if _, err := s.PutBoard(ctx, rank.DefaultBoard("busy")); err != nil {
		b.Fatal(err)
	}
	if _, err := rank.ApplyWait(ctx, s, rank.Event{Board: "busy", ID: "r0", Member: "gdpr-bench", Op: rank.OpDelta, Amount: 1}); err != nil {
		b.Fatal(err)
	}
	buckets, err := s.client.Keys(ctx, escapeGlob(s.cfg.Prefix)+":{busy}:r:*").Result()
	if err != nil || len(buckets) != 1 {
		b.Fatalf("buckets %v %v", buckets, err)
	}
	for start := 0; start < n; start += 10000 {
		pipe := s.client.Pipeline()
		for i := start; i < min(start+10000, n); i++ {
			m := "p" + strconv.Itoa(i%50000)
			if i%(n/100) == 0 {
				m = "gdpr-bench"
			}
			pipe.HSet(ctx, buckets[0], m+"|r"+strconv.Itoa(i), "0123456789abcdef0123456789abcdef")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	s.client.ConfigSet(ctx, "slowlog-log-slower-than", "1000")
	s.client.SlowLogReset(ctx)
	s.client.ConfigResetStat(ctx)
	b.ResetTimer()
	for range b.N {
		began := time.Now()
		e, err := s.Erase(ctx, "gdpr-bench")
		took := time.Since(began)
		b.ReportMetric(took.Seconds(), "s/erasure")
		b.Logf("%d records in the bucket: Erase took %s: %+v, %v", n+1, took.Round(time.Millisecond), e, err)
	}
	b.StopTimer()
	logs, _ := s.client.SlowLogGet(ctx, 5).Result()
	var longest time.Duration
	for _, l := range logs {
		longest = max(longest, l.Duration)
	}
	stats, _ := s.client.Info(ctx, "commandstats").Result()
	b.Logf("longest command over 1 ms: %s (%d logged); %s", longest, len(logs), grepStat(stats, "cmdstat_evalsha"))
	b.ReportMetric(float64(longest.Microseconds())/1000, "ms/longest-call")
}

// grepStat is the line of an INFO reply that starts with name.
func grepStat(info, name string) string {
	for l := range strings.Lines(info) {
		if strings.HasPrefix(l, name) {
			return strings.TrimSpace(l)
		}
	}
	return fmt.Sprintf("no %s", name)
}
