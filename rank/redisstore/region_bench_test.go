package redisstore

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// BenchmarkRegion: the score path of a 100k-member board from 32 callers
// (pipelined), on a plain board and on a region board whose members live
// in 50 regions, in one run so the two alternate (docs/performance.md,
// "Region boards"). "placed" events go to members already in their region
// (the steady state), "moved" ones each move a member to another region,
// "new" ones each place a member not seen before. Besides Redis's whole CPU
// per event it reports Redis's own time in EVALSHA per event (INFO
// commandstats), which the lanes' reading and writing does not blur.
func BenchmarkRegion(b *testing.B) {
	srv := testenv.StartRedis(b)
	s := newStore(b, srv, Config{})
	const n, regions = 100_000, 50
	var ids atomic.Int64
	ctx := context.Background()
	countries := strings.Fields("DE FR GB US BR JP KR CN IN ES IT NL BE SE NO DK FI PL CZ AT CH PT IE GR TR " +
		"RU UA RO HU BG RS HR SI SK LT LV EE CA MX AR CL CO PE AU NZ ZA EG NG KE MA")[:regions]
	regionOf := func(i int) string { return countries[i%regions] }
	for _, tc := range []struct {
		name    string
		regions bool
	}{{"plain", false}, {"regions", true}} {
		cfg := rank.DefaultBoard("rg-" + tc.name)
		cfg.Regions = tc.regions
		if _, err := s.PutBoard(ctx, cfg); err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := range 32 {
			wg.Go(func() {
				for i := w; i < n; i += 32 {
					e := rank.Event{Board: cfg.ID, ID: "p", Member: "m" + strconv.Itoa(i), Op: rank.OpDelta,
						Amount: int64(rand.IntN(1000)), Submitter: uint64(w + 1), Region: regionOf(i)}
					if _, err := rank.ApplyWait(ctx, s, e); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		var fresh, moves atomic.Int64
		for _, kind := range []string{"placed", "moved", "new"} {
			if kind == "moved" && !tc.regions {
				continue
			}
			b.Run(tc.name+"/"+kind, func(b *testing.B) {
				b.SetParallelism(32)
				cpu := redisCPU(b, s)
				script, calls := evalshaUsec(b, s)
				defer func() {
					b.ReportMetric((redisCPU(b, s)-cpu)*1e6/float64(b.N), "redis-cpu-µs/op")
					u, c := evalshaUsec(b, s)
					b.ReportMetric((u-script)/float64(b.N), "evalsha-µs/op")
					b.ReportMetric(float64(b.N)/(c-calls), "events/call")
				}()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						i := rand.IntN(n)
						m, region := "m"+strconv.Itoa(i), regionOf(i)
						switch kind {
						case "new":
							m = "n" + strconv.FormatInt(fresh.Add(1), 36)
						case "moved":
							// Each event names the region after the one its
							// member was last placed in (a member's events
							// racing each other may move it less).
							region = regionOf(i + int(moves.Add(1)%(regions-1)) + 1)
						}
						e := rank.Event{Board: cfg.ID, ID: "b" + strconv.FormatInt(ids.Add(1), 36), Member: m,
							Op: rank.OpDelta, Amount: int64(rand.IntN(100)), Region: region}
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

// evalshaUsec is Redis's total time in EVALSHA so far, in µs, and the
// calls made.
func evalshaUsec(b *testing.B, s *Store) (usec, calls float64) {
	info, err := s.client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				usec, _ = strconv.ParseFloat(v, 64)
			}
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				calls, _ = strconv.ParseFloat(v, 64)
			}
		}
	}
	return usec, calls
}

// BenchmarkRegionIR counts what Redis runs per event, which the shared
// machine's load cannot move: redis-server under valgrind's callgrind
// (callgrindRedis), instrumented only while 10,000 events go to a
// 20k-member board, plain and with regions (50 of them), alternately, the
// first pair discarded. Reports Ir/event for each (and the ratio). Run it
// with -benchtime 1x; needs valgrind (apt-get install -y valgrind).
// LB_CALLGRIND_KEEP=DIR keeps the dumps (cg.out.<n>: plain phases odd,
// region phases even) there.
func BenchmarkRegionIR(b *testing.B) {
	cg := callgrindRedis(b)
	s := cg.store
	ctx := context.Background()
	const n, regions, events = 20_000, 50, 10_000
	countries := strings.Fields("DE FR GB US BR JP KR CN IN ES IT NL BE SE NO DK FI PL CZ AT CH PT IE GR TR " +
		"RU UA RO HU BG RS HR SI SK LT LV EE CA MX AR CL CO PE AU NZ ZA EG NG KE MA")[:regions]
	regionOf := func(i int) string { return countries[i%regions] }
	var ids atomic.Int64
	run := func(board string, count int, members func(i int) int) {
		var wg sync.WaitGroup
		for w := range 32 {
			wg.Go(func() {
				for i := w; i < count; i += 32 {
					m := members(i)
					e := rank.Event{Board: board, ID: "i" + strconv.FormatInt(ids.Add(1), 36), Member: "m" + strconv.Itoa(m),
						Op: rank.OpDelta, Amount: int64(rand.IntN(100)), Submitter: uint64(w + 1), Region: regionOf(m)}
					if _, err := rank.ApplyWait(ctx, s, e); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	for _, r := range []bool{false, true} {
		cfg := rank.DefaultBoard("ir-" + strconv.FormatBool(r))
		cfg.Regions = r
		if _, err := s.PutBoard(ctx, cfg); err != nil {
			b.Fatal(err)
		}
		run(cfg.ID, n, func(i int) int { return i })
	}
	measure := func(board string) float64 {
		ir, _ := cg.measure(func() { run(board, events, func(int) int { return rand.IntN(n) }) })
		return ir / events
	}
	var plain, reg []float64
	for round := range 3 {
		p, r := measure("ir-false"), measure("ir-true")
		if round == 0 {
			continue // warming up: the first phases grow the sets' allocations
		}
		plain, reg = append(plain, p), append(reg, r)
		b.Logf("round %d: plain %.0f, regions %.0f Ir/event (%.2f×)", round, p, r, r/p)
	}
	avg := func(xs []float64) float64 { return (xs[0] + xs[1]) / 2 }
	b.ReportMetric(avg(plain), "plain-Ir/event")
	b.ReportMetric(avg(reg), "regions-Ir/event")
	b.ReportMetric(avg(reg)/avg(plain), "ratio")
}
