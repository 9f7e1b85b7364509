package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// userGuides are the docs/ pages a reader follows with a shell open: every
// ```sh block of each runs, as written, in order, in one shell
// (TestGuides). A page that is not here and has a ```sh block must say
// why in notGuides, so a new guide is run or deliberately left out.
var userGuides = []string{ // EDIT
	"tournament.md", "leagues.md", "derived.md", "hot.md", "webhooks.md",
	"lists.md", "console.md", "overlay.md",
}

// notGuides are the docs/ pages whose ```sh blocks are not run, and why.
var notGuides = map[string]string{
	"performance.md":  "benchmarks that take minutes and load the machine (make bench)",
	"scaling.md":      "a Redis Cluster benchmark (bench/scaling.sh)",
	"operations.md":   "Docker Compose, Kubernetes and Sentinel deployments",
	"protocol.md":     "the contract, not a walk-through",
	"architecture.md": "the design, not a walk-through",
	"reliability.md":  "fault tests, run as e2e tests",
	"seasons.md":      "its marked blocks run in TestSeasonsGuide, which also checks the files they write",
	"regions.md":      "run by TestRegionsGuide, with its own runner (LB_JWT_SECRET tokens)",
	"integrity.md":    "run by TestIntegrityGuide against the guide's own hook, which it starts",
}

// notRun marks a ```sh block of a guide that the runner leaves out: the
// line before the fence is `<!-- not run: why -->`.
var notRun = regexp.MustCompile(`^<!-- not run: .+ -->$`)

// expectLine is a `# → text` comment of a block: text is what the block
// prints, in the pieces between its `…`, in that order.
var expectLine = regexp.MustCompile(`(?:^|\s)# → (.+)$`)

// TestGuides runs each user guide as a new reader would, against the
// README's quick-start gateway: the wsgateway binary built from this tree,
// run with --dev (no key: the guides take their tokens from its dev
// endpoint) and on PATH for the guide's own `wsgateway` commands, in a
// shell with a fresh HOME at a clone of the repository. Only the
// addresses change: localhost:8080 becomes the gateway's, and any other
// loopback port a guide listens on (a webhook receiver) a free one. Then
// it checks what the guide shows: every `# → …` line of a block is in
// what that block printed, and a block whose answer is an error (a non-2xx
// status, an "error" object) shows that error.
func TestGuides(t *testing.T) {
	testenv.Long(t) // a real binary per guide, and a league that turns every minute
	t.Parallel()
	root := guideShell(t)
	checkGuideList(t, root)
	binDir := t.TempDir()
	bin, err := testenv.BuildGateway(binDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range userGuides {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			doc, err := os.ReadFile(filepath.Join(root, "docs", name))
			if err != nil {
				t.Fatal(err)
			}
			blocks := guideBlocks(string(doc), "")
			if len(blocks) == 0 {
				t.Fatalf("docs/%s has no ```sh block to run", name)
			}
			g := startGuideGateway(t, bin)
			runGuide(t, "docs/"+name, blocks, guideRun{root: root, binDir: binDir, addr: g})
		})
	}
}

// guideShell checks for what a guide's reader has (bash, curl) and returns
// the module root, where the guides run.
func guideShell(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Missing(t, bin, "apt-get install -y "+bin)
		}
	}
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// checkGuideList fails on a docs/ page with a ```sh block that is neither
// run (userGuides) nor left out with a reason (notGuides).
func checkGuideList(t *testing.T, root string) {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		name := filepath.Base(p)
		doc, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		_, left := notGuides[name]
		if run := slices.Contains(userGuides, name); run == left {
			if run || strings.Contains(string(doc), "\n```sh\n") {
				t.Errorf("docs/%s: list it in userGuides (its ```sh blocks are run) or in notGuides with why not", name)
			}
		}
	}
}

// guideBlocks returns the ```sh blocks of a markdown text, less those
// marked `<!-- not run: … -->`; with marker, only the blocks right after a
// marker line.
func guideBlocks(doc, marker string) []string {
	var blocks []string
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" {
			continue
		}
		prev := ""
		if i > 0 {
			prev = strings.TrimSpace(lines[i-1])
		}
		var b strings.Builder
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
			b.WriteString(lines[i] + "\n")
		}
		if (marker == "" && !notRun.MatchString(prev)) || (marker != "" && prev == marker) {
			blocks = append(blocks, b.String())
		}
	}
	return blocks
}

// startGuideGateway runs bin --dev on a free loopback port, as the README's
// quick start does, and returns its address once it serves; it drains
// when the test ends.
func startGuideGateway(t *testing.T, bin string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	logs := &testenv.LogBuffer{Max: 1 << 20}
	cmd := exec.Command(bin, "--dev", "--addr", addr, "--drain-timeout", "1s")
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-exited
		if t.Failed() {
			t.Logf("gateway log (tail):\n%s", logs.Tail(4000))
		}
	})
	testenv.Until(t, 20*time.Second, "the gateway's banner", func() bool {
		select {
		case <-exited:
			t.Fatalf("the gateway exited at start:\n%s", logs.Tail(4000))
		default:
		}
		return strings.Contains(logs.String(), "listening on "+addr)
	})
	return addr
}

// guideRun is where a guide runs: the module root (its working
// directory), the directory of the wsgateway binary (first on PATH), the
// gateway's address and any variables the document tells its reader to
// set from the gateway's banner.
type guideRun struct {
	root, binDir, addr string
	env                []string
}

// guideCurl runs before a guide: it prints each answer of curl, and its
// status after it as `@@ HTTP <code>` when the answer goes to the
// guide's output, not into a pipe or a variable, so a block can be
// checked for a refusal it does not show.
const guideCurl = `curl() {
	if [ /proc/self/fd/1 -ef /proc/$$/fd/1 ]; then
		command curl -sS --max-time 10 -w '\n@@ HTTP %{http_code}\n' "$@"
	else
		command curl -sS --max-time 10 "$@"
	fi
}
`

// runGuide runs blocks of the document doc in one bash (-euo pipefail)
// and checks what each block printed (see TestGuides). The `# →` lines
// have their addresses changed as the commands do.
func runGuide(t *testing.T, doc string, blocks []string, r guideRun) {
	t.Helper()
	blocks = slices.Clone(blocks)
	ports := map[string]string{"localhost:8080": r.addr, "127.0.0.1:8080": r.addr}
	other := regexp.MustCompile(`(?:localhost|127\.0\.0\.1):(\d{2,5})\b`)
	var script strings.Builder
	script.WriteString(guideCurl)
	for i, b := range blocks {
		for _, m := range other.FindAllStringSubmatch(b, -1) {
			if _, ok := ports[m[0]]; !ok {
				p := strconv.Itoa(testenv.FreePort(t))
				ports["localhost:"+m[1]], ports["127.0.0.1:"+m[1]] = "127.0.0.1:"+p, "127.0.0.1:"+p
			}
		}
		blocks[i] = other.ReplaceAllStringFunc(b, func(s string) string { return ports[s] })
		fmt.Fprintf(&script, "printf '\\n@@ block %d\\n'\n%s", i, blocks[i])
	}
	script.WriteString("printf '\\n@@ end\\n'\n")

	home := t.TempDir()
	path := os.Getenv("PATH")
	if r.binDir != "" {
		path = r.binDir + string(os.PathListSeparator) + path
	}
	env := []string{"HOME=" + home, "TMPDIR=" + home, "LANG=C.UTF-8", "PATH=" + path}
	// `go install` in a guide puts its command beside wsgateway, and it
	// builds with the test's caches, not a cold HOME's.
	if r.binDir != "" {
		env = append(env, "GOBIN="+r.binDir)
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOTOOLCHAIN", "GOFLAGS"} {
		if v, err := exec.Command("go", "env", k).Output(); err == nil && len(bytes.TrimSpace(v)) > 0 {
			env = append(env, k+"="+string(bytes.TrimSpace(v)))
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script.String())
	cmd.Dir = r.root
	cmd.Env = append(env, r.env...)
	cmd.Stdout, cmd.Stderr = &out, &out
	// A guide may leave a process in the background (a webhook receiver):
	// its group ends with the script, and its output no longer holds Wait.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
	if err != nil && !strings.Contains(out.String(), "\n@@ end\n") {
		t.Fatalf("%s failed: %v\n%s", doc, err, out.String())
	}
	printed := strings.Split(out.String(), "\n@@ block ")[1:]
	if len(printed) != len(blocks) {
		t.Fatalf("%s: %d blocks ran of %d\n%s", doc, len(printed), len(blocks), out.String())
	}
	expected := 0
	for i, b := range blocks {
		got := printed[i]
		if j := strings.Index(got, "\n@@ end\n"); j >= 0 {
			got = got[:j]
		}
		showsError := false
		for _, line := range strings.Split(b, "\n") {
			m := expectLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			expected++
			want := strings.TrimSpace(m[1])
			showsError = showsError || strings.Contains(want, `"error"`)
			if !printsInOrder(got, strings.Split(want, "…")) {
				t.Errorf("%s, block %d:\n%s\ndoes not print\n  %s\nit printed:\n%s", doc, i+1, b, want, got)
			}
		}
		refused := regexp.MustCompile(`@@ HTTP [^2]\d\d`).MatchString(got) || strings.Contains(got, `"error":{`)
		if refused && !showsError {
			t.Errorf("%s, block %d:\n%s\nanswered an error it does not show:\n%s", doc, i+1, b, got)
		}
	}
	if expected == 0 {
		t.Errorf("%s shows no `# → …` answer: a guide shows what its commands print", doc)
	}
}

// printsInOrder reports whether each non-blank piece appears in out, each
// after the one before.
func printsInOrder(out string, pieces []string) bool {
	for _, p := range pieces {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		i := strings.Index(out, p)
		if i < 0 {
			return false
		}
		out = out[i+len(p):]
	}
	return true
}

// TestWebhookGuideReceiver: the Go signature check docs/webhooks.md shows
// is, to the byte, the one examples/webhook-receiver runs, and TestGuides
// runs that receiver against the gateway's signed deliveries: the code a
// reader copies is known to accept them.
func TestWebhookGuideReceiver(t *testing.T) {
	t.Parallel()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "webhooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "examples", "webhook-receiver", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```go\n(func valid\\(.*?\n})\n```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/webhooks.md shows no Go func valid")
	}
	if !bytes.Contains(src, m[1]) {
		t.Errorf("examples/webhook-receiver/main.go does not hold the func valid docs/webhooks.md shows:\n%s", m[1])
	}
}
