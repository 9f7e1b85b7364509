package redisstore

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// irRedis is a redis-server under valgrind's callgrind, counting only
// while a measured phase runs, and a Store on it: what Redis runs per
// event, which a loaded machine cannot move (the IR benchmarks).
type irRedis struct {
	b     *testing.B
	pid   int
	dir   string
	dumps int
	store *Store
}

// callgrindRedis starts one for b (skipped, or failed under
// LB_REQUIRE_ALL, without valgrind). LB_CALLGRIND_KEEP=DIR keeps the
// dumps (cg.out.<n>, one per measured phase) there, for callgrind_annotate.
func callgrindRedis(b *testing.B) *irRedis {
	for _, bin := range []string{"valgrind", "callgrind_control", "redis-server"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Missing(b, bin, "apt-get install -y valgrind redis-server")
		}
	}
	dir := os.Getenv("LB_CALLGRIND_KEEP")
	if dir == "" {
		dir = b.TempDir()
	}
	port := testenv.FreePort(b)
	cmd := exec.Command("valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file="+filepath.Join(dir, "cg.out"),
		"redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--protected-mode", "no")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	client, err := NewClient("redis://127.0.0.1:" + strconv.Itoa(port) + "/0")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	testenv.Until(b, 60*time.Second, "redis under valgrind", func() bool { return client.Ping(ctx).Err() == nil })
	// Redis under valgrind runs some fifty times slower: the default
	// timeout would fail events queued behind a pipeline.
	s, err := New(ctx, client, rank.Hooks{}, Config{Prefix: "ir", Timeout: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return &irRedis{b: b, pid: cmd.Process.Pid, dir: dir, store: s}
}

func (r *irRedis) control(args ...string) {
	if out, err := exec.Command("callgrind_control", append(args, strconv.Itoa(r.pid))...).CombinedOutput(); err != nil {
		r.b.Fatalf("callgrind_control %v: %v %s", args, err, out)
	}
}

// measure runs phase with the counters on and returns the instructions
// redis-server ran meanwhile and the EVALSHA calls it answered (the
// counters are zeroed by a dump before and dumped after).
func (r *irRedis) measure(phase func()) (ir, calls float64) {
	b := r.b
	_, calls0 := evalshaUsec(b, r.store)
	r.control("-z")
	r.control("-i", "on")
	phase()
	r.control("-i", "off")
	r.control("-d")
	r.dumps++
	_, calls1 := evalshaUsec(b, r.store)
	files, _ := filepath.Glob(filepath.Join(r.dir, "cg.out.*"))
	for _, f := range files {
		if !strings.HasSuffix(f, "."+strconv.Itoa(r.dumps)) {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "totals: "); ok {
				ir, _ = strconv.ParseFloat(strings.Fields(v)[0], 64)
			}
		}
	}
	if ir == 0 {
		all, _ := os.ReadDir(r.dir)
		var names []string
		for _, e := range all {
			names = append(names, e.Name())
		}
		b.Fatalf("no callgrind dump %d in %s: %v", r.dumps, r.dir, names)
	}
	// The INFO calls themselves are not EVALSHA; the counts are exact.
	return ir, calls1 - calls0
}
