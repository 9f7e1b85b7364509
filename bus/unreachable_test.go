package bus

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestUnreachableNATSIsLoud: a bus whose NATS servers are down at start
// says so at once, at WARN, naming NATS, and keeps saying it while it
// retries; Ping (readiness) fails meanwhile.
func TestUnreachableNATSIsLoud(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	logs := new(testenv.LogBuffer)
	url := "nats://u:pw-not-shown@127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	b, err := New(context.Background(), Config{
		URL:    url,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		t.Fatalf("New must not fail while NATS is down (readiness reports it): %v", err)
	}
	t.Cleanup(func() { b.Close() })
	warned := func(what string) bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `"level":"WARN"`) && strings.Contains(l, "NATS") && strings.Contains(l, what) {
				return true
			}
		}
		return false
	}
	testenv.Until(t, 2*time.Second, "a WARN naming NATS at start", func() bool { return warned("unreachable") })
	testenv.Until(t, 3*reconnectLogEvery, "a WARN for a failed reconnect attempt", func() bool { return warned("attempts") })
	if err := b.Ping(context.Background()); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("Ping = %v, want ErrDisconnected", err)
	}
	if strings.Contains(logs.String(), "pw-not-shown") {
		t.Fatal("the NATS password reached the log")
	}
}

// TestLogLimiter: the first event is logged at once, later ones at most
// once per interval, each logged line counting the events it stands for.
func TestLogLimiter(t *testing.T) {
	t.Parallel()
	var l logLimiter
	t0 := time.Unix(1000, 0)
	for _, step := range []struct {
		at    time.Duration
		ok    bool
		count int
	}{
		{0, true, 1},
		{time.Second, false, 0},
		{2 * time.Second, false, 0},
		{5 * time.Second, true, 3},
		{9 * time.Second, false, 0},
		{30 * time.Second, true, 2},
	} {
		ok, n := l.allow(t0.Add(step.at), 5*time.Second)
		if ok != step.ok || n != step.count {
			t.Fatalf("at %v: allow = %v, %d; want %v, %d", step.at, ok, n, step.ok, step.count)
		}
	}
}
