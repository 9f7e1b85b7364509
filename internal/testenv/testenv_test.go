package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestRedisStartKillRestart(t *testing.T) {
	t.Parallel()
	r := StartRedis(t)
	if got, err := RedisCommand(r.Addr(), "PING"); err != nil || got != "+PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	r.Kill()
	if _, err := RedisCommand(r.Addr(), "PING"); err == nil {
		t.Fatal("PING answered after Kill")
	}
	r.Start()
	if got, err := RedisCommand(r.Addr(), "PING"); err != nil || got != "+PONG" {
		t.Fatalf("PING after restart = %q, %v", got, err)
	}
}

func TestNATSStarts(t *testing.T) {
	t.Parallel()
	n := StartNATS(t)
	c, err := net.Dial("tcp", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 4)
	if _, err := c.Read(buf); err != nil || !strings.HasPrefix(string(buf), "INFO") {
		t.Fatalf("nats greeting = %q, %v", buf, err)
	}
}

// A bounded LogBuffer keeps the most recent bytes, never more than about
// Max, and Tail returns the end of what it kept.
func TestLogBufferKeepsTheTail(t *testing.T) {
	l := &LogBuffer{Max: 100}
	var all strings.Builder
	for i := range 50 {
		line := fmt.Sprintf("line %03d\n", i) // 9 bytes
		all.WriteString(line)
		l.Write([]byte(line))
	}
	got := l.String()
	if len(got) > 100+9 || !strings.HasSuffix(all.String(), got) || !strings.HasPrefix(got, "line") {
		t.Errorf("kept %d bytes %q; want whole lines, the last ≤ 109 bytes of what was written", len(got), got)
	}
	if tail := l.Tail(9); tail != "line 049\n" {
		t.Errorf("Tail(9) = %q", tail)
	}
	var unbounded LogBuffer
	unbounded.Write([]byte(all.String()))
	if unbounded.String() != all.String() {
		t.Errorf("an unbounded LogBuffer dropped bytes")
	}
}

// Eventually returns once cond holds, having polled until then.
func TestEventuallyPolls(t *testing.T) {
	calls := 0
	Eventually(t, 10*time.Second, "the third call", func() error {
		if calls++; calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if calls != 3 {
		t.Errorf("cond called %d times; want 3", calls)
	}
}

// longProbeEnv makes TestLongProbe call Long; unset, the probe does
// nothing, so it is inert in a normal run.
const longProbeEnv = "LB_TESTENV_LONG_PROBE"

func TestLongProbe(t *testing.T) {
	if os.Getenv(longProbeEnv) != "1" {
		return
	}
	Long(t)
	t.Log("long probe ran")
}

// Long skips under -short even with LB_REQUIRE_ALL=1, and runs the test
// without -short: this test runs its own binary both ways.
func TestLong(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		short bool
		want  string
	}{
		{short: true, want: "--- SKIP: TestLongProbe"},
		{short: false, want: "long probe ran"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLongProbe$", "-test.v", fmt.Sprintf("-test.short=%v", tc.short))
		cmd.Env = append(os.Environ(), longProbeEnv+"=1", "LB_REQUIRE_ALL=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("-short=%v: %v; want %q in:\n%s", tc.short, err, tc.want, out)
		}
	}
}
