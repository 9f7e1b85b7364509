package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestDevBindsLoopback: --dev listens on loopback unless --addr (or
// LB_ADDR) says otherwise; without --dev the default stays every interface.
func TestDevBindsLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--dev"}, nil, "127.0.0.1:8080"},
		{[]string{"--dev", "--addr", ":9000"}, nil, ":9000"},
		{[]string{"--dev"}, map[string]string{"LB_ADDR": "0.0.0.0:9001"}, "0.0.0.0:9001"},
		{[]string{"--jwt-secret", testSecret}, nil, ":8080"},
	} {
		o, err := parseServe(tc.args, envMap(tc.env), new(bytes.Buffer))
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.Addr != tc.want {
			t.Errorf("%v %v: addr %q, want %q", tc.args, tc.env, o.Addr, tc.want)
		}
	}
}

// devPost POSTs a dev token request to addr with the given Host header.
func devPost(t *testing.T, addr, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+addr+"/api/v1/dev/token", strings.NewReader(`{"sub":"eve","role":"admin"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDevTokenNeverUsesConfiguredKey: with --dev and a configured JWT key
// the dev token endpoint is off and the banner mints nothing: a token from
// it would be valid on every production node sharing the key.
func TestDevTokenNeverUsesConfiguredKey(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "--dev") // startGateway passes --jwt-secret
	if code, body := devPost(t, g.addr, g.addr); code != http.StatusNotFound {
		t.Fatalf("POST /api/v1/dev/token with a configured key = %d %s; want 404", code, body)
	}
	if strings.Contains(g.stdout.String(), "admin token") {
		t.Fatalf("the banner minted a token with the configured key:\n%s", g.stdout.String())
	}
	if !strings.Contains(g.stderr.String(), "dev token endpoint off") {
		t.Errorf("no log line says why the dev token endpoint is off:\n%s", g.stderr.String())
	}
}

// TestDevTokenLoopbackHostsOnly: the dev token endpoint answers loopback
// Host headers only; a forged Host (DNS rebinding) or a foreign Origin gets
// 403 forbidden.
func TestDevTokenLoopbackHostsOnly(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr testenv.LogBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--dev", "--addr", "127.0.0.1:0", "--drain-timeout", "1s"}, envMap(nil), &stdout, &stderr)
	}()
	t.Cleanup(func() { cancel(); <-done })
	addrRe := regexp.MustCompile(`listening on (127\.0\.0\.1:(\d+))`)
	testenv.Until(t, 10*time.Second, "the start banner", func() bool { return addrRe.MatchString(stdout.String()) })
	m := addrRe.FindStringSubmatch(stdout.String())
	addr, port := m[1], m[2]
	for _, host := range []string{addr, "localhost:" + port, "[::1]:" + port, "localhost"} {
		if code, body := devPost(t, addr, host); code != http.StatusOK || !strings.Contains(body, `"token"`) {
			t.Errorf("Host %s: %d %s; want 200 and a token", host, code, body)
		}
	}
	for _, host := range []string{"evil.example:" + port, "evil.example", "192.168.1.10:" + port, "127.0.0.1.evil.example"} {
		if code, body := devPost(t, addr, host); code != http.StatusForbidden || !strings.Contains(body, `"forbidden"`) {
			t.Errorf("Host %s: %d %s; want 403 forbidden", host, code, body)
		}
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/v1/dev/token", strings.NewReader(`{"sub":"eve"}`))
	req.Header.Set("Origin", "http://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Origin: %d; want 403", resp.StatusCode)
	}
}

// TestDevExposedWarning: a dev gateway listening beyond loopback says so
// loudly, in the banner and the log; on loopback it does not.
func TestDevExposedWarning(t *testing.T) {
	t.Parallel()
	o := serveOptions{Dev: true, NodeID: "n"}
	secret := []byte(testSecret)
	for _, tc := range []struct {
		addr net.Addr
		warn bool
	}{
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, true},
		{&net.TCPAddr{IP: net.ParseIP("192.168.1.10"), Port: 8080}, true},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, false},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, false},
	} {
		var banner, logs bytes.Buffer
		announce(&banner, o, tc.addr, secret, slog.New(slog.NewJSONHandler(&logs, nil)))
		warned := strings.Contains(banner.String(), "WARNING") && strings.Contains(logs.String(), `"level":"WARN"`)
		if warned != tc.warn {
			t.Errorf("%v: warned %v, want %v\nbanner:\n%s\nlog:\n%s", tc.addr, warned, tc.warn, banner.String(), logs.String())
		}
	}
}
