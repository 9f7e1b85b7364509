package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
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
	// A gateway given a key prints no token: its banner ends with the address.
	last := tokenRe
	if len(args) > 0 {
		last = addrRe
	}
	testenv.Until(t, 10*time.Second, "the start banner", func() bool { return last.MatchString(stdout.String()) })
	out := stdout.String()
	dev := devGateway{addr: addrRe.FindStringSubmatch(out)[1], banner: out}
	if m := tokenRe.FindStringSubmatch(out); m != nil {
		dev.token = m[1]
	}
	return dev
}

// readmeMarker precedes each fenced shell block of README.md that
// TestREADMEExamples runs.
const readmeMarker = "<!-- readme-test -->"

// TestREADMEExamples runs the README's marked curl examples as TestGuides
// runs a guide (runGuide): as written, in order, against a fresh
// `wsgateway --dev` with its banner's admin token as ADMIN, as the README
// tells its reader to set it; only the address changes. An example the
// gateway answers with anything but 2xx, or with an error inside a 2xx
// answer, fails the test, and so does an answer a `# →` line shows that
// the gateway did not give.
func TestREADMEExamples(t *testing.T) {
	t.Parallel()
	root := guideShell(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := guideBlocks(string(readme), readmeMarker)
	if len(blocks) == 0 {
		t.Fatalf("README.md has no block marked %s", readmeMarker)
	}
	dev := startDev(t)
	runGuide(t, "README.md", blocks, guideRun{root: root, addr: dev.addr, env: []string{"ADMIN=" + dev.token}})
}
