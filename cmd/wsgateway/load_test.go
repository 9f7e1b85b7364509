package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/loadgen"
)

// `wsgateway load --churn` churns every kind of connection and reports it
// in the summary, the JSON and the HTML; a bad --churn is a usage error.
func TestLoadCommandChurn(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	dir := t.TempDir()
	jsonOut, htmlOut := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"load", "--url", "ws://" + g.addr + "/ws", "--secret", testSecret, "--create",
		"--players", "1", "--spectators", "2", "--watchers", "1", "--members", "20", "--rate", "100",
		"--duration", "1s", "--churn", "100ms", "--quiet", "--json", jsonOut, "--html", htmlOut}, envMap(nil), &stdout, &stderr)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var rep loadgen.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	c := rep.Connections
	if rep.ChurnSeconds != 0.1 || c.Churned < 4 || c.Redialed == 0 || c.DialFailed != 0 || rep.Events.Failed != 0 {
		t.Errorf("churn %v, connections %+v, events %+v", rep.ChurnSeconds, c, rep.Events)
	}
	if !strings.Contains(stdout.String(), "churn     lifetime 100ms") {
		t.Errorf("summary lacks the churn line:\n%s", stdout.String())
	}
	if h, err := os.ReadFile(htmlOut); err != nil || !bytes.Contains(h, []byte("<th>churned</th>")) {
		t.Errorf("HTML report: %v, no churned column", err)
	}

	for _, bad := range []string{"-1s", "1ms", "soon"} {
		err := run(t.Context(), []string{"load", "--secret", testSecret, "--churn", bad}, envMap(nil), new(bytes.Buffer), new(bytes.Buffer))
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("--churn %s: %v; want a usage error", bad, err)
		}
	}
}
