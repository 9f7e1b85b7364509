package testenv

import (
	"fmt"
	"net"
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
