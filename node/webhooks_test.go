package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/node"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/redisstore"
	"github.com/wsgateway/wsgateway/webhook"
)

const hookSecret = "node-test-secret-0123"

// hookReceiver answers with the next of codes (then 200) and keeps each
// request.
type hookReceiver struct {
	mu    sync.Mutex
	codes []int
	got   []http.Header
	body  [][]byte
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.got, h.body = append(h.got, r.Header.Clone()), append(h.body, b)
	code := 200
	if len(h.codes) > 0 {
		code, h.codes = h.codes[0], h.codes[1:]
	}
	h.mu.Unlock()
	w.WriteHeader(code)
}

func (h *hookReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.got)
}

func fastHooks(c *node.Config) {
	c.Webhooks = node.WebhooksConfig{AllowPrivate: true, Watch: 20 * time.Millisecond,
		Deliver: webhook.Config{Poll: 20 * time.Millisecond}}
}

// TestBoardFinalWebhook: a board that ends is told to a webhook once,
// with its standings (the configured count) and rewards; the receiver's
// two 500s are retried on R28's schedule of the store clock, with one
// delivery id and a valid signature each time, and the log says 3 attempts.
func TestBoardFinalWebhook(t *testing.T) {
	t.Parallel()
	clk := &skewed{t: time.Now().Add(-3 * time.Hour).Truncate(time.Second)}
	cfg := node.Config{Now: clk.now}
	fastHooks(&cfg)
	r := start(t, cfg)
	rcv := &hookReceiver{codes: []int{500, 500}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	adm := token(t, "root", auth.Admin)
	t0 := clk.now()
	body := fmt.Sprintf(`{"ends_at":%q,"standings":2,"rewards":[{"from":1,"to":1,"reward":"gold"},{"from":2,"to":3,"reward":"silver"}]}`,
		t0.Add(time.Minute).UTC().Format(time.RFC3339))
	if st, b := r.rest(t, "PUT", "/api/v1/boards/cup", adm, body); st != 200 {
		t.Fatalf("PUT board: %d %s", st, b)
	}
	if st, b := r.rest(t, "PUT", "/api/v1/webhooks/w", adm, fmt.Sprintf(`{"url":%q,"secret":%q,"events":["board.final"]}`, srv.URL, hookSecret)); st != 200 {
		t.Fatalf("PUT webhook: %d %s", st, b)
	}
	scores := `[{"id":"1","member":"alice","delta":30},{"id":"2","member":"bob","delta":20},{"id":"3","member":"carol","delta":10}]`
	if st, b := r.rest(t, "POST", "/api/v1/boards/cup/scores", token(t, "game", auth.Server), scores); st != 200 {
		t.Fatalf("scores: %d %s", st, b)
	}
	// The clock moves only once an attempt is recorded: the receiver
	// hears a request before the node records its outcome, and the next
	// attempt is due counted from when it is recorded.
	recorded := func(n int) {
		t.Helper()
		testenv.Until(t, 5*time.Second, fmt.Sprintf("attempt %d recorded", n), func() bool {
			_, b := r.rest(t, "GET", "/api/v1/webhooks/w/deliveries", adm, "")
			return strings.Contains(b, fmt.Sprintf(`"attempts":%d,`, n))
		})
	}
	clk.set(t0.Add(time.Minute))
	recorded(1)
	clk.set(t0.Add(time.Minute + 5*time.Second))
	recorded(2)
	clk.set(t0.Add(time.Minute + 15*time.Second))
	testenv.Until(t, 5*time.Second, "the third attempt", func() bool { return rcv.count() >= 3 })
	clk.set(t0.Add(2 * time.Hour))
	var log struct {
		Deliveries []struct {
			ID, Status string
			Attempts   int
		} `json:"deliveries"`
	}
	testenv.Until(t, 5*time.Second, "the log to say delivered", func() bool {
		_, b := r.rest(t, "GET", "/api/v1/webhooks/w/deliveries", adm, "")
		return json.Unmarshal([]byte(b), &log) == nil && len(log.Deliveries) == 1 && log.Deliveries[0].Status == "delivered"
	})
	if log.Deliveries[0].Attempts != 3 || rcv.count() != 3 {
		t.Fatalf("log %+v, receiver %d requests; want 3 attempts", log, rcv.count())
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for i, h := range rcv.got {
		if h.Get("X-LB-Delivery") != log.Deliveries[0].ID || h.Get("X-LB-Event") != "board.final" {
			t.Fatalf("attempt %d: headers %v", i+1, h)
		}
		if !webhook.Verify(hookSecret, h.Get("X-LB-Timestamp"), rcv.body[i], h.Get("X-LB-Signature")) {
			t.Fatalf("attempt %d: bad signature", i+1)
		}
	}
	var p struct {
		Board string
		Data  struct {
			Period    *int64
			Standings []struct {
				Rank   int64
				Member string
				Score  int64
			}
			Total   int64
			Rewards []struct{ Member, Reward string }
		}
	}
	if err := json.Unmarshal(rcv.body[0], &p); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s %v %+v %d %+v", p.Board, p.Data.Period, p.Data.Standings, p.Data.Total, p.Data.Rewards)
	want := "cup <nil> [{Rank:1 Member:alice Score:30} {Rank:2 Member:bob Score:20}] 3 [{Member:alice Reward:gold} {Member:bob Reward:silver} {Member:carol Reward:silver}]"
	if got != want {
		t.Fatalf("data:\n got %s\nwant %s", got, want)
	}
}

// TestWebhookOnceOverNodes: two nodes on one Redis both notice the same
// period end; the outbox gets it once and the receiver hears it once.
func TestWebhookOnceOverNodes(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	clk := &skewed{t: time.Date(2031, 1, 1, 0, 0, 50, 0, time.UTC)}
	nodes, _ := cluster(t, 0, []string{"a", "b"}, func(c *node.Config) {
		c.Now = clk.now
		fastHooks(c)
	})
	rcv := &hookReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	adm := token(t, "root", auth.Admin)
	if st, b := nodes[0].rest(t, "PUT", "/api/v1/boards/minute", adm, `{"reset":"1m"}`); st != 200 {
		t.Fatalf("PUT board: %d %s", st, b)
	}
	if st, b := nodes[1].rest(t, "PUT", "/api/v1/webhooks/w", adm, fmt.Sprintf(`{"url":%q,"secret":%q,"events":["period.final"]}`, srv.URL, hookSecret)); st != 200 {
		t.Fatalf("PUT webhook: %d %s", st, b)
	}
	if st, b := nodes[0].rest(t, "POST", "/api/v1/boards/minute/scores", token(t, "game", auth.Server), `[{"id":"1","member":"ann","delta":5}]`); st != 200 {
		t.Fatalf("scores: %d %s", st, b)
	}
	clk.set(time.Date(2031, 1, 1, 0, 1, 0, 0, time.UTC))
	testenv.Until(t, 5*time.Second, "the period.final delivery", func() bool { return rcv.count() >= 1 })
	// Both nodes keep watching for a while; nothing more may come.
	for range 10 {
		_, b := nodes[0].rest(t, "GET", "/api/v1/webhooks/w/deliveries", adm, "")
		if n := strings.Count(b, `"event":"period.final"`); n != 1 {
			t.Fatalf("deliveries %s: want exactly one", b)
		}
		time.Sleep(50 * time.Millisecond) // ticks of both watchers pass
	}
	if rcv.count() != 1 {
		t.Fatalf("receiver got %d requests, want 1", rcv.count())
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if !strings.Contains(string(rcv.body[0]), `"period":`) || !strings.Contains(string(rcv.body[0]), `"member":"ann"`) {
		t.Fatalf("body %s", rcv.body[0])
	}
}

// TestSlowReceiverNeverDelaysScores: while a receiver holds every
// delivery open, score events are still applied and answered: delivery
// runs beside the score path, never in it.
func TestSlowReceiverNeverDelaysScores(t *testing.T) {
	t.Parallel()
	clk := &skewed{t: time.Now().Add(-time.Hour).Truncate(time.Second)}
	cfg := node.Config{Now: clk.now}
	fastHooks(&cfg)
	r := start(t, cfg)
	entered, release := make(chan struct{}, 16), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-req.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	adm, game := token(t, "root", auth.Admin), token(t, "game", auth.Server)
	t0 := clk.now()
	if st, b := r.rest(t, "PUT", "/api/v1/boards/cup", adm, fmt.Sprintf(`{"ends_at":%q}`, t0.Add(time.Minute).UTC().Format(time.RFC3339))); st != 200 {
		t.Fatalf("PUT board: %d %s", st, b)
	}
	if st, b := r.rest(t, "PUT", "/api/v1/webhooks/slow", adm, fmt.Sprintf(`{"url":%q,"secret":%q,"events":["board.final","board.state"]}`, srv.URL, hookSecret)); st != 200 {
		t.Fatalf("PUT webhook: %d %s", st, b)
	}
	if st, b := r.rest(t, "PUT", "/api/v1/boards/other", adm, `{}`); st != 200 {
		t.Fatalf("PUT board: %d %s", st, b)
	}
	clk.set(t0.Add(time.Minute))
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery reached the receiver")
	}
	for i := range 50 {
		body := fmt.Sprintf(`[{"id":"%d","member":"m%d","delta":1}]`, i, i)
		st, b := r.rest(t, "POST", "/api/v1/boards/other/scores", game, body)
		if st != 200 || !strings.Contains(b, `"rank":`) {
			t.Fatalf("score %d while the receiver holds a delivery: %d %s", i, st, b)
		}
	}
	var log struct {
		Deliveries []struct{ Status string } `json:"deliveries"`
	}
	_, b := r.rest(t, "GET", "/api/v1/webhooks/slow/deliveries", adm, "")
	if err := json.Unmarshal([]byte(b), &log); err != nil || len(log.Deliveries) == 0 || log.Deliveries[len(log.Deliveries)-1].Status != "pending" {
		t.Fatalf("deliveries %s: want the held one still pending", b)
	}
}

// TestThousandBoardsFinal: a thousand boards that end in the same second
// are each told once, on both engines.
func TestThousandBoardsFinal(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"memory", "redis"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			clk := &skewed{t: time.Now().Add(-time.Hour).Truncate(time.Second)}
			t0 := clk.now()
			cfg := node.Config{Now: clk.now}
			fastHooks(&cfg)
			for i := range 1000 {
				b := rank.DefaultBoard(fmt.Sprintf("b%04d", i))
				b.EndsAt = rank.At(t0.Add(time.Minute))
				cfg.Boards = append(cfg.Boards, b)
			}
			if engine == "redis" {
				rd := testenv.StartRedis(t)
				rc, err := redisstore.NewClient(rd.URL())
				if err != nil {
					t.Fatal(err)
				}
				cfg.Redis = rc
			}
			r := start(t, cfg)
			var mu sync.Mutex
			byBoard, ids := map[string]int{}, map[string]bool{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				var p struct{ ID, Board string }
				_ = json.NewDecoder(req.Body).Decode(&p)
				mu.Lock()
				byBoard[p.Board]++
				ids[p.ID] = true
				mu.Unlock()
			}))
			defer srv.Close()
			adm := token(t, "root", auth.Admin)
			if st, b := r.rest(t, "PUT", "/api/v1/webhooks/all", adm, fmt.Sprintf(`{"url":%q,"secret":%q,"events":["board.final"]}`, srv.URL, hookSecret)); st != 200 {
				t.Fatalf("PUT webhook: %d %s", st, b)
			}
			clk.set(t0.Add(time.Minute))
			testenv.Until(t, 60*time.Second, "1000 board.final deliveries", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(byBoard) == 1000
			})
			mu.Lock()
			defer mu.Unlock()
			for b, n := range byBoard {
				if n != 1 {
					t.Fatalf("board %s told %d times", b, n)
				}
			}
			if len(ids) != 1000 {
				t.Fatalf("%d distinct delivery ids, want 1000", len(ids))
			}
		})
	}
}

// engineConfig is a node config on engine ("memory" or "redis", a Redis
// of its own) whose store clock is clk, with fast webhooks.
func engineConfig(t *testing.T, engine string, clk *skewed) node.Config {
	t.Helper()
	cfg := node.Config{Now: clk.now}
	fastHooks(&cfg)
	if engine == "redis" {
		rd := testenv.StartRedis(t)
		rc, err := redisstore.NewClient(rd.URL())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Redis = rc
	}
	return cfg
}

// cohortFinal is what a final event of a cohort board says, in a form a
// test compares as text: "<event> <board> period=<p> total=<n>" and one
// line per cohort with its standings and rewards.
func cohortFinal(t *testing.T, rcv *hookReceiver) string {
	t.Helper()
	testenv.Until(t, 5*time.Second, "the final event", func() bool { return rcv.count() >= 1 })
	rcv.mu.Lock()
	body, event := rcv.body[0], rcv.got[0].Get("X-LB-Event")
	rcv.mu.Unlock()
	var p struct {
		Board string
		Data  map[string]json.RawMessage
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"standings", "rewards"} {
		if _, ok := p.Data[k]; ok {
			t.Fatalf("a cohort board's final event has %q outside its cohorts: %s", k, body)
		}
	}
	var d struct {
		Period  *int64
		Total   int64
		Cohorts []struct {
			Cohort    string
			Standings []struct {
				Rank   int64
				Member string
				Score  int64
			}
			Rewards []struct{ Member, Reward string }
		}
	}
	raw, _ := json.Marshal(p.Data)
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	period := "none"
	if d.Period != nil {
		period = fmt.Sprint(*d.Period)
	}
	out := fmt.Sprintf("%s %s period=%s total=%d", event, p.Board, period, d.Total)
	for _, c := range d.Cohorts {
		out += fmt.Sprintf("\n%s %+v %+v", c.Cohort, c.Standings, c.Rewards)
	}
	return out
}

// TestCohortBoardFinalWebhook: a cohort board's board.final carries each
// cohort's standings (the configured count) and rewards by rank within
// the cohort, and the board's total, on both engines; a cohort whose only
// member was removed is left out.
func TestCohortBoardFinalWebhook(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"memory", "redis"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			clk := &skewed{t: time.Now().Add(-3 * time.Hour).Truncate(time.Second)}
			r := start(t, engineConfig(t, engine, clk))
			rcv := &hookReceiver{}
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			adm := token(t, "root", auth.Admin)
			t0 := clk.now()
			body := fmt.Sprintf(`{"ends_at":%q,"cohort":{"size":3},"standings":2,"rewards":[{"from":1,"to":1,"reward":"gold"},{"from":2,"to":3,"reward":"silver"}]}`,
				t0.Add(time.Minute).UTC().Format(time.RFC3339))
			if st, b := r.rest(t, "PUT", "/api/v1/boards/cup", adm, body); st != 200 {
				t.Fatalf("PUT board: %d %s", st, b)
			}
			if st, b := r.rest(t, "PUT", "/api/v1/webhooks/w", adm, fmt.Sprintf(`{"url":%q,"secret":%q,"events":["board.final"]}`, srv.URL, hookSecret)); st != 200 {
				t.Fatalf("PUT webhook: %d %s", st, b)
			}
			// Cohort 1 is a b c, cohort 2 d e f, cohort 3 g; globally e
			// leads and a is 4th.
			scores := `[{"id":"1","member":"a","delta":10},{"id":"2","member":"b","delta":30},{"id":"3","member":"c","delta":20},` +
				`{"id":"4","member":"d","delta":5},{"id":"5","member":"e","delta":50},{"id":"6","member":"f","delta":1},{"id":"7","member":"g","delta":9}]`
			if st, b := r.rest(t, "POST", "/api/v1/boards/cup/scores", token(t, "game", auth.Server), scores); st != 200 {
				t.Fatalf("scores: %d %s", st, b)
			}
			// g removed, cohort 3 has nobody to report.
			if st, b := r.rest(t, "DELETE", "/api/v1/boards/cup/members/g", adm, ""); st != 204 {
				t.Fatalf("remove g: %d %s", st, b)
			}
			clk.set(t0.Add(time.Minute))
			want := "board.final cup period=none total=6" +
				"\n1 [{Rank:1 Member:b Score:30} {Rank:2 Member:c Score:20}] [{Member:b Reward:gold} {Member:c Reward:silver} {Member:a Reward:silver}]" +
				"\n2 [{Rank:1 Member:e Score:50} {Rank:2 Member:d Score:5}] [{Member:e Reward:gold} {Member:d Reward:silver} {Member:f Reward:silver}]"
			if got := cohortFinal(t, rcv); got != want {
				t.Fatalf("data:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestLeaguePeriodFinalWebhook: a league period's period.final read after
// the next period was first played, so after its tier moves were made,
// still reports that period's cohorts as they were placed and ranked, not
// the next one's, on both engines. The webhook is created only then: the
// watcher reads nothing while no webhook exists, and a fact still news is
// told to a webhook created late.
func TestLeaguePeriodFinalWebhook(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"memory", "redis"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			t0 := time.Date(2031, 1, 1, 0, 0, 10, 0, time.UTC)
			clk := &skewed{t: t0}
			r := start(t, engineConfig(t, engine, clk))
			rcv := &hookReceiver{}
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			adm, game := token(t, "root", auth.Admin), token(t, "game", auth.Server)
			body := `{"reset":"1m","cohort":{"size":2},"league":{"tiers":["bronze","silver"],"promote":1,"demote":1},"rewards":[{"from":1,"to":1,"reward":"cup"}]}`
			if st, b := r.rest(t, "PUT", "/api/v1/boards/lg", adm, body); st != 200 {
				t.Fatalf("PUT board: %d %s", st, b)
			}
			// bronze-1 is n0 n1 (n1 wins), bronze-2 n2 n3 (n2 wins).
			scores := `[{"id":"1","member":"n0","delta":10},{"id":"2","member":"n1","delta":20},` +
				`{"id":"3","member":"n2","delta":30},{"id":"4","member":"n3","delta":5}]`
			if st, b := r.rest(t, "POST", "/api/v1/boards/lg/scores", game, scores); st != 200 {
				t.Fatalf("scores: %d %s", st, b)
			}
			clk.set(t0.Add(time.Minute))
			// The next period's first placement makes the moves (n1 is
			// placed in silver-1, n0 in bronze-1).
			if st, b := r.rest(t, "POST", "/api/v1/boards/lg/scores", game, `[{"id":"5","member":"n1","delta":1},{"id":"6","member":"n0","delta":1}]`); st != 200 {
				t.Fatalf("scores of the next period: %d %s", st, b)
			}
			if st, b := r.rest(t, "PUT", "/api/v1/webhooks/w", adm, fmt.Sprintf(`{"url":%q,"secret":%q,"events":["period.final"]}`, srv.URL, hookSecret)); st != 200 {
				t.Fatalf("PUT webhook: %d %s", st, b)
			}
			lg := rank.DefaultBoard("lg")
			lg.Reset = "1m"
			want := fmt.Sprintf("period.final lg period=%d total=4", rank.PeriodAt(lg, t0).Index) +
				"\nbronze-1 [{Rank:1 Member:n1 Score:20} {Rank:2 Member:n0 Score:10}] [{Member:n1 Reward:cup}]" +
				"\nbronze-2 [{Rank:1 Member:n2 Score:30} {Rank:2 Member:n3 Score:5}] [{Member:n2 Reward:cup}]"
			if got := cohortFinal(t, rcv); got != want {
				t.Fatalf("data:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestWebhookWatcherHearsBoards: with a Watch of an hour, the watcher
// hears at once (the node wakes it), not at its next look, of a webhook
// put through the API, which is told of a board opened a minute before,
// and then of a board put, told as well, while the store clock stands
// still.
func TestWebhookWatcherHearsBoards(t *testing.T) {
	t.Parallel()
	clk := &skewed{t: time.Date(2031, 1, 1, 12, 0, 0, 0, time.UTC)}
	cfg := node.Config{Now: clk.now}
	fastHooks(&cfg)
	cfg.Webhooks.Watch = time.Hour
	r := start(t, cfg)
	rcv := &hookReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	adm := token(t, "root", auth.Admin)
	opened := func(board string) {
		t.Helper()
		body := fmt.Sprintf(`{"starts_at":%q}`, clk.now().Add(-time.Minute).Format(time.RFC3339))
		if st, b := r.rest(t, "PUT", "/api/v1/boards/"+board, adm, body); st != 200 {
			t.Fatalf("PUT board: %d %s", st, b)
		}
	}
	told := func(n int, board string) {
		t.Helper()
		testenv.Until(t, 5*time.Second, board+"'s board.state", func() bool { return rcv.count() >= n })
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		if b := string(rcv.body[n-1]); !strings.Contains(b, `"state":"open"`) || !strings.Contains(b, `"board":"`+board+`"`) {
			t.Fatalf("body %s, want %s open", b, board)
		}
	}
	opened("cup")
	if st, b := r.rest(t, "PUT", "/api/v1/webhooks/w", adm, fmt.Sprintf(`{"url":%q,"secret":%q,"events":["board.state"]}`, srv.URL, hookSecret)); st != 200 {
		t.Fatalf("PUT webhook: %d %s", st, b)
	}
	told(1, "cup")
	opened("late")
	told(2, "late")
}

// noWatch is a store whose webhook list is empty: a node on it never
// appends a state change or final event.
type noWatch struct{ rank.Store }

func (noWatch) Webhooks(context.Context) ([]rank.Webhook, error) { return nil, nil }

// TestWebhookWatcherHearsOtherNodesBoards: a board put on another node
// wakes the watcher at once (the bus's board event), not at its next
// look: node a never appends (its store shows it no webhook), so b's
// watcher, sleeping for an hour, tells of the board a opened.
func TestWebhookWatcherHearsOtherNodesBoards(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	clk := &skewed{t: time.Date(2031, 1, 1, 12, 0, 0, 0, time.UTC)}
	nodes, _ := cluster(t, 0, []string{"a", "b"}, func(c *node.Config) {
		c.Now = clk.now
		fastHooks(c)
		c.Webhooks.Watch = time.Hour
		if c.ID == "a" {
			c.WrapStore = func(s rank.Store) rank.Store { return noWatch{s} }
		}
	})
	rcv := &hookReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	adm := token(t, "root", auth.Admin)
	if st, b := nodes[1].rest(t, "PUT", "/api/v1/webhooks/w", adm, fmt.Sprintf(`{"url":%q,"secret":%q,"events":["board.state"]}`, srv.URL, hookSecret)); st != 200 {
		t.Fatalf("PUT webhook: %d %s", st, b)
	}
	body := fmt.Sprintf(`{"starts_at":%q}`, clk.now().Add(-time.Minute).Format(time.RFC3339))
	if st, b := nodes[0].rest(t, "PUT", "/api/v1/boards/cup", adm, body); st != 200 {
		t.Fatalf("PUT board: %d %s", st, b)
	}
	testenv.Until(t, 5*time.Second, "cup's board.state", func() bool { return rcv.count() >= 1 })
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if b := string(rcv.body[0]); !strings.Contains(b, `"state":"open"`) || !strings.Contains(b, `"board":"cup"`) {
		t.Fatalf("body %s", b)
	}
}
