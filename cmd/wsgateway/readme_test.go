package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// devGateway is `wsgateway --dev` run in-process on a free loopback port.
type devGateway struct {
	addr   string // host:port
	token  string // the banner's admin token
	banner string
}

// startDev runs the quick start's `wsgateway --dev` (with flags) and waits
// for its banner; the gateway drains when the test ends.
func startDev(t *testing.T, flags ...string) devGateway {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr testenv.LogBuffer
	done := make(chan error, 1)
	args := append([]string{"--dev", "--addr", "127.0.0.1:0", "--drain-timeout", "1s"}, flags...)
	go func() {
		done <- run(ctx, args, envMap(nil), &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	addrRe := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	tokenRe := regexp.MustCompile(`admin token \(24h\):\n(\S+)\n`)
	testenv.Until(t, 10*time.Second, "the start banner", func() bool { return tokenRe.MatchString(stdout.String()) })
	out := stdout.String()
	return devGateway{addr: addrRe.FindStringSubmatch(out)[1], token: tokenRe.FindStringSubmatch(out)[1], banner: out}
}

// readmeMarker precedes each fenced shell block of README.md that
// TestREADMEExamples runs.
const readmeMarker = "<!-- readme-test -->"

// readmeBlocks returns the fenced blocks that follow a readmeMarker line.
func readmeBlocks(readme string) []string {
	var blocks []string
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != readmeMarker || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			continue
		}
		var b strings.Builder
		for i += 2; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			b.WriteString(lines[i] + "\n")
		}
		blocks = append(blocks, b.String())
	}
	return blocks
}

// readmeCurl runs before each block: its curl fails on a status other than
// 2xx (-f), and on a 2xx answer that carries an error, as a score array
// answers an event it refused.
const readmeCurl = `curl() {
	local out
	out=$(command curl -fsS --max-time 10 "$@")
	printf '%s\n' "$out"
	case "$out" in *'"error":{'*) echo "README example answered an error" >&2; return 1 ;; esac
}
`

// TestREADMEExamples runs the README's marked curl examples, as written, in
// order, against a fresh `wsgateway --dev` with its banner's admin token as
// ADMIN: only the address changes. An example the gateway answers with
// anything but 2xx, or with an error inside a 2xx answer, fails the test.
func TestREADMEExamples(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Missing(t, bin, "apt-get install -y "+bin)
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(string(readme))
	if len(blocks) == 0 {
		t.Fatalf("README.md has no block marked %s", readmeMarker)
	}
	dev := startDev(t)
	for i, block := range blocks {
		const quickStart = "http://localhost:8080"
		if !strings.Contains(block, quickStart) {
			t.Fatalf("block %d does not address the quick-start gateway (%s):\n%s", i, quickStart, block)
		}
		script := readmeCurl + strings.ReplaceAll(block, quickStart, "http://"+dev.addr)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-x", "-c", script)
		cmd.Env = append(os.Environ(), "ADMIN="+dev.token)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("README block %d failed: %v\n%s", i, err, out)
		}
	}
}
