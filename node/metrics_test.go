package node_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/node"
)

// scrape returns the node's /metrics text.
func (r *running) scrape(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(r.http + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestMetrics: the per-board and per-node series the dashboard and the
// alerts read, taken in the node whichever path an event came by, with the
// board label bounded.
func TestMetrics(t *testing.T) {
	t.Parallel()
	r := start(t, node.Config{Dev: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	bot, err := client.Dial(ctx, r.ws, token(t, "bot", auth.Server), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bot.Close()
	score := func(id, board string, delta int64) error {
		_, err := bot.Score(ctx, client.ScoreReq{ID: id, Board: board, Member: "m", Delta: client.Int(delta)})
		return err
	}
	for i := range 3 {
		if err := score(fmt.Sprint("a", i), "met", 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := score("a0", "met", 1); err != nil { // a duplicate
		t.Fatal(err)
	}
	// A value on an incr board: refused by the store's check.
	if _, err := bot.Score(ctx, client.ScoreReq{ID: "v", Board: "met", Member: "m", Value: client.Int(5)}); err == nil {
		t.Fatal("a value on an incr board was accepted")
	}
	adm := token(t, "root", auth.Admin)
	if st, body := r.rest(t, "POST", "/api/v1/boards/met/scores", adm, `[{"id":"r1","member":"m","delta":1}]`); st != 200 {
		t.Fatalf("POST: %d %s", st, body)
	}
	sub := subscribe(t, r, "met", 5)
	waitTop(t, sub, "m at 4", func(_ int64, s []int64) bool { return len(s) == 1 && s[0] == 4 })
	// 70 more boards: past 64 board labels, the rest count as "other".
	for i := range 70 {
		if err := score("x", fmt.Sprintf("many%02d", i), 1); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 5*time.Second, "the series", func() error {
		m := r.scrape(t)
		for _, want := range []string{
			`wsgateway_board_events_total{board="met",outcome="applied"} 4`,
			`wsgateway_board_events_total{board="met",outcome="duplicate"} 1`,
			`wsgateway_board_events_total{board="met",outcome="bad_request"} 1`,
			`wsgateway_board_ack_seconds_count{board="met"} 6`,
			`wsgateway_board_subscribers{board="met"} 1`,
			`wsgateway_store_errors_total{code="bad_request",op="apply"} 1`,
			`wsgateway_connections_by_role{role="server"} 1`,
			`wsgateway_connections_by_role{role="spectator"} 1`,
			`wsgateway_profile_cache_lookups_total{result="miss"}`,
			`wsgateway_board_events_total{board="other",outcome="applied"}`,
		} {
			if !strings.Contains(m, want) {
				return fmt.Errorf("no %s in\n%s", want, grep(m, "wsgateway_board_events_total"))
			}
		}
		if !strings.Contains(m, `wsgateway_board_frames_total{board="met"}`) {
			return fmt.Errorf("no frames series for met")
		}
		if n := strings.Count(m, "wsgateway_board_events_total{board="); n > 64+1+2 {
			return fmt.Errorf("%d board event series: the label is not bounded", n)
		}
		return nil
	})
}

// grep is the lines of text that contain s, for failure messages.
func grep(text, s string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, s) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return strings.Join(out, "\n")
}

// TestRedisLaneMetrics: on the Redis engine the lane's totals are series
// (pipelines, events sent, busy seconds), so an operator sees how full
// the pipelines run and how much of its time the lane is out; the memory
// engine has no lane and exports none.
func TestRedisLaneMetrics(t *testing.T) {
	t.Parallel()
	nodes, _ := cluster(t, 0, []string{"n1"}, nil)
	r := nodes[0]
	adm := token(t, "root", auth.Admin)
	r.mustREST(t, "PUT", "/api/v1/boards/lane", adm, `{}`, 200)
	var evs []string
	for i := range 40 {
		evs = append(evs, fmt.Sprintf(`{"id":"s%d","member":"p%d","delta":1}`, i, i))
	}
	r.mustREST(t, "POST", "/api/v1/boards/lane/scores", adm, "["+strings.Join(evs, ",")+"]", 200)
	m := r.scrape(t)
	pipelines, events, busy := metricValue(t, m, "wsgateway_redis_pipelines_total"),
		metricValue(t, m, "wsgateway_redis_pipeline_events_total"), metricValue(t, m, "wsgateway_redis_lane_busy_seconds_total")
	if events != 40 || pipelines < 1 || pipelines > 40 || busy <= 0 {
		t.Fatalf("pipelines %v, events %v, busy %vs; want the 40 events in 1..40 pipelines and some busy time", pipelines, events, busy)
	}

	mem := start(t, node.Config{Dev: true})
	if got := mem.scrape(t); strings.Contains(got, "wsgateway_redis_") {
		t.Fatalf("the memory engine exports Redis lane series:\n%s", grep(got, "wsgateway_redis_"))
	}
}

// metricValue is the value of the unlabelled series name in a scrape.
func metricValue(t *testing.T, scrape, name string) float64 {
	t.Helper()
	for line := range strings.Lines(scrape) {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return v
		}
	}
	t.Fatalf("no series %s in the scrape", name)
	return 0
}
