package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/loadgen"
)

// `wsgateway load --churn` churns every kind of connection and reports it
// in the summary, the JSON and the HTML; a bad --churn is a usage error.
// Three seconds of 100 ms lifetimes leave room for a loaded machine.
func TestLoadCommandChurn(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	dir := t.TempDir()
	jsonOut, htmlOut := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"load", "--url", "ws://" + g.addr + "/ws", "--secret", testSecret, "--create",
		"--players", "1", "--spectators", "2", "--watchers", "1", "--members", "20", "--rate", "100",
		"--duration", "3s", "--churn", "100ms", "--quiet", "--json", jsonOut, "--html", htmlOut}, envMap(nil), &stdout, &stderr)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var rep loadgen.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	c := rep.Connections
	if rep.ChurnSeconds != 0.1 || c.Churned < 4 || c.Redialed == 0 || c.DialFailed != 0 || rep.Events.Failed != 0 {
		t.Errorf("churn %v, connections %+v, events %+v", rep.ChurnSeconds, c, rep.Events)
	}
	if !strings.Contains(stdout.String(), "churn     lifetime 100ms") {
		t.Errorf("summary lacks the churn line:\n%s", stdout.String())
	}
	if h, err := os.ReadFile(htmlOut); err != nil || !bytes.Contains(h, []byte("<th>churned</th>")) {
		t.Errorf("HTML report: %v, no churned column", err)
	}

	for _, bad := range []string{"-1s", "1ms", "soon"} {
		err := run(t.Context(), []string{"load", "--secret", testSecret, "--churn", bad}, envMap(nil), new(bytes.Buffer), new(bytes.Buffer))
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("--churn %s: %v; want a usage error", bad, err)
		}
	}
}

// TestLoadCommandTokenSources: `wsgateway load` runs against the quick-start
// gateway with the banner's token (--token) or the dev token endpoint
// (--dev-token); a wrong token and a dead URL fail at once with different,
// clear messages.
func TestLoadCommandTokenSources(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr testenv.LogBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--dev", "--addr", "127.0.0.1:0", "--drain-timeout", "1s"}, envMap(nil), &stdout, &stderr)
	}()
	t.Cleanup(func() { cancel(); <-done })
	addrRe := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	tokenRe := regexp.MustCompile(`admin token \(24h\):\n(\S+)\n`)
	testenv.Until(t, 10*time.Second, "the start banner", func() bool { return tokenRe.MatchString(stdout.String()) })
	url := "ws://" + addrRe.FindStringSubmatch(stdout.String())[1] + "/ws"
	admin := tokenRe.FindStringSubmatch(stdout.String())[1]
	small := []string{"--players", "1", "--spectators", "1", "--watchers", "1", "--members", "10", "--rate", "50", "--duration", "300ms", "--quiet", "--create"}

	load := func(extra ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(t.Context(), append(append([]string{"load"}, extra...), small...), envMap(nil), &out, &errOut)
		return out.String() + errOut.String(), err
	}
	for _, src := range [][]string{{"--url", url, "--token", admin}, {"--url", url, "--dev-token"}} {
		out, err := load(src...)
		if err != nil || !strings.Contains(out, "events") {
			t.Errorf("%v: %v\n%s", src[2:], err, out)
		}
		if strings.Contains(out, admin) {
			t.Errorf("%v: the token was printed", src[2:])
		}
	}

	_, errWrong := load("--url", url, "--token", "not.a.token")
	_, errSecret := load("--url", url, "--secret", strings.Repeat("w", 32))
	dead := "ws://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)) + "/ws"
	_, errDead := load("--url", dead, "--token", admin)
	_, errDeadDev := load("--url", dead, "--dev-token")
	// small ends with --create; a missing board without it fails the command.
	var noBoardOut bytes.Buffer
	errNoBoard := run(t.Context(), append([]string{"load", "--url", url, "--token", admin, "--board", "never-created"}, small[:len(small)-1]...), envMap(nil), &noBoardOut, &noBoardOut)
	for name, tc := range map[string]struct {
		err  error
		want error
		text string
	}{
		"wrong token":          {errWrong, loadgen.ErrTokenRefused, "refused the token"},
		"wrong secret":         {errSecret, loadgen.ErrTokenRefused, "refused the token"},
		"dead URL":             {errDead, loadgen.ErrUnreachable, "cannot reach"},
		"dead URL, dev tokens": {errDeadDev, loadgen.ErrUnreachable, "cannot reach"},
		"missing board":        {errNoBoard, loadgen.ErrNoBoard, "pass --create"},
	} {
		if !errors.Is(tc.err, tc.want) || !strings.Contains(tc.err.Error(), tc.text) {
			t.Errorf("%s: err %v; want %q", name, tc.err, tc.text)
		}
		if code := exitCode(tc.err, io.Discard); code == 0 {
			t.Errorf("%s: exit status 0", name)
		}
	}
	if err := run(t.Context(), []string{"load", "--token", "x", "--dev-token"}, envMap(nil), new(bytes.Buffer), new(bytes.Buffer)); !errors.As(err, new(usageError)) {
		t.Errorf("--token with --dev-token: %v; want a usage error", err)
	}
}
