package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestHostileSoak is the soak with attackers beside the normal load: two
// clients flooding empty pings (closed with 1008, they dial again at once)
// and a player naming a new board in every score (--dev, so each first
// write may create one). The attackers are a process of their own
// (e2e/attacker, attack_test.go), counted as a remote client address. The
// soak runs once quiet and once with the attackers (LB_SOAK_ROUNDS times,
// alternating); afterwards the gateway's goroutines, open files and heap
// are back at the baseline (settled), Redis holds at most --dev-boards
// boards more, and every phase's ledgers are exact. The ack p99 of each
// phase is logged (a ratio, not asserted: timing is measured, never
// asserted in tests). -soak 10m / LB_SOAK=10m runs each phase that long.
func TestHostileSoak(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	d := soakDuration()
	if d == 0 {
		d = 10 * time.Second
	}
	const devBoards = 50
	e := startEnv(t)
	maddr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	redisURL := e.Redis.URL() + "?pool_size=20&min_idle_conns=20"
	// The load generator dials from loopback, which --max-conns-per-ip does
	// not count; the attackers come through a trusted "proxy" and are.
	args := []string{"--metrics-addr", maddr, "--dev", "--dev-boards", strconv.Itoa(devBoards), "--trusted-proxies", attackSource}
	g := startGateway(t, gwOpts{RedisURL: redisURL, NATSURL: e.NATS.URL(), Args: args})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The metrics listener may come up after the gateway answers on its
	// own address.
	testenv.Eventually(t, 10*time.Second, "the metrics address answering", func() error {
		_, err := scrape(ctx, "http://"+maddr+"/metrics")
		return err
	})
	soakPhase(t, ctx, g, maddr, "warmup", 3*time.Second)
	base := settled(t, ctx, maddr, nil)
	heapProfile(t, maddr, "base")
	redis0 := redisUsedMemory(t, e.Redis.Addr())

	// Quiet and attacked phases alternate LB_SOAK_ROUNDS times (default
	// once): on a shared box the load of other work drifts over minutes,
	// and pairs of neighbouring phases compare better than one pair.
	attacker := buildAttacker(t, t.TempDir())
	rounds := 1
	if n, err := strconv.Atoi(os.Getenv("LB_SOAK_ROUNDS")); err == nil && n > 1 {
		rounds = n
	}
	var stats attackReport
	var ratios []float64
	for r := 1; r <= rounds; r++ {
		qname, hname := "quiet", "hostile"
		if rounds > 1 {
			qname, hname = fmt.Sprint("quiet-", r), fmt.Sprint("hostile-", r)
		}
		quiet, qcpu := measuredPhase(t, ctx, g, maddr, qname, d)
		atk := startAttackProcess(t, g, attacker)
		hostile, hcpu := measuredPhase(t, ctx, g, maddr, hname, d)
		st := atk.stop(t)
		stats.add(st)
		ratios = append(ratios, hostile/quiet)
		t.Logf("round %d/%d: ack p99 quiet %.2f ms, with attackers %.2f ms (%.2fx); CPU per second: gateway %.2f → %.2f, load generator %.2f → %.2f, attacker %.2f; box load %s → %s",
			r, rounds, quiet, hostile, hostile/quiet, qcpu.gateway, hcpu.gateway, qcpu.self, hcpu.self, st.cores(), qcpu.load, hcpu.load)
	}
	slices.Sort(ratios)

	after := settled(t, ctx, maddr, base)
	heapProfile(t, maddr, "after")
	redis1 := redisUsedMemory(t, e.Redis.Addr())
	ids, _ := boardIDs(t, g, adminToken(t), 1000)
	created := 0
	for _, id := range ids {
		if strings.HasPrefix(id, "atk-") {
			created++
		}
	}
	t.Logf("attackers: %s; %d attack boards exist", stats, created)
	t.Logf("ack p99 with attackers / quiet: median %.2fx of %d rounds %.2f; goroutines %v → %v, heap in use %.1f → %.1f MB, RSS %.1f → %.1f MB, Redis used_memory %.1f → %.1f MB",
		ratios[len(ratios)/2], rounds, ratios, base["go_goroutines"], after["go_goroutines"],
		base["go_memstats_heap_inuse_bytes"]/1e6, after["go_memstats_heap_inuse_bytes"]/1e6,
		base["process_resident_memory_bytes"]/1e6, after["process_resident_memory_bytes"]/1e6, redis0/1e6, redis1/1e6)
	which := os.Getenv("LB_SOAK_ATTACKERS") // "": both
	if (which != "create" && stats.FloodCloses == 0) || (which != "flood" && stats.Scores == 0) {
		t.Fatalf("the attackers did not run: %s", stats)
	}
	if created > devBoards || (which != "flood" && stats.Limited == 0) {
		t.Errorf("%d attack boards exist, %d limit_reached answers: want at most %d boards and the cap to refuse the rest", created, stats.Limited, devBoards)
	}
	// Redis: the soak's own boards and records (both phases) plus at most
	// devBoards small boards; 64 MB is far above that and far below what
	// unbounded creation reaches.
	if redis1 > redis0+64e6 {
		t.Errorf("Redis used_memory grew from %.1f to %.1f MB", redis0/1e6, redis1/1e6)
	}
}

func redisUsedMemory(t *testing.T, addr string) float64 {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	out, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	t.Fatalf("no used_memory in INFO memory: %q", out)
	return 0
}

// heapProfile writes the gateway's heap profile (after a GC: settled
// forced one) to LB_SOAK_PROFILE/<name>.heap, when that is set: the
// baseline's and the end's, to see what the soak left in memory
// (go tool pprof -diff_base base.heap after.heap).
func heapProfile(t *testing.T, maddr, name string) {
	t.Helper()
	dir := os.Getenv("LB_SOAK_PROFILE")
	if dir == "" {
		return
	}
	resp, err := http.Get("http://" + maddr + "/debug/pprof/heap")
	if err != nil {
		t.Errorf("heap profile: %v", err)
		return
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name+".heap"), b, 0o644)
	}
	if err != nil {
		t.Errorf("heap profile: %v", err)
	}
}

// phaseCPU is what a soak phase cost: CPU seconds per second of the
// gateway process and of this test process (load generator, attackers),
// and the box's load average at its end.
type phaseCPU struct {
	gateway, self float64
	load          string
}

// measuredPhase is soakPhase with the CPU it cost. With LB_SOAK_PROFILE
// set to a directory, a CPU profile of the gateway during the phase is
// written there (<phase>.pprof).
func measuredPhase(t *testing.T, ctx context.Context, g *gateway, maddr, phase string, d time.Duration) (float64, phaseCPU) {
	t.Helper()
	cpu := func() (gw, self float64) {
		m, err := scrape(ctx, "http://"+maddr+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return m["process_cpu_seconds_total"], time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	var prof sync.WaitGroup
	if dir := os.Getenv("LB_SOAK_PROFILE"); dir != "" && d > 4*time.Second {
		prof.Go(func() {
			u := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", maddr, int((d - 2*time.Second).Seconds()))
			resp, err := http.Get(u)
			if err != nil {
				t.Errorf("profile: %v", err)
				return
			}
			defer resp.Body.Close()
			f, err := os.Create(filepath.Join(dir, phase+".pprof"))
			if err != nil {
				t.Errorf("profile: %v", err)
				return
			}
			defer f.Close()
			io.Copy(f, resp.Body)
		})
	}
	g0, s0 := cpu()
	start := time.Now()
	p99 := soakPhase(t, ctx, g, maddr, phase, d)
	el := time.Since(start).Seconds()
	g1, s1 := cpu()
	prof.Wait()
	load, _ := os.ReadFile("/proc/loadavg")
	return p99, phaseCPU{gateway: (g1 - g0) / el, self: (s1 - s0) / el, load: strings.Join(strings.Fields(string(load))[:3], " ")}
}
