package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/loadgen"
)

// writeRun lays out what run.sh's fanout-plain part leaves behind: the
// measures and the two spectators' reports (nil: that run is missing).
func writeRun(t *testing.T, measures string, gateway, plain *loadgen.Report) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "measures.env"), []byte(measures), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*loadgen.Report{"fanout-plain-gateway": gateway, "fanout-plain-bare": plain} {
		if r == nil {
			continue
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func spectators(frames int64, lagP99 float64) *loadgen.Report {
	return &loadgen.Report{
		Frames:      map[string]loadgen.Rate{"top": {Count: frames}},
		FrameLag:    loadgen.Quantiles{Count: frames, P99: lagP99},
		Connections: loadgen.Connections{Receivers: 4000},
	}
}

// TestPlainRows checks the three ratios gateway/plain and the frame sizes
// from one run's figures (those of a real run at 4,000 spectators).
func TestPlainRows(t *testing.T) {
	t.Parallel()
	measures := `mem_fanout_plain_gateway_kb_per_sub=44.5
cpu_fanout_plain_gateway_s=4.210
wchar_fanout_plain_gateway=496507693
mem_fanout_plain_bare_kb_per_sub=30.9
cpu_fanout_plain_bare_s=3.910
wchar_fanout_plain_bare=342970707
`
	dir := writeRun(t, measures, spectators(340001, 274.7), spectators(247250, 440.4))
	if err := table(dir, nil); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join(dir, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| fan-out against plain, 4000 spectators: frames delivered | 340001 (1460 B each) | 247250 (1387 B each) (plain broadcast server) |",
		"| memory per subscribed spectator (RSS), 4000 spectators | 44.5 KB | 30.9 KB (plain broadcast server) | 1.44 | ≤ 0.55 |",
		"| CPU per frame delivered, 4000 spectators | 12.4 µs | 15.8 µs (plain broadcast server) | 0.78 | ≤ 0.8 |",
		"| frame lag p99 (receive − ts), 4000 spectators | 274.7 ms | 440.4 ms (plain broadcast server) | 0.62 | ≤ 1.1 |",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("table lacks\n%s\ngot:\n%s", want, out)
		}
	}
}

// TestPlainRowsNeedBothRuns: with one side missing (a part cut short) the
// table prints no ratio rather than one against nothing.
func TestPlainRowsNeedBothRuns(t *testing.T) {
	t.Parallel()
	dir := writeRun(t, "mem_fanout_plain_gateway_kb_per_sub=44.5\n", spectators(340001, 274.7), nil)
	if err := table(dir, nil); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join(dir, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "plain") {
		t.Errorf("rows without the plain run:\n%s", out)
	}
}

// TestIdleRows: the idle part's memory per connection, its slope and
// breakdown, and the CPU per idle connection.
func TestIdleRows(t *testing.T) {
	t.Parallel()
	measures := `mem_gateway_kb_per_conn=11.5
mem_gateway_kb_per_conn_slope=11.2
mem_gateway_heap_kb_per_conn=4.6
mem_gateway_stack_kb_per_conn=2.05
goroutines_per_conn=1.00
kernel_kb_per_conn=0.00
idle_cpu_us_per_conn_s=0.43
mem_bare_kb_per_conn=30.9
`
	dir := writeRun(t, measures, nil, nil)
	if err := table(dir, nil); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join(dir, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| memory per idle connection (RSS) | 11.5 KB | 30.9 KB (bare coder/websocket) | 0.37 | ≤ 12 KB |",
		"| memory per idle connection, second half only (RSS slope) | 11.2 KB |  |  | ≤ 12 KB |",
		"| of which: live heap; stacks; goroutines; kernel socket memory (not RSS) | 4.6 KB; 2.05 KB; 1.00; 0.00 KB |  |  |  |",
		"| gateway CPU per idle connection (pings, timers) | 0.43 µs/s |  |  | ≤ 2 µs/s |",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("table lacks\n%s\ngot:\n%s", want, out)
		}
	}
}
