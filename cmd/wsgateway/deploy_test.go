package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestExampleKeyRefused: a gateway whose environment is the reference
// deployment's example file, copied without setting a key, exits with
// status 2 and says what to do; the same file with its own key starts.
func TestExampleKeyRefused(t *testing.T) {
	t.Parallel()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "deploy", "gateway.env.example"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			env[k] = v
		}
	}
	if env["LB_JWT_SECRET"] == "" {
		t.Fatal("deploy/gateway.env.example sets no LB_JWT_SECRET")
	}
	env["LB_ADDR"] = "127.0.0.1:0"

	// Cancelled: were the key accepted, the gateway would stop at once
	// instead of serving until the test times out.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	err = run(ctx, nil, envMap(env), &out, &errOut)
	if code := exitCode(err, &errOut); code != 2 {
		t.Fatalf("exit status %d (%v) with the example key; want 2", code, err)
	}
	for _, want := range []string{"example key", "deploy/gateway.env", "LB_JWT_SECRET"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("the message lacks %q: %s", want, errOut.String())
		}
	}

	env["LB_JWT_SECRET"] = strings.Repeat("k", 32)
	if _, err := parseServe(nil, envMap(env), new(bytes.Buffer)); err != nil {
		t.Errorf("the example file with its own key: %v", err)
	}
}
