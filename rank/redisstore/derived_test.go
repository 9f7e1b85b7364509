package redisstore

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

var derived1M = flag.Bool("derived.1m", false, "run TestDerivedSlowlog on 1M-member sources (minutes)")

// fill writes n members into period idx of a tiebreak-first board directly
// (apply.lua's key layout), scores random in [0, 1000), members m0..m<n-1>.
func fillPeriod(t testing.TB, s *Store, id string, idx int64, n int) {
	t.Helper()
	ctx := context.Background()
	g, err := s.groupOfBoard(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	i := strconv.FormatInt(idx, 10)
	zk, mk := s.keyIn(g, id, "z:"+i), s.keyIn(g, id, "m:"+i)
	const chunk = 1000 // small pipelines: a loaded machine stalls big ones past the read timeout
	for start := 0; start < n; start += chunk {
		pipe := s.client.Pipeline()
		for i := start; i < min(start+chunk, n); i++ {
			seq := int64(i + 1)
			m := "m" + strconv.Itoa(i)
			z := fmt.Sprintf("%016d|%s", int64(9999999999999999)-seq, m)
			pipe.ZAdd(ctx, zk, redis.Z{Score: float64(rand.IntN(1000)), Member: z})
			pipe.HSet(ctx, mk, m, z)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if idx != 0 {
		// As apply.lua would: the period's keys expire after its retention.
		pipe := s.client.Pipeline()
		pipe.Expire(ctx, zk, 10*24*time.Hour)
		pipe.Expire(ctx, mk, 10*24*time.Hour)
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.client.Set(ctx, s.keyIn(g, id, "seq"), n, 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// sums reads every entry of period sel of each board as member -> Σ w × score.
func sums(t testing.TB, s *Store, sel rank.PeriodSel, boards []string, weights []int64) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for i, id := range boards {
		for m, v := range scores(t, s, id, sel) {
			out[m] += weights[i] * v
		}
	}
	return out
}

// scores reads every entry of a period as member -> score, a page at a time.
func scores(t testing.TB, s *Store, id string, sel rank.PeriodSel) map[string]int64 {
	t.Helper()
	const page = 1000
	out := map[string]int64{}
	for off := 0; ; off += page {
		pg, err := s.Top(context.Background(), id, sel, off, page)
		if err != nil {
			t.Fatalf("Top(%s, %d): %v", id, off, err)
		}
		for _, e := range pg.Entries {
			out[e.Member] = e.Score
		}
		if len(pg.Entries) < page {
			return out
		}
	}
}

func sameSums(t testing.TB, what string, got, want map[string]int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d members, want %d", what, len(got), len(want))
	}
	for m, v := range want {
		if got[m] != v {
			t.Fatalf("%s: %s = %d, want %d", what, m, got[m], v)
		}
	}
}

// Redis killed in the middle of building a union over data: the PUT
// fails; after the restart a PUT of the same config builds it again, with
// events arriving meanwhile, and the union equals its recomputation.
func TestDerivedBuildKilled(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	srv := testenv.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	s := newStore(t, srv, Config{Timeout: time.Second, Logger: tlog(t)})
	grp := func(id string) rank.Board {
		b := rank.DefaultBoard(id)
		b.Group = "kill"
		return b
	}
	mustPut(t, s, grp("ka"))
	mustPut(t, s, grp("kb"))
	fillPeriod(t, s, "ka", 0, 60_000)
	fillPeriod(t, s, "kb", 0, 30_000)
	u := grp("ku")
	u.Source = rank.UnionOf([]string{"ka", "kb"}, []int64{2, 3})

	put := make(chan error, 1)
	go func() { _, err := s.PutBoard(context.Background(), u); put <- err }()
	testenv.Eventually(t, 20*time.Second, "the build to start", func() error {
		v, err := s.client.HGet(context.Background(), s.keyIn("kill", "ku", "cfg"), "b").Result()
		if err != nil || v != "1" {
			return fmt.Errorf("building mark %q, %v", v, err)
		}
		return nil
	})
	srv.Kill()
	if err := <-put; err == nil {
		t.Fatal("the PUT whose build Redis died in answered success")
	}
	srv.Start()
	testenv.Eventually(t, 10*time.Second, "Redis back", func() error { return s.Ping(context.Background()) })

	// Events on both sources while the second PUT builds.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 300 {
			src := []string{"ka", "kb"}[i%2]
			e := incr(src, "k"+strconv.Itoa(i), "m"+strconv.Itoa(rand.IntN(90_000)), int64(rand.IntN(50)-10))
			testenv.Eventually(t, 10*time.Second, "an event", func() error {
				_, err := rank.ApplyWait(context.Background(), s, e)
				return err
			})
		}
	}()
	testenv.Eventually(t, 60*time.Second, "the PUT after the restart", func() error {
		_, err := s.PutBoard(context.Background(), u)
		return err
	})
	wg.Wait()
	if v, _ := s.client.HExists(context.Background(), s.keyIn("kill", "ku", "cfg"), "b").Result(); v {
		t.Fatal("the building mark is still set after a successful PUT")
	}
	sameSums(t, "union after the kill", scores(t, s, "ku", ""), sums(t, s, "", []string{"ka", "kb"}, []int64{2, 3}))
}

// TestDerivedSlowlog measures the slowest Redis command or script while
// derived boards (a 3-source weighted union, a 7-day window) are built
// over and maintained on 1M-member sources, a day boundary of the window
// included (go test -run TestDerivedSlowlog
// -derived.1m ./rank/redisstore/; numbers in docs/performance.md). Without
// the flag it runs on 20k members, asserting exactness only.
func TestDerivedSlowlog(t *testing.T) {
	testenv.Long(t)
	n := 20_000
	if *derived1M {
		n = 1_000_000
	}
	srv := testenv.StartRedis(t)
	day := rank.Board{Reset: rank.Daily}
	clk := time.Now().UTC()
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clk }
	s := newStore(t, srv, Config{Now: now, Timeout: 10 * time.Second, Logger: tlog(t)})
	ctx := context.Background()
	if err := s.client.ConfigSet(ctx, "slowlog-log-slower-than", "1000").Err(); err != nil {
		t.Fatal(err)
	}
	// Long enough to hold every entry of the run: a full log drops the
	// oldest, and the counts below would be short.
	if err := s.client.ConfigSet(ctx, "slowlog-max-len", "1000000").Err(); err != nil {
		t.Fatal(err)
	}
	grp := func(id string, mut func(b *rank.Board)) rank.Board {
		b := rank.DefaultBoard(id)
		b.Group = "big"
		if mut != nil {
			mut(&b)
		}
		return b
	}
	mustPut(t, s, grp("sa", nil))
	mustPut(t, s, grp("sb", nil))
	mustPut(t, s, grp("sc", nil))
	mustPut(t, s, grp("sd", func(b *rank.Board) { b.Reset = rank.Daily; b.Retain = 6 }))
	cur := rank.PeriodAt(day, clk)
	fillPeriod(t, s, "sa", 0, n)
	fillPeriod(t, s, "sb", 0, n/2)
	fillPeriod(t, s, "sc", 0, n/4)
	fillPeriod(t, s, "sd", cur.Index, n)
	if err := s.client.SlowLogReset(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	timed := func(what string, f func()) {
		start := time.Now()
		f()
		t.Logf("%s: %s", what, time.Since(start).Round(time.Millisecond))
	}
	// Each build's build.lua calls and their mean Redis time (INFO
	// commandstats: EVALSHA here is build.lua alone).
	builds := func(what string, b rank.Board) {
		if err := s.client.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		cpu0 := serverCPU(t, s)
		timed(what, func() { mustPut(t, s, b) })
		cpu := serverCPU(t, s) - cpu0
		calls, us := evalshaCalls(t, s)
		t.Logf("%s: %d build.lua calls, %.0f µs each on average (wall, in Redis); Redis CPU %s, %s per call (scans included)",
			what, calls, us, cpu.Round(time.Millisecond), (cpu / time.Duration(max(calls, 1))).Round(time.Microsecond))
	}
	builds("build of the union over 3 sources", grp("su", func(b *rank.Board) {
		b.Source = rank.UnionOf([]string{"sa", "sb", "sc"}, []int64{1, 2, 3})
	}))
	builds("build of the 7-day window", grp("sw", func(b *rank.Board) { b.Source = rank.WindowOf("sd", 7) }))
	events := func(tag string, k int) {
		for i := range k {
			m := "m" + strconv.Itoa(rand.IntN(n))
			mustApply(t, s, incr([]string{"sa", "sb", "sd"}[i%3], tag+strconv.Itoa(i), m, int64(rand.IntN(100))))
		}
	}
	timed("2000 events", func() { events("e", 2000) })
	// The boundary: nothing to do but write the next views.
	mu.Lock()
	clk = cur.End.Add(time.Second)
	mu.Unlock()
	timed("2000 events after the boundary", func() { events("f", 2000) })

	// A long log is a big reply: read it with a patient client.
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.ReadTimeout = 5 * time.Minute
	slow := redis.NewClient(opt)
	defer slow.Close()
	entries, err := slow.SlowLogGet(ctx, 1000000).Result()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, sc := range []*script{s.apply, s.top, s.ranks, s.ban, s.derive, s.deps} {
		names[sc.sha] = sc.name
	}
	worst := map[string]time.Duration{}
	count := map[string][3]int{} // over 1, 10 and 20 ms
	for _, e := range entries {
		what := fmt.Sprint(e.Args[0])
		if len(e.Args) > 1 {
			if nm, ok := names[fmt.Sprint(e.Args[1])]; ok {
				what = nm
			}
		}
		c := count[what]
		for i, lim := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond} {
			if e.Duration > lim {
				c[i]++
			}
		}
		count[what] = c
		worst[what] = max(worst[what], e.Duration)
	}
	t.Logf("SLOWLOG: %d entries (commands inside scripts are logged too)", len(entries))
	for what, d := range worst {
		c := count[what]
		t.Logf("members %d: %s: %d calls over 1 ms, %d over 10 ms, %d over 20 ms, the slowest %s", n, what, c[0], c[1], c[2], d)
	}

	sameSums(t, "union", scores(t, s, "su", ""), sums(t, s, "", []string{"sa", "sb", "sc"}, []int64{1, 2, 3}))
	var sels []string
	p := rank.PeriodAt(day, now())
	for range 7 {
		sels = append(sels, strconv.FormatInt(p.Index, 10))
		p = p.Previous(day)
	}
	want := map[string]int64{}
	for _, sel := range sels {
		for m, v := range scores(t, s, "sd", rank.PeriodSel(sel)) {
			want[m] += v
		}
	}
	sameSums(t, "window after the boundary", scores(t, s, "sw", ""), want)
}

// BenchmarkDerivedIngest is the cost of one source event (one caller, one
// round trip each) with 0, 1 and 3 union dependants and with one 7-day
// window, on a 20k-member source.
func BenchmarkDerivedIngest(b *testing.B) {
	srv := testenv.StartRedis(b)
	clk := time.Now().UTC()
	s := newStore(b, srv, Config{Now: func() time.Time { return clk }})
	const n = 20_000
	var ids int64
	for _, tc := range []struct {
		name   string
		unions int
		window bool
	}{{"deps=0", 0, false}, {"deps=1", 1, false}, {"deps=3", 3, false}, {"window7", 0, true}} {
		g := "ing-" + strings.ReplaceAll(tc.name, "=", "")
		src := rank.DefaultBoard(g + "-src")
		src.Group, src.Reset, src.Retain = g, rank.Daily, 6
		if _, err := s.PutBoard(context.Background(), src); err != nil {
			b.Fatal(err)
		}
		fillPeriod(b, s, src.ID, rank.PeriodAt(src, clk).Index, n)
		for i := range tc.unions {
			d := rank.DefaultBoard(fmt.Sprintf("%s-u%d", g, i))
			d.Group, d.Source = g, rank.UnionOf([]string{src.ID}, []int64{int64(i + 1)})
			if _, err := s.PutBoard(context.Background(), d); err != nil {
				b.Fatal(err)
			}
		}
		if tc.window {
			d := rank.DefaultBoard(g + "-w")
			d.Group, d.Source = g, rank.WindowOf(src.ID, 7)
			if _, err := s.PutBoard(context.Background(), d); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(tc.name, func(b *testing.B) {
			if err := s.client.ConfigResetStat(context.Background()).Err(); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				ids++
				e := incr(src.ID, "i"+strconv.FormatInt(ids, 36), "m"+strconv.Itoa(rand.IntN(n)), int64(rand.IntN(100)))
				if _, err := rank.ApplyWait(context.Background(), s, e); err != nil {
					b.Fatal(err)
				}
			}
			// Redis's own time per apply.lua call (one event each here):
			// less sensitive to a loaded machine than the round trip.
			us, calls := evalshaStats(b, s)
			b.ReportMetric(us, "redis-µs/event")
			b.ReportMetric(calls/float64(b.N), "redis-calls/event")
		})
	}
}

// serverCPU is the Redis server's CPU time so far (user + system): unlike
// a command's wall time, the box's other load does not stretch it.
func serverCPU(t testing.TB, s *Store) time.Duration {
	info, err := s.client.Info(context.Background(), "cpu").Result()
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for line := range strings.Lines(info) {
		for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), k); ok {
				f, _ := strconv.ParseFloat(v, 64)
				total += f
			}
		}
	}
	return time.Duration(total * float64(time.Second))
}

// evalshaCalls reads INFO commandstats: EVALSHA's calls and usec_per_call.
func evalshaCalls(t testing.TB, s *Store) (calls int64, usPerCall float64) {
	info, err := s.client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec_per_call":
				usPerCall, _ = strconv.ParseFloat(v, 64)
			}
		}
	}
	return calls, usPerCall
}

// evalshaStats reads INFO commandstats: EVALSHA's usec_per_call, and the
// calls of every other command (the scripts' own, one event per script
// call here): a count a loaded machine does not skew.
func evalshaStats(b *testing.B, s *Store) (usPerCall, calls float64) {
	info, err := s.client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			x, _ := strconv.ParseFloat(v, 64)
			switch {
			case name == "evalsha" && k == "usec_per_call":
				usPerCall = x
			case name != "evalsha" && name != "info" && name != "config|resetstat" && k == "calls":
				calls += x
			}
		}
	}
	return usPerCall, calls
}
