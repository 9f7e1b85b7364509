package main

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// failing are the packages module adds for a run that fails: e has a
// failing and a passing test, f does not compile.
var failing = map[string]string{
	"e/e_test.go": "package e\n\nimport \"testing\"\n\nfunc TestBad(t *testing.T) { t.Log(\"what led to it\"); t.Fatal(\"the failure\") }\n\nfunc TestGood(t *testing.T) { t.Log(\"the passing one\") }\n",
	"f/f_test.go": "package f\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) { undefinedName() }\n",
}

// module writes a small module into a temporary directory and makes it the
// working directory: a and b pass (b logging), c has no tests, and extra
// adds more files. It returns the go command and the directory.
func module(t *testing.T, extra map[string]string) (goCmd, dir string) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	files := map[string]string{
		"go.mod":      "module tp\n\ngo 1.22\n",
		"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\n",
		"b/b_test.go": "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) { t.Log(\"quiet when passing\") }\n",
		"c/c.go":      "package c\n",
	}
	maps.Copy(files, extra)
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	t.Setenv("GOFLAGS", "")
	return goCmd, dir
}

// TestRunShowsFailuresOnly: a real `go test -json` of a module with a
// failing test and a package that does not compile ends in status 1, shows
// the failed test's output and the compile error, hides what passing tests
// logged, and names the failed packages last.
func TestRunShowsFailuresOnly(t *testing.T) {
	goCmd, _ := module(t, failing)
	var out bytes.Buffer
	code, err := run(context.Background(), []string{"-go=" + goCmd, "--", "-count=1", "./..."}, &out)
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	t.Logf("output:\n%s", got)
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	for _, want := range []string{
		"go test -count=1 ./...: 5 packages.",
		"what led to it", "the failure", "--- FAIL: TestBad",
		"undefined: undefinedName", "FAIL\ttp/f [build failed]",
		"ok  \ttp/a\t", "?   \ttp/c\t[no test files]",
		"FAIL: 2 of 5 packages failed (e, f) in ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, hidden := range []string{"quiet when passing", "the passing one", "=== RUN   TestA"} {
		if strings.Contains(got, hidden) {
			t.Errorf("output shows %q, which a passing test logged", hidden)
		}
	}
	if i, j := strings.Index(got, "the failure"), strings.Index(got, "FAIL\ttp/e"); i < 0 || j < i {
		t.Errorf("the failed test's output is not printed before its package's FAIL line")
	}
}

// TestRunKeepsTheLastDuration: a run that passes says so with its duration
// and keeps it; the next run with the same arguments starts by saying how
// long the last one took, and one with other arguments does not.
func TestRunKeepsTheLastDuration(t *testing.T) {
	goCmd, dir := module(t, nil)
	last := filepath.Join(dir, "out", "last")
	runOnce := func(args ...string) string {
		var out bytes.Buffer
		code, err := run(context.Background(), append([]string{"-go=" + goCmd, "-last=" + last, "--"}, args...), &out)
		if err != nil || code != 0 {
			t.Fatalf("run: status %d, %v\n%s", code, err, out.String())
		}
		return out.String()
	}
	first := runOnce("-count=1", "./...")
	if !strings.Contains(first, "ok: all 3 packages passed in ") || strings.Contains(first, "The last whole run") {
		t.Errorf("first run:\n%s", first)
	}
	if second := runOnce("-count=1", "./..."); !strings.Contains(second, "The last whole run here took ") {
		t.Errorf("second run does not say how long the first took:\n%s", second)
	}
	if other := runOnce("-count=1", "./a"); strings.Contains(other, "The last whole run") {
		t.Errorf("a run of other packages quotes the whole run's duration:\n%s", other)
	}
}

// TestProgressNamesRunningPackages: the periodic line counts the packages
// done and lists the running ones, longest running first, or says the
// binaries are still compiling.
func TestProgressNamesRunningPackages(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newPrinter(&out, t0, 4, "example.com/m/", 30*time.Second)
	p.progress(t0.Add(30 * time.Second))
	p.event(event{Action: "start", Package: "example.com/m/web"}, t0.Add(35*time.Second))
	p.event(event{Action: "start", Package: "example.com/m/e2e"}, t0.Add(40*time.Second))
	p.event(event{Action: "start", Package: "example.com/m/api"}, t0.Add(50*time.Second))
	p.event(event{Action: "output", Package: "example.com/m/api", Output: "ok  \texample.com/m/api\t9.0s\n"}, t0.Add(59*time.Second))
	p.event(event{Action: "pass", Package: "example.com/m/api"}, t0.Add(59*time.Second))
	p.progress(t0.Add(2*time.Minute + 5*time.Second))
	want := "… 30s: 0 of 4 done; compiling\n" +
		"ok  \texample.com/m/api\t9.0s\t(1 of 4, 59s)\n" +
		"… 2m05s: 1 of 4 done; running web 1m30s, e2e 1m25s\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestRunInterrupted: cancelling the run (SIGINT or SIGTERM to make) stops
// go test and the test binaries it runs, and the verdict says so.
func TestRunInterrupted(t *testing.T) {
	// A test binary runs in its package's directory: s/../started.
	goCmd, dir := module(t, map[string]string{"s/s_test.go": "package s\n\nimport (\n\t\"os\"\n\t\"testing\"\n\t\"time\"\n)\n\n" +
		"func TestLong(t *testing.T) {\n\tos.WriteFile(\"../started\", nil, 0o644)\n\ttime.Sleep(time.Hour)\n}\n"})
	started := filepath.Join(dir, "started")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			if _, err := os.Stat(started); err == nil {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	var out bytes.Buffer
	code, err := run(ctx, []string{"-go=" + goCmd, "--", "-count=1", "./..."}, &out)
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if code != 1 || !strings.Contains(got, "FAIL: interrupted after ") || !strings.Contains(got, "s failed") {
		t.Errorf("status %d, output:\n%s", code, got)
	}
}
