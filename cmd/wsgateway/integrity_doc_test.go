package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// guideBlock is the fenced block that follows the first line equal to
// marker, from the line index at on; -1 when there is none.
func guideBlock(lines []string, marker string, at int) (string, int) {
	for i := at; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != marker || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			continue
		}
		var b strings.Builder
		j := i + 2
		for ; j < len(lines) && !strings.HasPrefix(lines[j], "```"); j++ {
			b.WriteString(lines[j] + "\n")
		}
		return b.String(), j
	}
	return "", -1
}

// TestIntegrityGuide runs docs/integrity.md as written: its hook (the
// Python block) on a free loopback port, and each walk-through block, in
// order, against a fresh `wsgateway --dev --webhook-allow-private` with the
// banner's admin token as ADMIN (only the two addresses change). The
// gateway's answers must hold the block's answer: its pieces between "…",
// in order, line breaks aside.
func TestIntegrityGuide(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{"bash", "curl", "python3"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Missing(t, bin, "apt-get install -y "+bin)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "integrity.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	hook, _ := guideBlock(lines, "<!-- integrity-hook -->", 0)
	if n := strings.Count(strings.TrimSpace(hook), "\n") + 1; hook == "" || n > 20 {
		t.Fatalf("docs/integrity.md's hook: %d lines, want 1..20", n)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hook.py"), []byte(hook), 0o644); err != nil {
		t.Fatal(err)
	}
	port := testenv.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	py := exec.CommandContext(ctx, "python3", filepath.Join(dir, "hook.py"))
	py.Env = append(os.Environ(), fmt.Sprintf("HOOK_PORT=%d", port))
	var pyOut testenv.LogBuffer
	py.Stdout, py.Stderr = &pyOut, &pyOut
	if err := py.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = py.Wait()
		t.Logf("hook output:\n%s", pyOut.String())
	})
	hookAddr := fmt.Sprintf("127.0.0.1:%d", port)
	testenv.Eventually(t, 10*time.Second, "the hook listens", func() error {
		c, err := net.Dial("tcp", hookAddr)
		if err == nil {
			c.Close()
		}
		return err
	})

	dev := startDev(t, "--webhook-allow-private")
	fix := strings.NewReplacer("http://localhost:8080", "http://"+dev.addr, "127.0.0.1:9000", hookAddr)
	blocks := 0
	for at := 0; ; {
		cmd, next := guideBlock(lines, "<!-- integrity-test -->", at)
		if next < 0 {
			break
		}
		want, after := guideBlock(lines, "<!-- integrity-answer -->", next)
		if after < 0 {
			t.Fatalf("block %d has no answer after it:\n%s", blocks, cmd)
		}
		at = after
		blocks++
		rctx, rcancel := context.WithTimeout(t.Context(), time.Minute)
		sh := exec.CommandContext(rctx, "bash", "-euo", "pipefail", "-c", fix.Replace(cmd))
		sh.Env = append(os.Environ(), "ADMIN="+dev.token)
		var stderr strings.Builder
		sh.Stderr = &stderr
		out, err := sh.Output()
		rcancel()
		if err != nil {
			t.Fatalf("block %d failed: %v\n%s\n%s", blocks, err, out, stderr.String())
		}
		got := strings.ReplaceAll(string(out), "\n", "")
		rest := got
		for _, piece := range strings.Split(strings.ReplaceAll(fix.Replace(strings.TrimSpace(want)), "\n", ""), "…") {
			i := strings.Index(rest, piece)
			if i < 0 {
				t.Fatalf("block %d answered\n%s\nwhich lacks %q (in order) of\n%s", blocks, got, piece, want)
			}
			rest = rest[i+len(piece):]
		}
	}
	if blocks < 6 {
		t.Fatalf("docs/integrity.md has %d walk-through blocks, want the whole walk-through", blocks)
	}
	// As the guide says: run-1 to run-4 were called once each; the
	// re-sends and erin's run below the top 2 were not.
	testenv.Until(t, 5*time.Second, "the hook's log of its 4 calls", func() bool { return strings.Count(pyOut.String(), `"POST / `) >= 4 })
	if n := strings.Count(pyOut.String(), `"POST / `); n != 4 {
		t.Fatalf("the hook was called %d times, want 4:\n%s", n, pyOut.String())
	}
}
