// Command testprogress runs `go test -json` and prints what `make test`
// shows: go's own line per package as it ends (with how many are done and
// the time so far), every interval the packages still running, the output
// of failed tests only, and at the end how long the run took. The whole
// suite compiles for a minute or more before its first line, and its
// slowest packages run for minutes: without this it is silent that long.
//
//	testprogress [-go go] [-every 30s] [-last FILE] -- [go test flags] PACKAGES
//
// After "--", go test's flags take the -flag=value form: the arguments not
// starting with "-" are the package patterns, counted with `go list` first.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, os.Args[1:], os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testprogress:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// run runs the tests and returns the exit status make should see: 0 when
// every package passed, 1 otherwise.
func run(ctx context.Context, args []string, out io.Writer) (int, error) {
	fs := flag.NewFlagSet("testprogress", flag.ContinueOnError)
	goCmd := fs.String("go", "go", "the go command")
	every := fs.Duration("every", 30*time.Second, "how often to print the packages still running")
	last := fs.String("last", "", "a file keeping the last run's duration, printed at the start of the next run with the same arguments")
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	testArgs := fs.Args()
	var patterns []string
	for _, a := range testArgs {
		if !strings.HasPrefix(a, "-") {
			patterns = append(patterns, a)
		}
	}
	if len(patterns) == 0 {
		return 0, errors.New("no package patterns among the arguments")
	}
	list, err := exec.CommandContext(ctx, *goCmd, append([]string{"list"}, patterns...)...).Output()
	if err != nil {
		return 0, fmt.Errorf("go list %s: %w", strings.Join(patterns, " "), err)
	}
	total := len(strings.Fields(string(list)))
	key := strings.Join(testArgs, " ")

	p := newPrinter(out, time.Now(), total, commonPrefix(strings.Fields(string(list))), *every)
	p.begin(key, lastRun(*last, key))

	cmd := exec.CommandContext(ctx, *goCmd, append([]string{"test", "-json"}, testArgs...)...)
	cmd.Stderr = os.Stderr
	// go test and its test binaries run in their own process group, so that
	// an interrupt or a SIGTERM to this process alone stops all of them:
	// SIGINT first, SIGKILL if they are still there 10 s later.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var killLater *time.Timer
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		killLater = time.AfterFunc(10*time.Second, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		return syscall.Kill(-pgid, syscall.SIGINT)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("go test: %w", err)
	}
	ticker := time.NewTicker(*every)
	defer ticker.Stop()
	tickDone := make(chan struct{})
	go func() {
		for {
			select {
			case now := <-ticker.C:
				p.progress(now)
			case <-tickDone:
				return
			}
		}
	}()
	readErr := p.read(stdout)
	waitErr := cmd.Wait()
	if killLater != nil {
		killLater.Stop()
	}
	close(tickDone)
	elapsed := p.end(time.Now(), waitErr != nil, ctx.Err() != nil)
	if readErr != nil {
		return 0, readErr
	}
	if waitErr == nil && *last != "" && ctx.Err() == nil {
		saveRun(*last, key, elapsed)
	}
	if waitErr != nil || p.failedCount() > 0 {
		return 1, nil
	}
	return 0, nil
}

// event is one line of `go test -json` (cmd/test2json), with the fields
// of a build failure (ImportPath, build-output) that go test adds.
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

type pkgState struct {
	started time.Time
	// output of each test (the package's own under ""), kept until the
	// package ends: only a failed test's is printed.
	output map[string][]string
	failed map[string]bool
	ended  map[string]bool
}

// printer turns events into lines. Its methods may be called from the
// reading goroutine and the ticker's at once; mu guards every field.
type printer struct {
	mu      sync.Mutex
	out     io.Writer
	start   time.Time
	total   int
	prefix  string // the module's import path prefix, dropped in the progress lines
	every   time.Duration
	running map[string]*pkgState
	done    int
	failed  []string
}

func newPrinter(out io.Writer, start time.Time, total int, prefix string, every time.Duration) *printer {
	return &printer{out: out, start: start, total: total, prefix: prefix, every: every, running: map[string]*pkgState{}}
}

func (p *printer) begin(args, last string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "go test %s: %d packages.", args, p.total)
	if last != "" {
		fmt.Fprintf(p.out, " The last whole run here took %s.", last)
	}
	compile := ""
	if strings.Contains(" "+args+" ", " -race ") {
		compile = " (with -race, a minute or more)"
	}
	fmt.Fprintf(p.out, "\nThe test binaries compile first%s; then a line per package as it ends, and every %s the packages still running.\n", compile, clock(p.every))
}

func (p *printer) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			p.print(string(line) + "\n")
			continue
		}
		p.event(e, time.Now())
	}
	return sc.Err()
}

func (p *printer) print(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	io.WriteString(p.out, s)
}

func (p *printer) event(e event, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case e.Action == "build-output":
		// A compile error: go test prints it as it comes, and so do we.
		io.WriteString(p.out, e.Output)
		return
	case e.Package == "":
		return
	}
	st := p.running[e.Package]
	if st == nil {
		st = &pkgState{started: now, output: map[string][]string{}, failed: map[string]bool{}, ended: map[string]bool{}}
		p.running[e.Package] = st
	}
	switch e.Action {
	case "output":
		st.output[e.Test] = append(st.output[e.Test], e.Output)
	case "fail":
		if e.Test != "" {
			st.failed[e.Test] = true
			st.ended[e.Test] = true
			return
		}
		p.finish(e.Package, st, true, now)
	case "pass", "skip":
		if e.Test != "" {
			st.ended[e.Test] = true
			return
		}
		p.finish(e.Package, st, false, now)
	}
}

// finish prints a package's end: go's own summary line, and before it,
// when it failed, the output of its failed tests and of those that never
// ended (a panic or a timeout names no test's end).
func (p *printer) finish(pkg string, st *pkgState, failed bool, now time.Time) {
	delete(p.running, pkg)
	p.done++
	own := st.output[""]
	if failed {
		p.failed = append(p.failed, p.short(pkg))
		tests := make([]string, 0, len(st.output))
		for name := range st.output {
			if name != "" && (st.failed[name] || !st.ended[name]) {
				tests = append(tests, name)
			}
		}
		slices.Sort(tests)
		for _, name := range tests {
			for _, line := range st.output[name] {
				io.WriteString(p.out, line)
			}
		}
	}
	summary := ""
	for _, line := range own {
		if failed && !isSummary(line) {
			io.WriteString(p.out, line)
			continue
		}
		if isSummary(line) {
			summary = strings.TrimRight(line, "\n")
		}
	}
	if summary == "" {
		summary = map[bool]string{true: "FAIL", false: "ok  "}[failed] + "\t" + pkg
	}
	fmt.Fprintf(p.out, "%s\t(%d of %d, %s)\n", summary, p.done, p.total, clock(now.Sub(p.start)))
}

// isSummary reports whether line is go test's last line of a package
// ("ok  \tpkg\t1.2s", "FAIL\tpkg\t…", "?   \tpkg\t[no test files]").
func isSummary(line string) bool {
	for _, prefix := range []string{"ok  \t", "FAIL\t", "?   \t"} {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}

// progress prints the packages still running, longest first.
func (p *printer) progress(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == p.total {
		return
	}
	fmt.Fprintf(p.out, "… %s: %d of %d done", clock(now.Sub(p.start)), p.done, p.total)
	if len(p.running) == 0 {
		fmt.Fprintf(p.out, "; compiling\n")
		return
	}
	names := make([]string, 0, len(p.running))
	for name := range p.running {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := p.running[a].started.Compare(p.running[b].started); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %s", p.short(name), clock(now.Sub(p.running[name].started)))
	}
	fmt.Fprintf(p.out, "; running %s\n", strings.Join(parts, ", "))
}

// end prints the verdict and returns the run's duration.
func (p *printer) end(now time.Time, goFailed, interrupted bool) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	elapsed := now.Sub(p.start)
	slices.Sort(p.failed)
	switch {
	case interrupted:
		fmt.Fprintf(p.out, "FAIL: interrupted after %s (%d of %d packages ended", clock(elapsed), p.done, p.total)
		if len(p.failed) > 0 {
			fmt.Fprintf(p.out, ", %s failed", strings.Join(p.failed, ", "))
		}
		fmt.Fprintf(p.out, ").\n")
	case len(p.failed) > 0:
		fmt.Fprintf(p.out, "FAIL: %d of %d packages failed (%s) in %s; each one's failed tests are printed above its FAIL line.\n",
			len(p.failed), p.total, strings.Join(p.failed, ", "), clock(elapsed))
	case goFailed:
		fmt.Fprintf(p.out, "FAIL: go test failed after %s (%d of %d packages ended).\n", clock(elapsed), p.done, p.total)
	default:
		fmt.Fprintf(p.out, "ok: all %d packages passed in %s.\n", p.total, clock(elapsed))
	}
	return elapsed
}

func (p *printer) failedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.failed)
}

func (p *printer) short(pkg string) string {
	if s := strings.TrimPrefix(pkg, p.prefix); s != "" {
		return s
	}
	return pkg
}

// commonPrefix is the import path prefix every package shares, up to a
// slash ("github.com/x/y/" for the module's packages).
func commonPrefix(pkgs []string) string {
	if len(pkgs) < 2 {
		return ""
	}
	prefix := pkgs[0]
	for _, p := range pkgs[1:] {
		for !strings.HasPrefix(p, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		return prefix[:i+1]
	}
	return ""
}

// clock is a duration as minutes and seconds: 13m05s, 42s.
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// lastRun is the duration the file keeps for the same arguments, or "".
func lastRun(path, args string) string {
	if path == "" {
		return ""
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	d, rest, ok := strings.Cut(strings.TrimSpace(string(data)), " ")
	if !ok || rest != args {
		return ""
	}
	return d
}

// saveRun keeps a passed run's duration; a failure to keep it only costs
// the next run its estimate.
func saveRun(path, args string, d time.Duration) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	_ = os.WriteFile(path, []byte(clock(d)+" "+args+"\n"), 0o644)
}
