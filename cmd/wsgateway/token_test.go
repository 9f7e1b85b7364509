package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestTokenNamesTheSecret: without a key, or with a short one, the token
// command says where the key comes from (--secret or LB_JWT_SECRET), with
// the usage exit code.
func TestTokenNamesTheSecret(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"none", []string{"token", "--sub", "a"}, nil, "no key"},
		{"empty env", []string{"token", "--sub", "a"}, map[string]string{"LB_JWT_SECRET": ""}, "no key"},
		{"short flag", []string{"token", "--sub", "a", "--secret", "short"}, nil, "5 bytes, need at least 32"},
		{"short env", []string{"token", "--sub", "a"}, map[string]string{"LB_JWT_SECRET": "short"}, "5 bytes, need at least 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tc.args, envMap(tc.env), &out, new(bytes.Buffer))
			if exitCode(err, new(bytes.Buffer)) != 2 {
				t.Fatalf("err = %v, want a usage error", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "--secret") || !strings.Contains(msg, "LB_JWT_SECRET") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q does not name --secret and LB_JWT_SECRET with %q", msg, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("printed %q", out.String())
			}
			if strings.Contains(msg, "short") && tc.want != "no key" {
				t.Errorf("error %q prints the key", msg)
			}
		})
	}
}
