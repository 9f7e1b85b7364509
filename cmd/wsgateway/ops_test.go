package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestUnreachableNATSIsLoud: a gateway started with an --nats-url nobody
// listens on logs a WARN naming NATS at once, serves (start-up does not wait
// for NATS), and /readyz answers 503 while the banner hides the password.
func TestUnreachableNATSIsLoud(t *testing.T) {
	t.Parallel()
	url := "nats://u:nats-pw-hidden@127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	g := startGateway(t, "--nats-url", url)
	testenv.Until(t, 2*time.Second, "a WARN naming NATS", func() bool {
		for _, l := range strings.Split(g.stderr.String(), "\n") {
			if strings.Contains(l, `"level":"WARN"`) && strings.Contains(l, "NATS unreachable") {
				return true
			}
		}
		return false
	})
	if code, body := httpDo(t, "GET", "http://"+g.addr+"/readyz", "", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz = %d %s; want 503 while NATS is down", code, body)
	}
	_, metrics := httpDo(t, "GET", "http://"+g.addr+"/metrics", "", "")
	for _, want := range []string{`wsgateway_check_ok{check="bus"} 0`, `wsgateway_check_ok{check="store"} 1`, "wsgateway_nats_reconnects_total 0"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(g.stdout.String()+g.stderr.String()+metrics, "nats-pw-hidden") {
		t.Fatal("the NATS password was printed")
	}
}

// TestHealthcheckCommand: `wsgateway healthcheck` exits 0 against a live
// gateway and fails against a dead address; LB_ADDR points it like the
// gateway itself.
func TestHealthcheckCommand(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	_, port, _ := strings.Cut(g.addr, ":")
	var out bytes.Buffer
	if err := run(t.Context(), []string{"healthcheck"}, envMap(map[string]string{"LB_ADDR": ":" + port}), &out, new(bytes.Buffer)); err != nil {
		t.Fatalf("healthcheck against a live gateway: %v", err)
	}
	if !strings.Contains(out.String(), "200") {
		t.Errorf("healthcheck output %q", out.String())
	}
	if err := run(t.Context(), []string{"healthcheck", "--addr", g.addr, "--path", "/readyz"}, envMap(nil), new(bytes.Buffer), new(bytes.Buffer)); err != nil {
		t.Errorf("healthcheck --path /readyz: %v", err)
	}
	dead := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	err := run(t.Context(), []string{"healthcheck", "--addr", dead, "--timeout", "1s"}, envMap(nil), new(bytes.Buffer), new(bytes.Buffer))
	if code := exitCode(err, new(bytes.Buffer)); code != 1 {
		t.Errorf("healthcheck against a dead address: exit %d (%v); want 1", code, err)
	}
	err = run(t.Context(), []string{"healthcheck", "--addr", "nonsense"}, envMap(nil), new(bytes.Buffer), new(bytes.Buffer))
	if code := exitCode(err, new(bytes.Buffer)); code != 2 {
		t.Errorf("healthcheck --addr nonsense: exit %d (%v); want 2", code, err)
	}
}

// TestVersionText renders build info: the module version, the Go version
// and the VCS stamp when the build recorded one.
func TestVersionText(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "false"},
		{Key: "-ldflags", Value: "-s -w"},
	}}
	got := versionText(bi, true)
	for _, want := range []string{"wsgateway v1.2.3\n", "go1.99", "revision  abc123", "time      2026-01-02T03:04:05Z", "modified  false"} {
		if !strings.Contains(got, want) {
			t.Errorf("version text lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "ldflags") {
		t.Errorf("version text shows build flags:\n%s", got)
	}
	if got := versionText(nil, false); !strings.Contains(got, runtime.Version()) {
		t.Errorf("without build info: %q", got)
	}
}

// TestBinary runs the built program: `version` and `--version` print the
// same build information, and a Redis that refuses connections yields only
// JSON lines on stderr (go-redis's own messages go through slog), then a
// one-line error.
//
// Not parallel: the go build it runs would starve this package's timing
// tests (TestSlowlorisCutOff) on a small machine; run first, it overlaps none.
func TestBinary(t *testing.T) {
	testenv.Long(t)
	bin, err := testenv.BuildGateway(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	v1, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	v2, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	if !bytes.HasPrefix(v1, []byte("wsgateway ")) || !bytes.Contains(v1, []byte(runtime.Version())) || !bytes.Equal(v1, v2) {
		t.Errorf("version:\n%s\n--version:\n%s", v1, v2)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	redisURL := "redis://:redis-pw-hidden@127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)) + "/0"
	cmd := exec.CommandContext(ctx, bin, "--addr", "127.0.0.1:0", "--redis-url", redisURL)
	cmd.Env = append(cmd.Environ(), "LB_JWT_SECRET="+testSecret)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("the gateway started without its Redis")
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	redisLines := 0
	for _, l := range lines[:len(lines)-1] {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("stderr line is not JSON: %q", l)
			continue
		}
		if m["component"] == "redis" {
			redisLines++
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "wsgateway: ") {
		t.Errorf("last stderr line %q is not the one-line error", last)
	}
	if redisLines == 0 {
		t.Errorf("no go-redis message went through slog:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "redis-pw-hidden") {
		t.Error("the Redis password was printed")
	}
}
