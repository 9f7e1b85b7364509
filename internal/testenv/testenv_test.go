package testenv

import (
	"net"
	"strings"
	"testing"
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
