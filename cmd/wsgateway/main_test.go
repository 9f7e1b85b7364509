package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
)

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestNoKeyExitsWithStatus2(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := run(context.Background(), nil, envMap(nil), &out, &errOut)
	if code := exitCode(err, &errOut); code != 2 {
		t.Fatalf("exit code = %d (err %v), want 2", code, err)
	}
	msg := errOut.String()
	if strings.Count(strings.TrimSpace(msg), "\n") != 0 || !strings.Contains(msg, "LB_JWT_SECRET") {
		t.Fatalf("want a one-line message naming what to set, got %q", msg)
	}
}

func TestFlagsAndEnvTwins(t *testing.T) {
	t.Parallel()
	env := envMap(map[string]string{
		"LB_ADDR":               "127.0.0.1:9999",
		"LB_REDIS_URL":          "redis://127.0.0.1:1/0",
		"LB_JWT_SECRET":         strings.Repeat("k", 32),
		"LB_TOP_INTERVAL":       "250ms",
		"LB_RATE":               "7",
		"LB_PUBLIC_READ":        "true",
		"LB_NODE_ID":            "n1",
		"LB_REDIS_LANES":        "3",
		"LB_REDIS_SHARD_LINGER": "3ms",
	})
	o, err := parseServe([]string{"--rate", "9"}, env, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	if o.Addr != "127.0.0.1:9999" || o.RedisURL != "redis://127.0.0.1:1/0" || o.TopInterval != 250*time.Millisecond ||
		!o.PublicRead || o.NodeID != "n1" || o.MaxMessage != 4096 || o.RedisLanes != 3 ||
		o.RedisLinger != 3*time.Millisecond {
		t.Fatalf("env twins not applied: %+v", o)
	}
	if o.Rate != 9 {
		t.Fatalf("a flag must win over its env twin: rate = %d", o.Rate)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"bad env int", []string{"--dev"}, map[string]string{"LB_RATE": "fast"}},
		{"bad env duration", []string{"--dev"}, map[string]string{"LB_TOP_INTERVAL": "soon"}},
		{"two keys", []string{"--jwt-secret", strings.Repeat("k", 32), "--jwks-url", "http://x"}, nil},
		{"stray argument", []string{"--dev", "extra"}, nil},
		{"zero rate", []string{"--dev", "--rate", "0"}, nil},
		{"no lanes", []string{"--dev", "--redis-lanes", "0"}, nil},
		{"negative shard linger", []string{"--dev", "--redis-shard-linger", "-1ms"}, nil},
	} {
		if _, err := parseServe(tc.args, envMap(tc.env), new(bytes.Buffer)); err == nil {
			t.Errorf("%s: parseServe accepted %v", tc.name, tc.args)
		}
	}
}

func TestTokenCommand(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("s", 32)
	var out bytes.Buffer
	err := run(context.Background(), []string{"token", "--sub", "alice", "--role", "server", "--boards", "a,b", "--name", "Alice", "--ttl", "2h"},
		envMap(map[string]string{"LB_JWT_SECRET": secret}), &out, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.New(context.Background(), auth.Config{Secret: []byte(secret)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Verify(context.Background(), strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("minted token does not verify: %v", err)
	}
	if p.Member != "alice" || p.Role != auth.Server || p.Name != "Alice" || len(p.Boards) != 2 || p.Boards[1] != "b" {
		t.Fatalf("principal = %+v", p)
	}
	if ttl := time.Until(p.Expiry); ttl < time.Hour || ttl > 2*time.Hour+time.Minute {
		t.Fatalf("expiry %v is not about 2h away", p.Expiry)
	}
	for _, args := range [][]string{
		{"token", "--role", "player"},                  // no sub
		{"token", "--sub", "x", "--role", "superuser"}, // bad role
	} {
		err := run(context.Background(), args, envMap(map[string]string{"LB_JWT_SECRET": secret}), new(bytes.Buffer), new(bytes.Buffer))
		if exitCode(err, new(bytes.Buffer)) != 2 {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
}
