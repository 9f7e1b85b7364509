package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// duplicateKey returns the first key that appears twice at the top level
// of the JSON object line, or "" when each appears once. A decoder keeps
// the last of two equal keys silently, so this walks the tokens.
func duplicateKey(line string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", fmt.Errorf("not a JSON object: %q", line)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		key := tok.(string)
		if seen[key] {
			return key, nil
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", err
		}
	}
	return "", nil
}

// TestLogKeysUnique: every JSON log line names each key once, the node
// included, also the lines of components that add their own attributes
// (the bus warns at once about an unreachable --nats-url). Log pipelines
// keep one of two equal keys, or refuse the line.
func TestLogKeysUnique(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "--node-id", "keys-1", "--nats-url", "nats://127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)))
	testenv.Until(t, 5*time.Second, "a log line from the bus", func() bool {
		return strings.Contains(g.stderr.String(), `"component":"bus"`)
	})
	httpDo(t, "GET", "http://"+g.addr+"/api/v1/boards", "", "") // a 401, logged by the API
	g.stop()
	for _, line := range strings.Split(strings.TrimSpace(g.stderr.String()), "\n") {
		key, err := duplicateKey(line)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			t.Errorf("key %q twice in %s", key, line)
		}
		if !strings.Contains(line, `"node":"keys-1"`) {
			t.Errorf("no node in %s", line)
		}
	}
}
