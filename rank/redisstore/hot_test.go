package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// hotStart is a store time ten minutes into an hour, far from the real one.
func hotStart() time.Time {
	return time.Date(2026, 3, 14, 9, 10, 0, 0, time.UTC)
}

func hotTestBoard(id string) rank.Board {
	b := rank.DefaultBoard(id)
	b.Tiebreak = rank.Shared
	b.Decay = rank.Decay{Bucket: rank.Duration(time.Hour), Buckets: 4, Factor: 0.7}
	return b
}

// hotPair is a hot board on Redis and the same board on the memory engine,
// which recomputes every member from its sums at each boundary: the
// recomputation the Redis engine's incremental build must equal.
type hotPair struct {
	t   *testing.T
	id  string
	rs  *Store
	mem *memstore.Store
	n   int
}

func newHotPair(t *testing.T, rs *Store, clk *ranktest.Clock, id string) *hotPair {
	mem, err := memstore.New(rank.Hooks{}, memstore.Config{Now: clk.Now, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	p := &hotPair{t: t, id: id, rs: rs, mem: mem}
	for _, s := range []rank.Store{rs, mem} {
		if _, err := s.PutBoard(t.Context(), hotTestBoard(id)); err != nil {
			t.Fatalf("PutBoard: %v", err)
		}
	}
	return p
}

// apply applies one event to both and checks the acks agree.
func (p *hotPair) apply(member string, delta int64, at time.Time) {
	p.t.Helper()
	p.n++
	e := incr(p.id, "e"+strconv.Itoa(p.n), member, delta)
	e.At = at
	want, err := rank.ApplyWait(p.t.Context(), p.mem, e)
	if err != nil {
		p.t.Fatalf("memory Apply(%+v): %v", e, err)
	}
	got, err := rank.ApplyWait(p.t.Context(), p.rs, e)
	if err != nil {
		p.t.Fatalf("redis Apply(%+v): %v", e, err)
	}
	if got.Score != want.Score || got.Rank != want.Rank || got.PrevRank != want.PrevRank || got.PrevScore != want.PrevScore || got.Decimals != 3 {
		p.t.Fatalf("ack of %+v: redis %+v, memory %+v", e, got, want)
	}
}

// random applies k random events: existing and new members, some `at` one
// or two buckets back.
func (p *hotPair) random(rng *rand.Rand, k, members int, now time.Time) {
	p.t.Helper()
	for range k {
		var at time.Time
		if rng.IntN(6) == 0 {
			at = now.Add(-time.Duration(1+rng.IntN(2)) * time.Hour)
		}
		p.apply(fmt.Sprintf("m%d", rng.IntN(members)), int64(rng.IntN(2001)-1000), at)
	}
}

// board reads every entry of the board from s.
func readAll(ctx context.Context, s rank.Store, id string) (rank.Page, error) {
	first, err := s.Top(ctx, id, "", 0, 1000)
	if err != nil {
		return first, err
	}
	for off := 1000; int64(off) < first.Total; off += 1000 {
		pg, err := s.Top(ctx, id, "", off, 1000)
		if err != nil {
			return first, err
		}
		first.Entries = append(first.Entries, pg.Entries...)
	}
	return first, nil
}

// same reports how the two boards differ ("" = equal: the same entries,
// ranks and scores in the same order, the same total).
func (p *hotPair) same(ctx context.Context) string {
	got, err := readAll(ctx, p.rs, p.id)
	if err != nil {
		return "redis read: " + err.Error()
	}
	want, err := readAll(ctx, p.mem, p.id)
	if err != nil {
		return "memory read: " + err.Error()
	}
	if got.Total != want.Total || len(got.Entries) != len(want.Entries) {
		return fmt.Sprintf("total %d (%d entries), want %d (%d)", got.Total, len(got.Entries), want.Total, len(want.Entries))
	}
	for i := range got.Entries {
		if got.Entries[i] != want.Entries[i] {
			return fmt.Sprintf("entry %d: %+v, want %+v", i, got.Entries[i], want.Entries[i])
		}
	}
	return ""
}

func (p *hotPair) check(what string) {
	p.t.Helper()
	if d := p.same(p.t.Context()); d != "" {
		p.t.Fatalf("%s: redis differs from the recomputation: %s", what, d)
	}
}

// steps runs the board's build steps (as the keeper does) until idle and
// returns how many it took; between steps, k random events.
func (p *hotPair) steps(rng *rand.Rand, k, members int, now time.Time) int {
	p.t.Helper()
	for n := 1; ; n++ {
		c, err := p.rs.board(p.t.Context(), p.id)
		if err != nil {
			p.t.Fatal(err)
		}
		_, _, status, err := p.rs.hotStep(p.t.Context(), c, "test")
		if err != nil {
			p.t.Fatalf("step %d: %v", n, err)
		}
		if status == "idle" {
			return n
		}
		p.random(rng, k, members, now)
	}
}

// The next view is built in many steps while events keep coming (new
// members, members already built, members not yet reached, `at` into older
// buckets); after the boundary, and after the clock skips buckets, the
// board equals the memory engine's recomputation, entry for entry.
func TestHotBuildInterleaved(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	clk := ranktest.NewClock(hotStart())
	rs := newStore(t, srv, Config{Now: clk.Now, HotInterval: -1})
	p := newHotPair(t, rs, clk, "hot-build")
	rng := rand.New(rand.NewPCG(1, 2))
	const members = 3000
	for i := range members {
		p.apply(fmt.Sprintf("m%d", i), int64(rng.IntN(1000)), time.Time{})
	}
	p.check("before any step")
	clk.Advance(30 * time.Minute)
	if n := p.steps(rng, 40, members+500, clk.Now()); n < 4 {
		t.Fatalf("the build of %d members took %d steps: not in parts", members, n)
	}
	p.check("the next view built, the current one still read")
	p.random(rng, 200, members+500, clk.Now())
	clk.Advance(time.Hour) // the boundary: the read swaps
	p.check("after the boundary")
	p.random(rng, 200, members+500, clk.Now())
	p.check("events after the boundary")
	p.steps(rng, 30, members+500, clk.Now())
	clk.Advance(3 * time.Hour) // buckets skipped: built from scratch by the reader
	p.check("three buckets later")
	clk.Advance(time.Hour) // the window is past every event: the board empties
	p.check("past the window")
	if n, err := rs.Count(t.Context(), p.id); err != nil || n != 0 {
		t.Fatalf("Count past the window = %d, %v; want 0", n, err)
	}
}

// Redis killed (SIGKILL) in the middle of a boundary's build: after the
// restart the board equals the recomputation, before and after the
// boundary, with the build carried on from where it stopped.
func TestHotKilledMidBuild(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	srv := testenv.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	clk := ranktest.NewClock(hotStart())
	rs := newStore(t, srv, Config{Now: clk.Now, HotInterval: -1, Timeout: 5 * time.Second})
	p := newHotPair(t, rs, clk, "hot-kill")
	rng := rand.New(rand.NewPCG(3, 4))
	const members = 3000
	for i := range members {
		p.apply(fmt.Sprintf("m%d", i), int64(rng.IntN(1000)), time.Time{})
	}
	c, err := rs.board(t.Context(), p.id)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, _, st, err := rs.hotStep(t.Context(), c, "test"); err != nil || st != "step" {
			t.Fatalf("step: %s, %v", st, err)
		}
		p.random(rng, 20, members, clk.Now())
	}
	cursor, err := testenv.RedisCommand(srv.Addr(), "HGET", rs.idKey(p.id, "h:st"), "cursor")
	if err != nil || cursor == "0" || cursor == "" {
		t.Fatalf("build cursor %q, %v: want a build under way", cursor, err)
	}
	srv.Kill()
	srv.Start()
	testenv.Eventually(t, 10*time.Second, "the board readable after the restart", func() error {
		_, err := rs.Top(t.Context(), p.id, "", 0, 1)
		return err
	})
	p.check("after the restart")
	clk.Advance(time.Hour)
	p.check("after the boundary, the build finished by the reader")
	p.random(rng, 100, members, clk.Now())
	p.check("events after the boundary")
}

// BenchmarkHotBoundary1M measures a boundary on a 1M-member hot board
// (24 buckets): the worst command or script in SLOWLOG while the keeper's
// steps build the next view (with events arriving meanwhile) and while a
// read makes it current, and the build's length. One run whatever b.N (it
// loads a million members, ~1 GB of Redis memory at the peak):
//
//	go test -run '^$' -bench HotBoundary1M -benchtime 1x ./rank/redisstore/
//
// It checks a sample against the formula; the numbers are reported, never
// asserted (docs/performance.md).
func BenchmarkHotBoundary1M(bm *testing.B) {
	t := bm
	srv := testenv.StartRedis(t)
	clk := ranktest.NewClock(hotStart())
	rs := newStore(t, srv, Config{Now: clk.Now, HotInterval: -1, Timeout: 10 * time.Second})
	ctx := t.Context()
	b := hotTestBoard("hot-1m")
	b.Decay = rank.Decay{Bucket: rank.Duration(time.Hour), Buckets: 24, Factor: 0.9}
	if _, err := rs.PutBoard(ctx, b); err != nil {
		t.Fatal(err)
	}
	d := b.Decay
	cb := d.BucketAt(clk.Now())
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("LB_HOT_MEMBERS")); err == nil && v > 0 {
		n = v // a quicker look at the same thing
	}
	rng := rand.New(rand.NewPCG(5, 6))
	// Load as if each member had events in three of the last buckets.
	sums := make([]map[int64]int64, n)
	load := time.Now()
	pipe := rs.client.Pipeline()
	for i := range n {
		m := "m" + strconv.Itoa(i)
		s := map[int64]int64{cb: int64(rng.IntN(1000)), cb - 1 - int64(rng.IntN(5)): int64(rng.IntN(1000)), cb - 6 - int64(rng.IntN(15)): int64(rng.IntN(1000))}
		sums[i] = s
		var parts []string
		for bk, v := range s {
			parts = append(parts, fmt.Sprintf("%d:%d", bk, v))
		}
		ks, _ := d.HotSums(s, cb)
		pipe.HSet(ctx, rs.idKey(b.ID, "h:s"), m, strings.Join(parts, ","))
		pipe.ZAdd(ctx, rs.zkey(rs.ref(b.ID), 0), redis.Z{Score: float64(d.DecayedScore(ks)), Member: m})
		if i%5000 == 4999 {
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	pipe.HSet(ctx, rs.idKey(b.ID, "h:st"), "cur", cb)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %d members in %s", n, time.Since(load).Round(time.Millisecond))

	slowlog := func() (worst time.Duration, cmd string) {
		entries, err := rs.client.SlowLogGet(ctx, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Duration > worst {
				worst, cmd = e.Duration, fmt.Sprint(e.Args[:min(2, len(e.Args))])
			}
		}
		return worst, cmd
	}
	rs.client.ConfigSet(ctx, "slowlog-log-slower-than", "1000") // µs: everything over 1 ms
	rs.client.ConfigSet(ctx, "slowlog-max-len", "100000")
	rs.client.SlowLogReset(ctx)

	c, err := rs.board(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Redis's own CPU time: on a shared machine the wall time of a script
	// (SLOWLOG's measure) includes the time the server was not scheduled.
	cpu := func() time.Duration {
		info, err := rs.client.Info(ctx, "cpu").Result()
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
	cpu0 := cpu()
	build := time.Now()
	steps := 0
	var stepMax time.Duration
	for {
		st := time.Now()
		_, _, status, err := rs.hotStep(ctx, c, "bench")
		stepMax = max(stepMax, time.Since(st))
		if err != nil {
			t.Fatal(err)
		}
		steps++
		if status == "idle" {
			break
		}
		if steps%200 == 0 {
			// Events keep coming during the build.
			for k := range 50 {
				if _, err := rank.ApplyWait(ctx, rs, incr(b.ID, fmt.Sprintf("b%d-%d", steps, k), "m"+strconv.Itoa(rng.IntN(n)), 1)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	took := time.Since(build)
	cpuStep := (cpu() - cpu0) / time.Duration(steps)
	worst, what := slowlog()
	bm.ReportMetric(float64(cpuStep.Microseconds())/1000, "cpu-ms/step")
	t.Logf("Redis CPU time per step: %s (the build's events included)", cpuStep)
	bm.ReportMetric(float64(worst.Microseconds())/1000, "build-slowlog-worst-ms")
	bm.ReportMetric(float64(steps), "steps")
	bm.ReportMetric(took.Seconds(), "build-s")
	t.Logf("build: %d steps in %s (%.2f ms a step on average, %s the slowest round trip); SLOWLOG worst %s (%s)",
		steps, took.Round(time.Millisecond), float64(took.Microseconds())/float64(steps)/1000, stepMax.Round(time.Microsecond), worst, what)

	rs.client.SlowLogReset(ctx)
	clk.Advance(time.Hour)
	swap := time.Now()
	if _, err := rs.Top(ctx, b.ID, "", 0, 10); err != nil {
		t.Fatal(err)
	}
	worst, what = slowlog()
	bm.ReportMetric(float64(worst.Microseconds())/1000, "swap-slowlog-worst-ms")
	t.Logf("boundary read (swap + top 10): %s; SLOWLOG worst %s (%s)", time.Since(swap).Round(time.Microsecond), worst, what)

	// A sample checked against the formula (members without the events of
	// the build, which moved only a few).
	for _, i := range []int{0, 1, 777 % n, 123456 % n, n - 1} {
		ks, _ := d.HotSums(sums[i], d.BucketAt(clk.Now()))
		r, err := rs.Ranks(ctx, b.ID, "", []string{"m" + strconv.Itoa(i)}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := r.Members[0].Score, d.DecayedScore(ks); got != want {
			// An event of the build may have hit this member: +1 in the old bucket.
			ks[1]++
			if got != d.DecayedScore(ks) {
				t.Errorf("m%d: score %d, want %d", i, got, want)
			}
		}
	}
}

// FuzzHotDifferential is ranktest.HotDifferential on the Redis engine, one
// seed per input: the decayed scores across many boundaries (reads and
// writes doing the boundary's steps themselves) equal the formula.
func FuzzHotDifferential(f *testing.F) {
	srv := testenv.StartRedis(f)
	for _, seed := range []uint64{0, 1, 7, 42, 1 << 40} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		clk := ranktest.NewClock(hotStart())
		s := newStore(t, srv, Config{Now: clk.Now, HotInterval: -1})
		ranktest.HotDifferential(t, s, clk, "fuzz-hot", seed, 300)
	})
}
