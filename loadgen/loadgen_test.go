package loadgen_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/gwtest"
	"github.com/wsgateway/wsgateway/loadgen"
	"github.com/wsgateway/wsgateway/rank"
)

const secret = "loadgen-tests-secret-0123456789abcdef"

// startGateway starts an in-process gateway with 50ms frames, without
// --dev's auto-creation (so Config.Create is exercised).
func startGateway(t *testing.T) (wsURL string, store rank.Store, conns func() int) {
	t.Helper()
	g, stop, err := gwtest.Start(gwtest.Options{Secret: []byte(secret), Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return g.URL, g.Store, g.Hub.Conns
}

// boardSum is the sum of every score on board, and its member count.
func boardSum(t *testing.T, store rank.Store, board string) (sum, members int64) {
	t.Helper()
	pg, err := store.Top(t.Context(), board, rank.PeriodSel(""), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range pg.Entries {
		sum += e.Score
	}
	return sum, pg.Total
}

// waitConns polls until the gateway holds no connection (each was closed).
func waitConns(t *testing.T, conns func() int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for conns() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway still holds %d connections after the run", conns())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A short run whose counts must add up: every event sent is acknowledged
// or failed, the board holds exactly the acknowledged deltas, receivers got
// frames, and both reports are written.
func TestRunCountsAddUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		rate int
	}{{"as fast as acks", 0}, {"fixed rate", 400}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, store, conns := startGateway(t)
			g, err := loadgen.New(loadgen.Config{
				URL: url, Secret: []byte(secret), Board: "lg", Create: true,
				Players: 3, Spectators: 4, Watchers: 3, Members: 40, Around: 2,
				Rate: tc.rate, Inflight: 4, Duration: 1500 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := g.Run(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			ev := rep.Events
			if ev.Acked == 0 || ev.Sent != ev.Acked+ev.Failed || ev.Failed != 0 || ev.Duplicates != 0 {
				t.Errorf("events %+v: want sent = acked > 0, nothing failed", ev)
			}
			if rep.AckLatency.Count != ev.Acked || rep.AckLatency.P50 > rep.AckLatency.P99 || rep.AckLatency.P99 > rep.AckLatency.Max {
				t.Errorf("ack latency %+v for %d acks", rep.AckLatency, ev.Acked)
			}
			if tc.rate > 0 {
				// The limiter bounds the rate from above (burst 1%).
				if limit := float64(tc.rate)*rep.SendSeconds*1.05 + 10; float64(ev.Sent) > limit {
					t.Errorf("sent %d events in %.1fs at rate %d", ev.Sent, rep.SendSeconds, tc.rate)
				}
			}
			// Ledger: the board's scores sum to the acknowledged deltas.
			if sum, n := boardSum(t, store, "lg"); sum != ev.DeltaSum || n > 40 {
				t.Errorf("board sums to %d over %d members; acked deltas sum to %d", sum, n, ev.DeltaSum)
			}
			want := loadgen.Connections{Players: 3, Receivers: 7} // no churn, nothing lost
			if rep.Connections != want || rep.ChurnSeconds != 0 {
				t.Errorf("connections %+v churn %v; want %+v", rep.Connections, rep.ChurnSeconds, want)
			}
			waitConns(t, conns)
			if rep.Frames["top"].Count < 4 || rep.Frames["view"].Count == 0 || rep.Freshness.Count == 0 {
				t.Errorf("frames %+v, freshness %+v", rep.Frames, rep.Freshness)
			}

			var js bytes.Buffer
			if err := rep.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			var back loadgen.Report
			if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Events != ev {
				t.Errorf("JSON round trip: %v, %+v", err, back.Events)
			}
			var page bytes.Buffer
			if err := rep.WriteHTML(&page); err != nil {
				t.Fatal(err)
			}
			html := page.String()
			for _, want := range []string{"<svg", "<polyline", "ack latency p99", "<td>top</td>"} {
				if !strings.Contains(html, want) {
					t.Errorf("HTML report lacks %q", want)
				}
			}
			for _, banned := range []string{"<script", "http://cdn", "https://"} {
				if strings.Contains(html, banned) {
					t.Errorf("HTML report contains %q", banned)
				}
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []loadgen.Config{
		{URL: "http://x/ws", Secret: []byte(secret), Players: 1},
		{URL: "ws://x/ws", Secret: []byte("short"), Players: 1},
		{URL: "ws://x/ws", Secret: []byte(secret)},
		{URL: "ws://x/ws", Secret: []byte(secret), Players: -1, Spectators: 2},
		{URL: "ws://x/ws", Secret: []byte(secret), Players: 1, Churn: -time.Second},
		{URL: "ws://x/ws", Secret: []byte(secret), Players: 1, Churn: time.Millisecond},
	} {
		if _, err := loadgen.New(cfg); err == nil || !strings.HasPrefix(err.Error(), "loadgen: ") {
			t.Errorf("New(%+v) = %v; want a loadgen: error", cfg, err)
		}
	}
}

// A missing board without Create fails the run before any connection
// opens, saying what to do: a run that measures nothing must not look like
// one that passed.
func TestMissingBoardFailsFirst(t *testing.T) {
	t.Parallel()
	url, _, conns := startGateway(t)
	g, err := loadgen.New(loadgen.Config{URL: url, Secret: []byte(secret), Board: "nope", Players: 1, Spectators: 1, Inflight: 2, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Run(t.Context())
	if !errors.Is(err, loadgen.ErrNoBoard) || !strings.Contains(err.Error(), "--create") {
		t.Fatalf("Run on a missing board = %v; want ErrNoBoard naming --create", err)
	}
	if n := conns(); n != 0 {
		t.Errorf("%d connections opened for a run that cannot measure anything", n)
	}
}

// Events the gateway refuses are not a crash: every event fails with its
// code, and the counts still add up (a delta on a best-mode board is a
// bad_request).
func TestErrorsAreCountedByCode(t *testing.T) {
	t.Parallel()
	url, store, _ := startGateway(t)
	b, err := rank.ParseBoard("best", []byte(`{"mode":"best"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutBoard(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	g, err := loadgen.New(loadgen.Config{URL: url, Secret: []byte(secret), Board: "best", Players: 1, Inflight: 2, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := g.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Events.Acked != 0 || rep.Events.Failed == 0 || rep.Errors["bad_request"] != rep.Events.Failed || rep.Events.Sent != rep.Events.Failed {
		t.Errorf("events %+v errors %v", rep.Events, rep.Errors)
	}
}

// With Churn every kind of connection closes and redials many times during
// the run; nothing is lost on the way: every event is answered, the board
// holds exactly the acknowledged deltas, receivers get frames, and every
// connection is closed at the end.
func TestChurn(t *testing.T) {
	t.Parallel()
	url, store, conns := startGateway(t)
	const slots = 2 + 3 + 2
	g, err := loadgen.New(loadgen.Config{
		URL: url, Secret: []byte(secret), Board: "churn", Create: true,
		Players: 2, Spectators: 3, Watchers: 2, Members: 30, Around: 2,
		Rate: 300, Inflight: 2, Duration: 2 * time.Second, Churn: 150 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := g.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c, ev := rep.Connections, rep.Events
	t.Logf("%+v %+v", c, ev)
	// A lifetime is at most 225ms: over 2s each slot churns about 8 times
	// on an idle machine. A loaded one may start slots late, so only one
	// churn per slot on average is required: a generator that does not
	// churn gives 0.
	if c.Churned < slots || c.Redialed > c.Churned || c.Redialed < c.Churned-slots {
		t.Errorf("churned %d, redialed %d over %d connections in %.1fs", c.Churned, c.Redialed, slots, rep.SendSeconds)
	}
	if c.Players != 2 || c.Receivers != 5 || c.DialFailed != 0 || c.Dropped != 0 || c.Reconnects != 0 {
		t.Errorf("connections %+v: want no failure, no drop, no reconnect", c)
	}
	if ev.Acked == 0 || ev.Sent != ev.Acked || ev.Failed != 0 || len(rep.Errors) != 0 {
		t.Errorf("events %+v errors %v: want every event acknowledged", ev, rep.Errors)
	}
	if sum, _ := boardSum(t, store, "churn"); sum != ev.DeltaSum {
		t.Errorf("board sums to %d; acked deltas sum to %d", sum, ev.DeltaSum)
	}
	if rep.Frames["top"].Count == 0 || rep.Frames["view"].Count == 0 {
		t.Errorf("frames %+v", rep.Frames)
	}
	if rep.ChurnSeconds != 0.15 || !strings.Contains(rep.Summary(), "churned "+strconv.FormatInt(c.Churned, 10)) {
		t.Errorf("churn %v; summary:\n%s", rep.ChurnSeconds, rep.Summary())
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back loadgen.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Connections != c || back.ChurnSeconds != 0.15 {
		t.Errorf("JSON round trip: %v, %+v", err, back.Connections)
	}
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if want := "<td>" + strconv.FormatInt(c.Churned, 10) + "</td>"; !strings.Contains(page.String(), "<th>churned</th>") || !strings.Contains(page.String(), want) {
		t.Errorf("HTML report lacks the churned column (%s)", want)
	}
	waitConns(t, conns)
}
