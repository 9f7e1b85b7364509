package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestRegionsGuide runs docs/regions.md as a reader would: every sh block,
// as written, in order, in one shell, against the gateway binary started
// with --dev and a JWT secret in LB_JWT_SECRET (the binary also mints the
// guide's tokens); only the address changes. Each `# → …` line of a block
// must be a line of what that block printed, so the outputs the guide shows
// are the gateway's; an answer with an error the guide does not show fails
// the test.
func TestRegionsGuide(t *testing.T) {
	testGuide(t, "regions.md")
}

// regionsCurl runs before the guide: curl prints each answer on a line of
// its own and fails only when the gateway cannot be reached, so a refusal
// is checked against the guide's expected lines, not by curl's status.
const regionsCurl = `curl() { command curl -sS --max-time 10 "$@"; echo; }
`

// testGuide runs the sh blocks of docs/<name> (see TestRegionsGuide).
func testGuide(t *testing.T, name string) {
	t.Parallel()
	for _, bin := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Missing(t, bin, "apt-get install -y "+bin)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	blocks := shBlocks(string(doc))
	if len(blocks) == 0 {
		t.Fatalf("docs/%s has no sh block", name)
	}
	dir := t.TempDir()
	bin, err := testenv.BuildGateway(dir)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "guide-test-secret-0123456789abcdef0123"
	addr := startBinary(t, bin, secret)

	const quickStart = "http://localhost:8080"
	var script strings.Builder
	script.WriteString(regionsCurl)
	for i, b := range blocks {
		fmt.Fprintf(&script, "echo '@@ block %d'\n%s", i, strings.ReplaceAll(b, quickStart, "http://"+addr))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script.String())
	cmd.Env = append(os.Environ(), "LB_JWT_SECRET="+secret, "PATH="+dir+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docs/%s failed: %v\n%s", name, err, out)
	}
	printed := strings.Split(string(out), "@@ block ")[1:]
	if len(printed) != len(blocks) {
		t.Fatalf("docs/%s: %d blocks ran of %d\n%s", name, len(printed), len(blocks), out)
	}
	expect := regexp.MustCompile(`(?m)^# → (.*)$`)
	for i, b := range blocks {
		lines := map[string]bool{}
		for _, l := range strings.Split(printed[i], "\n")[1:] {
			lines[strings.TrimSpace(l)] = true
		}
		wants := expect.FindAllStringSubmatch(b, -1)
		for _, w := range wants {
			if !lines[w[1]] {
				t.Errorf("docs/%s block %d does not print\n  %s\nit printed:\n%s", name, i, w[1], printed[i])
			}
		}
		if strings.Contains(printed[i], `"error":{`) && !strings.Contains(b, `"error":{`) {
			t.Errorf("docs/%s block %d answered an error it does not show:\n%s", name, i, printed[i])
		}
	}
}

// shBlocks returns the fenced ```sh blocks of a markdown text.
func shBlocks(doc string) []string {
	var blocks []string
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" {
			continue
		}
		var b strings.Builder
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			b.WriteString(lines[i] + "\n")
		}
		blocks = append(blocks, b.String())
	}
	return blocks
}

// startBinary runs bin --dev on a free loopback port with secret as its
// JWT key and returns its address once it serves; it drains when the test
// ends.
func startBinary(t *testing.T, bin, secret string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cmd := exec.Command(bin, "--dev", "--addr", addr, "--drain-timeout", "1s")
	cmd.Env = append(os.Environ(), "LB_JWT_SECRET="+secret)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "listening on") {
				once = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway did not start")
	}
	return addr
}
