package main

import (
	"context"
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

// startDev runs the quick start's `wsgateway --dev` and waits for its
// banner; the gateway drains when the test ends.
func startDev(t *testing.T) devGateway {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr testenv.LogBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--dev", "--addr", "127.0.0.1:0", "--drain-timeout", "1s"}, envMap(nil), &stdout, &stderr)
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
