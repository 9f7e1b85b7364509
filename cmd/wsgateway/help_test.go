package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestSecretsNeverPrinted: --help, the subcommands' --help and a mistyped
// flag print every flag's default; secrets taken from the environment (the
// JWT key, passwords inside the Redis and NATS URLs) must not be among them.
func TestSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	const (
		jwt      = "jwt-secret-value-0123456789abcdefXYZ"
		redisPwd = "redis-password-hunter2"
		natsPwd  = "nats-password-swordfish"
	)
	env := envMap(map[string]string{
		"LB_JWT_SECRET": jwt,
		"LB_REDIS_URL":  "redis://:" + redisPwd + "@127.0.0.1:1/0",
		"LB_NATS_URL":   "nats://u:" + natsPwd + "@127.0.0.1:1",
	})
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"serve", "--help"}, {"token", "--help"}, {"load", "--help"},
		{"--no-such-flag"}, {"token", "--no-such-flag"}, {"load", "--no-such-flag"},
		{"--rate", "many"}, {"load", "--players", "x"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, env, &out, &errOut)
		exitCode(err, &errOut)
		all := out.String() + errOut.String()
		if err != nil {
			all += err.Error()
		}
		if !strings.Contains(all, "LB_JWT_SECRET") {
			t.Errorf("%v: output does not list the flags:\n%s", args, all)
		}
		for _, secret := range []string{jwt, redisPwd, natsPwd} {
			if strings.Contains(all, secret) {
				t.Errorf("%v: output shows a secret (%.6s…):\n%s", args, secret, all)
			}
		}
	}
}

// TestSecretsFromEnvStillApply: a secret's environment twin is applied after
// parsing, and the command line still wins over it.
func TestSecretsFromEnvStillApply(t *testing.T) {
	t.Parallel()
	env := envMap(map[string]string{"LB_JWT_SECRET": strings.Repeat("e", 32), "LB_REDIS_URL": "redis://127.0.0.1:1/0"})
	o, err := parseServe(nil, env, new(bytes.Buffer))
	if err != nil || o.JWTSecret != strings.Repeat("e", 32) || o.RedisURL != "redis://127.0.0.1:1/0" {
		t.Fatalf("env secrets not applied: %v %q %q", err, o.JWTSecret, o.RedisURL)
	}
	o, err = parseServe([]string{"--jwt-secret", strings.Repeat("f", 32)}, env, new(bytes.Buffer))
	if err != nil || o.JWTSecret != strings.Repeat("f", 32) {
		t.Fatalf("the flag must win over LB_JWT_SECRET: %v %q", err, o.JWTSecret)
	}
}

// TestHelpListsSubcommands: `wsgateway --help` names every subcommand.
func TestHelpListsSubcommands(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"--help"}, envMap(nil), &out, &errOut)
	if code := exitCode(err, new(bytes.Buffer)); code != 0 {
		t.Fatalf("--help exit %d (%v)", code, err)
	}
	help := out.String() + errOut.String()
	for _, sub := range []string{"[serve]", "token", "load", "version", "healthcheck"} {
		if !strings.Contains(help, "wsgateway "+sub) {
			t.Errorf("--help does not list %q:\n%s", sub, help)
		}
	}
}
