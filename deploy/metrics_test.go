package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"gopkg.in/yaml.v3"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// metricRe finds the metric names a PromQL expression reads: ours, the Go
// and process collectors', and Prometheus's own `up`.
var metricRe = regexp.MustCompile(`\b(up|(?:wsgateway|process|go)_[a-z0-9_]+)\b`)

// labelRe finds `label="value"` matchers whose value must exist too.
var labelRe = regexp.MustCompile(`\b(route|check|type)="([^"]+)"`)

// queries returns every PromQL expression of the Grafana dashboards and the
// alert rules, keyed by where it comes from.
func queries(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	dashboards, _ := filepath.Glob(filepath.Join(root, "deploy", "grafana", "dashboards", "*.json"))
	if len(dashboards) == 0 {
		t.Fatal("no dashboards under deploy/grafana/dashboards")
	}
	for _, f := range dashboards {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels []struct {
				Title      string `json:"title"`
				Datasource struct {
					UID string `json:"uid"`
				} `json:"datasource"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, p := range d.Panels {
			if p.Datasource.UID != "prometheus" {
				t.Errorf("%s: panel %q uses data source %q, not the provisioned one (uid prometheus)", f, p.Title, p.Datasource.UID)
			}
			for i, tg := range p.Targets {
				out[filepath.Base(f)+": "+p.Title+" #"+strconv.Itoa(i)] = tg.Expr
			}
		}
	}
	rules, _ := filepath.Glob(filepath.Join(root, "deploy", "prometheus", "rules", "*.yml"))
	for _, f := range rules {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Groups []struct {
				Rules []struct {
					Alert string `yaml:"alert"`
					Expr  string `yaml:"expr"`
				} `yaml:"rules"`
			} `yaml:"groups"`
		}
		if err := yaml.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range r.Groups {
			for _, rule := range g.Rules {
				out[filepath.Base(f)+": "+rule.Alert] = rule.Expr
			}
		}
	}
	return out
}

// TestDashboardAndRulesUseLiveMetrics runs a gateway, puts a short load
// (WebSocket and REST) through it, and checks that every metric name and
// label value the Grafana dashboard and the alert rules query appears on
// its /metrics.
func TestDashboardAndRulesUseLiveMetrics(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	root := repoRoot(t)
	qs := queries(t, root)
	dir := t.TempDir()
	bin, err := testenv.BuildGateway(dir)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	logs := new(testenv.LogBuffer)
	cmd := exec.Command(bin, "--dev", "--addr", addr, "--node-id", "metrics-test", "--top-interval", "20ms")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.Tail(40))
		}
	})
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testenv.Until(t, 15*time.Second, "the gateway ready", func() bool { code, _ := get("/readyz"); return code == 200 })

	// A short load over WebSocket (dev tokens), then one REST score request.
	load := exec.Command(bin, "load", "--url", "ws://"+addr+"/ws", "--dev-token", "--create", "--board", "m",
		"--players", "2", "--spectators", "2", "--watchers", "2", "--members", "20", "--rate", "200", "--duration", "1s", "--quiet")
	if out, err := load.CombinedOutput(); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tok := devToken(ctx, t, addr)
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/api/v1/boards/m/scores", strings.NewReader(`{"id":"rest-1","member":"r1","delta":3}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("REST score: %d %s", resp.StatusCode, b)
	}

	// A spectator watching the board while /metrics is read (per-board
	// subscribers and frames exist only for watched boards), and one score
	// the store refuses (a value on an incr board: store errors and error
	// replies by code).
	ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", &websocket.DialOptions{
		Subprotocols: []string{"lb.v1"}, HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	for _, msg := range []string{
		`{"type":"subscribe","id":"s","board":"m","top":5}`,
		`{"type":"score","id":"bad","board":"m","member":"r1","value":5}`,
	} {
		if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	for sawErr := false; !sawErr; {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sawErr = strings.Contains(string(b), `"id":"bad"`) && strings.Contains(string(b), `"type":"error"`)
	}

	code, metrics := get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	have := map[string]bool{"up": true} // Prometheus adds up to every target
	for _, line := range strings.Split(metrics, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		have[name] = true
	}
	used := 0
	for where, q := range qs {
		names := metricRe.FindAllString(q, -1)
		if len(names) == 0 {
			t.Errorf("%s: no metric found in %q", where, q)
		}
		for _, n := range names {
			used++
			if !have[n] {
				t.Errorf("%s: metric %s is not on a live gateway's /metrics", where, n)
			}
		}
		for _, m := range labelRe.FindAllStringSubmatch(q, -1) {
			if !strings.Contains(metrics, m[1]+`="`+m[2]+`"`) {
				t.Errorf("%s: label %s=%q is not on /metrics", where, m[1], m[2])
			}
		}
	}
	t.Logf("%d queries, %d metric references checked against %d live series names", len(qs), used, len(have))
}

func devToken(ctx context.Context, t *testing.T, addr string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/api/v1/dev/token", bytes.NewReader([]byte(`{"sub":"ops","role":"server"}`)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Token == "" {
		t.Fatalf("dev token: %v", err)
	}
	return out.Token
}
