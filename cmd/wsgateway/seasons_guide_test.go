package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// seasonsMarker precedes each fenced block of docs/seasons.md that
// TestSeasonsGuide runs.
const seasonsMarker = "<!-- seasons-test -->"

// TestSeasonsGuide runs docs/seasons.md's marked blocks, as written and in
// order, as one bash script (-euo pipefail: every curl -f must answer
// 2xx) in a scratch directory, against a gateway run with --dev and a key,
// `wsgateway` (for its tokens) built from this tree and LB_JWT_SECRET set
// as the guide expects; only the address changes. Then it checks what the
// guide says happened.
func TestSeasonsGuide(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{"bash", "curl", "awk"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Missing(t, bin, "apt-get install -y "+bin)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "seasons.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := guideBlocks(string(doc), seasonsMarker)
	if len(blocks) < 6 {
		t.Fatalf("docs/seasons.md has %d blocks marked %s", len(blocks), seasonsMarker)
	}
	bin := t.TempDir()
	if _, err := testenv.BuildGateway(bin); err != nil {
		t.Fatal(err)
	}
	const secret = "seasons-guide-secret-0123456789abcdef"
	addr := startDev(t, "--jwt-secret", secret).addr

	script := strings.ReplaceAll(strings.Join(blocks, ""), "http://localhost:8080", "http://"+addr)
	work := t.TempDir()
	cctx, ccancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer ccancel()
	cmd := exec.CommandContext(cctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "LB_JWT_SECRET="+secret)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docs/seasons.md failed: %v\n%s", err, out)
	}
	// What the guide's comments say the gateway answered.
	for _, want := range []string{
		`"score":1000,`, `"capped":true,"applied":300`, `"code":"limit_reached"`, `"score":900,`,
		`{"applied":4,"duplicate":0,"failed":0,"errors":[]}`,
		`{"applied":1,"duplicate":0,"failed":3,"errors":[{"line":2,"code":"bad_request"`,
		`{"applied":0,"duplicate":4,"failed":0,"errors":[]}`,
		`{"rank":1,"member":"p-7","score":35,"name":null,"meta":null}`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the guide's output lacks %s:\n%s", want, out)
		}
	}
	lastWeek, err := os.ReadFile(filepath.Join(work, "last-week.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "rank,member,score,name,meta\r\n1,p-1001,4200,Ann,\r\n2,p-1002,3900,Bob,\r\n3,p-1003,3900,Cid,\r\n4,p-1004,150,,\r\n"; string(lastWeek) != want {
		t.Errorf("last-week.csv:\n%q\nwant\n%q", lastWeek, want)
	}
	hall, err := os.ReadFile(filepath.Join(work, "hall.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(hall), "\n"); lines != 6 {
		t.Errorf("hall.csv has %d lines, want the header and 5 entries:\n%s", lines, hall)
	}
}
