// Command table reads the files bench/run.sh leaves in its output directory
// and prints the results table (markdown), or one number of a load report.
//
//	table -dir bench/out            the table
//	table -rate bench/out/x.json    events/s of one report, as an integer
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wsgateway/wsgateway/loadgen"
)

func main() {
	dir := flag.String("dir", "", "bench output directory")
	rateOf := flag.String("rate", "", "print the events/s of this load report")
	sizes := flag.String("fanout", "10000", "spectator counts of the fan-out runs (space-separated)")
	flag.Parse()
	if *rateOf != "" {
		r, err := load(*rateOf)
		if err != nil {
			fail(err)
		}
		fmt.Printf("%.0f\n", r.Events.PerSecond)
		return
	}
	if err := table(*dir, strings.Fields(*sizes)); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "table:", err)
	os.Exit(1)
}

func load(path string) (loadgen.Report, error) {
	var r loadgen.Report
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(b, &r)
}

// measures reads run.sh's key=value file.
func measures(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			m[strings.TrimSpace(k)] = n
		}
	}
	return m, sc.Err()
}

func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func table(dir string, fanoutSizes []string) error {
	m, err := measures(filepath.Join(dir, "measures.env"))
	if err != nil {
		return err
	}
	rep := map[string]loadgen.Report{}
	names := []string{"ingest-redis", "ingest-redis-half", "ingest-memory", "ingest-memory-half", "ingest-echo"}
	for _, n := range fanoutSizes {
		names = append(names, "fanout-gateway-"+n, "fanout-bare-"+n)
	}
	names = append(names, "fanout-plain-gateway", "fanout-plain-bare")
	for _, name := range names {
		r, err := load(filepath.Join(dir, name+".json"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // that part did not run (BENCH_PARTS)
		}
		if err != nil {
			return err
		}
		rep[name] = r
	}
	has := func(names ...string) bool {
		for _, n := range names {
			if _, ok := rep[n]; !ok {
				return false
			}
		}
		return true
	}
	var b strings.Builder
	row := func(what, gw, ceil, rat, target string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", what, gw, ceil, rat, target)
	}
	b.WriteString("| measure | gateway | ceiling | ratio | target |\n|---|---|---|---|---|\n")
	ir, cref, c100, c16, c1m := rep["ingest-redis"], m["ceiling_ref_100k_rps"], m["ceiling_100k_rps"], m["ceiling_x16_100k_events"], m["ceiling_1m_rps"]
	if has("ingest-redis") {
		ev := ir.Events.PerSecond
		// The reference runs before and right after the ingest: the
		// ratio is against the faster of the two, the one that flatters
		// the gateway least.
		what := fmt.Sprintf("%.0f (reference script, -P 16, 100k)", cref)
		if after := m["ceiling_ref_after_100k_rps"]; after > 0 {
			before := cref
			cref = max(before, after)
			what = fmt.Sprintf("%.0f (reference script, -P 16, 100k; %.0f before, %.0f after)", cref, before, after)
		}
		rt := ""
		if m["redis_rt"] == 1 {
			rt = ", Redis under SCHED_FIFO"
		}
		row("ingest, Redis engine, 100k members (events/s)"+rt, fmt.Sprintf("%.0f", ev), what, ratio(ev, cref), "≥ 0.5")
		row("ingest, Redis engine, against apply.lua", fmt.Sprintf("%.0f", ev), fmt.Sprintf("%.0f (apply.lua, one event per call, -P 16, 100k)", c100), ratio(ev, c100), "")
		row("ingest, Redis engine, against apply.lua batched", fmt.Sprintf("%.0f", ev), fmt.Sprintf("%.0f events/s (apply.lua, 16 events per call)", c16), ratio(ev, c16), "")
	}
	if c1m > 0 {
		row("apply.lua ceiling at up to 1M members (req/s)", "", fmt.Sprintf("%.0f", c1m), "", "")
	}
	im := rep["ingest-memory"]
	if has("ingest-memory") {
		row("ingest, memory engine (events/s)", fmt.Sprintf("%.0f", im.Events.PerSecond), "", "", "")
	}
	if has("ingest-memory", "ingest-echo") {
		ie := rep["ingest-echo"].Events.PerSecond
		row("ingest, memory engine, against a bare echo (events/s)", fmt.Sprintf("%.0f", im.Events.PerSecond), fmt.Sprintf("%.0f (bare coder/websocket, fixed ack)", ie), ratio(im.Events.PerSecond, ie), "≥ 1.0")
	}
	for _, k := range []string{"redis", "memory"} {
		if !has("ingest-" + k + "-half") {
			continue
		}
		h := rep["ingest-"+k+"-half"]
		row(fmt.Sprintf("ack p99 at half the max rate, %s (%.0f/s)", k, h.Events.PerSecond),
			fmt.Sprintf("%.2f ms", h.AckLatency.P99), "", "", "≤ 5 ms")
		row("ack p50 / p99.9 / max at half rate, "+k,
			fmt.Sprintf("%.2f / %.2f / %.2f ms", h.AckLatency.P50, h.AckLatency.P999, h.AckLatency.Max), "", "", "")
	}
	for _, k := range []string{"redis", "memory", "echo"} {
		acked := rep["ingest-"+k].Events.Acked
		if cpu := m["cpu_ingest_"+k+"_s"]; acked > 0 {
			row("gateway CPU per acked event, "+k, fmt.Sprintf("%.1f µs", cpu/float64(acked)*1e6), "", "", "≤ 15 µs")
		}
	}
	if acked := rep["ingest-redis"].Events.Acked; acked > 0 {
		row("Redis CPU per acked event (redis-server, whole run)", fmt.Sprintf("%.1f µs", m["redis_cpu_ingest_redis_s"]/float64(acked)*1e6), "", "", "")
	}
	for _, size := range fanoutSizes {
		if !has("fanout-gateway-"+size, "fanout-bare-"+size) {
			continue
		}
		fg, fb := rep["fanout-gateway-"+size], rep["fanout-bare-"+size]
		n := fg.Connections.Receivers
		row(fmt.Sprintf("fan-out, %d spectators, 100ms interval (frames/s)", n),
			fmt.Sprintf("%.0f", fg.Frames["top"].PerSecond), fmt.Sprintf("%.0f (bare coder/websocket loop)", fb.Frames["top"].PerSecond),
			ratio(fg.Frames["top"].PerSecond, fb.Frames["top"].PerSecond), "≥ 0.8")
		row(fmt.Sprintf("frame freshness p99, %d spectators (receive − ack of its seq)", n), fmt.Sprintf("%.1f ms", fg.Freshness.P99), "", "", "≤ interval + 20 ms")
		row(fmt.Sprintf("frame lag p99, %d spectators (receive − ts)", n), fmt.Sprintf("%.1f ms", fg.FrameLag.P99), fmt.Sprintf("%.1f ms", fb.FrameLag.P99), "", "")
		gwCPU, bareCPU := m["cpu_fanout_"+size+"_s"], m["cpu_fanout_bare_"+size+"_s"]
		if fr := fg.Frames["top"].Count; fr > 0 {
			perBare := bareCPU / float64(max(fb.Frames["top"].Count, 1))
			row(fmt.Sprintf("CPU per frame written, %d spectators (connects included)", n), fmt.Sprintf("%.1f µs", gwCPU/float64(fr)*1e6), fmt.Sprintf("%.1f µs", perBare*1e6),
				ratio(gwCPU/float64(fr), perBare), "")
		}
		// Once every spectator is connected: the fan-out alone (each
		// spectator's first frame, sent while the others connect, left out).
		if steady, fr := m["cpu_fanout_"+size+"_steady_s"], fg.Frames["top"].Count-int64(n); steady > 0 && fr > 0 {
			per := steady / float64(fr)
			bare, ratioBare := "", ""
			// The bare loop's, counted the same way (it sends no first
			// frame at subscribe, so all its frames count).
			if bs, bf := m["cpu_fanout_bare_"+size+"_steady_s"], fb.Frames["top"].Count; bs > 0 && bf > 0 {
				bare, ratioBare = fmt.Sprintf("%.1f µs", bs/float64(bf)*1e6), ratio(per, bs/float64(bf))
			}
			row(fmt.Sprintf("gateway CPU per frame written, %d spectators, all connected", n), fmt.Sprintf("%.1f µs", per*1e6), bare, ratioBare, "≤ 0.7")
		}
	}
	plainRows(row, m, rep)
	idleRows(row, m)
	// REST (run.sh's rest part): wrk, 64 keep-alive clients, memory engine.
	if us := m["rest_post_cpu_us"]; us > 0 {
		row(fmt.Sprintf("REST one-event POST …/scores, gateway CPU per request (%.0f/s)", m["rest_post_rps"]), fmt.Sprintf("%.1f µs", us), "", "", "≤ 40 µs")
	}
	if us := m["rest_get_cpu_us"]; us > 0 {
		row(fmt.Sprintf("REST GET …/members/{m}?around=5, gateway CPU per request (%.0f/s)", m["rest_get_rps"]), fmt.Sprintf("%.1f µs", us), "", "", "")
	}
	for _, k := range []string{"redis", "memory"} {
		acked := rep["ingest-"+k].Events.Acked
		if cpu := m["cpu_ingest_"+k+"_s"]; acked > 0 {
			row("gateway CPU seconds per 1,000 acked events, "+k, fmt.Sprintf("%.4f s", cpu/float64(acked)*1000), "", "", "")
		}
	}
	out := b.String()
	fmt.Print(out)
	return os.WriteFile(filepath.Join(dir, "table.md"), []byte(out), 0o644)
}

// plainRows are run.sh's fanout-plain part: the gateway against the plain
// broadcast server, three ratios gateway/plain with issue 34's targets.
func plainRows(row func(what, gw, ceil, rat, target string), m map[string]float64, rep map[string]loadgen.Report) {
	g, p := rep["fanout-plain-gateway"], rep["fanout-plain-bare"]
	n := g.Connections.Receivers
	gf, pf := float64(g.Frames["top"].Count), float64(p.Frames["top"].Count)
	if gf == 0 || pf == 0 {
		return // a run is missing (BENCH_PARTS, a failure) or saw no frame
	}
	const plain = " (plain broadcast server)"
	row(fmt.Sprintf("fan-out against plain, %d spectators: frames delivered", n), fmt.Sprintf("%.0f (%.0f B each)", gf, m["wchar_fanout_plain_gateway"]/gf),
		fmt.Sprintf("%.0f (%.0f B each)%s", pf, m["wchar_fanout_plain_bare"]/pf, plain), "", "")
	gm, pm := m["mem_fanout_plain_gateway_kb_per_sub"], m["mem_fanout_plain_bare_kb_per_sub"]
	row(fmt.Sprintf("memory per subscribed spectator (RSS), %d spectators", n), fmt.Sprintf("%.1f KB", gm), fmt.Sprintf("%.1f KB%s", pm, plain), ratio(gm, pm), "≤ 0.55")
	gc, pc := m["cpu_fanout_plain_gateway_s"]/gf, m["cpu_fanout_plain_bare_s"]/pf
	row(fmt.Sprintf("CPU per frame delivered, %d spectators", n), fmt.Sprintf("%.1f µs", gc*1e6), fmt.Sprintf("%.1f µs%s", pc*1e6, plain), ratio(gc, pc), "≤ 0.8")
	row(fmt.Sprintf("frame lag p99 (receive − ts), %d spectators", n), fmt.Sprintf("%.1f ms", g.FrameLag.P99), fmt.Sprintf("%.1f ms%s", p.FrameLag.P99, plain),
		ratio(g.FrameLag.P99, p.FrameLag.P99), "≤ 1.1")
}

// idleRows are run.sh's idle part: memory per idle connection against the
// bare coder/websocket server, its breakdown, and the CPU idle connections
// cost.
func idleRows(row func(what, gw, ceil, rat, target string), m map[string]float64) {
	kb := m["mem_gateway_kb_per_conn"]
	if kb <= 0 {
		return
	}
	row("memory per idle connection (RSS)", fmt.Sprintf("%.1f KB", kb), fmt.Sprintf("%.1f KB (bare coder/websocket)", m["mem_bare_kb_per_conn"]),
		ratio(kb, m["mem_bare_kb_per_conn"]), "≤ 12 KB")
	if s := m["mem_gateway_kb_per_conn_slope"]; s > 0 {
		row("memory per idle connection, second half only (RSS slope)", fmt.Sprintf("%.1f KB", s), "", "", "≤ 12 KB")
	}
	if h := m["mem_gateway_heap_kb_per_conn"]; h > 0 {
		row("of which: live heap; stacks; goroutines; kernel socket memory (not RSS)",
			fmt.Sprintf("%.1f KB; %.2f KB; %.2f; %.2f KB", h, m["mem_gateway_stack_kb_per_conn"], m["goroutines_per_conn"], m["kernel_kb_per_conn"]), "", "", "")
	}
	if us, ok := m["idle_cpu_us_per_conn_s"]; ok {
		row("gateway CPU per idle connection (pings, timers)", fmt.Sprintf("%.2f µs/s", us), "", "", "≤ 2 µs/s")
	}
}
