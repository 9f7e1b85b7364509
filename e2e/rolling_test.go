package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// spectator is a resuming Go client watching two boards' top frames, and
// what a rolling restart shows it.
type spectator struct {
	id   int
	cl   *client.Client
	subs map[string]*client.Subscription

	mu       sync.Mutex
	last     map[string]proto.Top     // newest top frame per board
	finals   map[string]map[int64]int // final frames per board and period
	hinted   bool                     // a draining hint on the current connection
	drainAt  time.Time                // when the last hint said to reconnect
	unhinted []string                 // closes with 1001 that no hint announced
	early    []time.Duration          // reconnects before the hint's time
	hints    int                      // hints received
	resumed  map[string]int           // renewals answered resumed, per board
	fresh    map[string]int           // renewals answered resumed: false
	seqBack  []string                 // a board's top seq going back on one stream
	seqs     map[string]int64         // greatest top seq per board since its last fresh subscribe
	epochs   map[string]string        // the epoch followed per board
	errs     []string
}

func newSpectator(id int) *spectator {
	return &spectator{id: id, last: map[string]proto.Top{}, finals: map[string]map[int64]int{},
		resumed: map[string]int{}, fresh: map[string]int{}, seqs: map[string]int64{}, epochs: map[string]string{},
		subs: map[string]*client.Subscription{}}
}

func (s *spectator) options() *client.Options {
	return &client.Options{
		OnTop: func(f proto.Top) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if f.Final {
				if s.finals[f.Board] == nil {
					s.finals[f.Board] = map[int64]int{}
				}
				s.finals[f.Board][f.Period]++
				return
			}
			if f.Seq < s.seqs[f.Board] {
				s.seqBack = append(s.seqBack, fmt.Sprintf("%s: seq %d after %d", f.Board, f.Seq, s.seqs[f.Board]))
			}
			s.seqs[f.Board] = max(s.seqs[f.Board], f.Seq)
			s.last[f.Board] = f
		},
		OnDraining: func(after time.Duration) {
			s.mu.Lock()
			s.hinted, s.drainAt = true, time.Now().Add(after)
			s.hints++
			s.mu.Unlock()
		},
		OnError: func(err error) {
			if !strings.Contains(err.Error(), "connection lost") {
				return
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			// The client's own close after an unanswered ping says 1001
			// too: only the gateway's count.
			own := strings.Contains(err.Error(), "ping timeout")
			if websocket.CloseStatus(err) == websocket.StatusGoingAway && !s.hinted && !own {
				s.unhinted = append(s.unhinted, err.Error())
			}
		},
		OnState: func(st client.State) {
			if st != client.StateConnected {
				return
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			// The client starts its delay when it reads the hint, a moment
			// before OnDraining runs and stamps drainAt: so much early is
			// the stamp's lateness, not the client's.
			if s.hinted && time.Now().Before(s.drainAt.Add(-hintStampSlack)) {
				s.early = append(s.early, time.Until(s.drainAt))
			}
			s.hinted = false
		},
	}
}

// hintStampSlack bounds how much later than the client's own clock
// OnDraining stamps a hint's time on a loaded machine; a client that did
// not wait would be early by up to the whole hint (seconds).
const hintStampSlack = 10 * time.Millisecond

// renewed records a renewal's answer for board: the client's Subscription
// says whether it resumed, and a fresh one starts the seqs again.
func (s *spectator) renewed(board string) {
	sub := s.subs[board]
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := sub.Epoch(); e != s.epochs[board] {
		s.epochs[board] = e
		s.seqs[board] = 0
	}
}

// commandRate samples Redis's commands processed once a second. Samples
// are a second apart at least: a ticker behind a slow INFO would fire
// again at once, and a step of a few milliseconds that holds one
// pipeline's burst reads as a rate of a million.
type commandRate struct {
	mu      sync.Mutex
	samples []rateSample
}

type rateSample struct {
	at    time.Time
	calls int64 // every command's calls so far (INFO commandstats)
	evals int64 // EVALSHA alone
}

func (c *commandRate) run(ctx context.Context, rdb *redis.Client) {
	for {
		next := time.Now().Add(time.Second)
		if calls, evals, err := redisCalls(ctx, rdb); err == nil {
			now := time.Now()
			c.mu.Lock()
			c.samples = append(c.samples, rateSample{now, calls, evals})
			c.mu.Unlock()
			next = now.Add(time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
	}
}

// perSecond is the commands per second in each one-second step within
// [from, to).
func (c *commandRate) perSecond(from, to time.Time) []float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []float64
	for i := 1; i < len(c.samples); i++ {
		a, b := c.samples[i-1], c.samples[i]
		if a.at.Before(from) || !b.at.Before(to) {
			continue
		}
		out = append(out, float64(b.calls-a.calls)/b.at.Sub(a.at).Seconds())
	}
	return out
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(max(len(xs), 1))
}

// TestRollingRestart is R34: three gateway processes on one Redis and one
// NATS, scorers and 60 resuming spectators; each node is restarted in turn
// (SIGTERM, drain, start again), one of them across a period's end, while
// a few spectators are cut off across that end. Then: no acknowledged event
// lost or doubled; every spectator's last top frames equal the store's;
// every spectator got the final frame of the period that ended exactly once
// (live, or on its resume); no 1001 close came without a hint, no client
// reconnected before the time its hint said; Redis's commands per second
// during a restart stay within 2× those of the steady load.
func TestRollingRestart(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	const drain = 4 * time.Second
	c := newCluster(t, clusterOpts{Nodes: 3, Args: []string{"--drain-timeout", drain.String(), "--top-interval", "100ms"}})
	const board, periodic = "roll", "roll1m"
	putBoard(t, c.nodes[0], board, nil)
	putBoard(t, c.nodes[0], periodic, map[string]any{"reset": "1m"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	rdb := redis.NewClient(&redis.Options{Addr: c.Redis.Addr()})
	defer rdb.Close()
	var rate commandRate
	go rate.run(ctx, rdb)

	// Spectators: 52 spread over the nodes, 8 through a proxy to n1 that
	// is cut across the period's end.
	proxy := startProxy(t, c.nodes[0].Addr)
	const spectators, cut = 60, 8
	specs := make([]*spectator, spectators)
	var wg sync.WaitGroup
	for i := range specs {
		s := newSpectator(i)
		specs[i] = s
		urls := c.urls()
		urls = append(urls[i%3:], urls[:i%3]...)
		if i < cut {
			urls = []string{"ws://" + proxy.Addr + "/ws"}
		}
		wg.Go(func() {
			tok := token(t, auth.Claims{Sub: fmt.Sprintf("spec%02d", i), Role: auth.Spectator})
			o := s.options()
			o.PingInterval = time.Second
			s.cl = dialer{t}.dial(tok, urls, o)
		})
	}
	wg.Wait()
	for _, s := range specs {
		for _, b := range []string{board, periodic} {
			sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
			sub, err := s.cl.Subscribe(sctx, b, client.SubOpts{Top: 10})
			scancel()
			if err != nil {
				t.Fatalf("e2e: spectator %d subscribe %s: %v", s.id, b, err)
			}
			s.subs[b] = sub
			s.renewed(b)
		}
	}

	// Scorers: the ledger board and the periodic one (not ledger-checked:
	// its events spread over periods).
	l := newLedger()
	scorers := serverClients(t, 4, c.urls()...)
	ld := startLoad(l, scorers, board, memberIDs(40), 4, 300, 1<<40)
	pl := startLoad(newLedger(), serverClients(t, 2, c.urls()...), periodic, memberIDs(20), 2, 50, 1<<40)
	defer pl.Finish(t, 30*time.Second)

	// The period end to restart around: at least 25 s away.
	start := time.Now()
	end := start.Add(25 * time.Second).Truncate(time.Minute).Add(time.Minute)
	t.Logf("period end at %s, %s away", end.Format(time.TimeOnly), time.Until(end).Round(time.Second))
	sleepUntil := func(at time.Time) {
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
		}
	}
	type window struct {
		node     string
		from, to time.Time
	}
	var windows []window
	restart := func(g *gateway) {
		t.Helper()
		from := time.Now()
		took, err := g.Term(drain + 5*time.Second)
		if err != nil {
			t.Errorf("e2e: SIGTERM %s: %v after %s", g.opts.Node, err, took)
		}
		if err := g.start(); err != nil {
			t.Fatalf("e2e: restart %s: %v\n%s", g.opts.Node, err, g.logTail())
		}
		readyz(t, g, true, 20*time.Second)
		time.Sleep(2 * time.Second) // the clients it takes settle there
		windows = append(windows, window{g.opts.Node, from, time.Now()})
		t.Logf("restarted %s: drained in %s, back and settled %s after SIGTERM", g.opts.Node, took.Round(time.Millisecond), time.Since(from).Round(time.Millisecond))
	}
	steadyTo := end.Add(-16 * time.Second)
	sleepUntil(steadyTo.Add(-5 * time.Second))
	before, _ := commandsByName(ctx, rdb)
	sleepUntil(steadyTo)
	after, _ := commandsByName(ctx, rdb)
	steady := rate.perSecond(start.Add(3*time.Second), steadyTo)
	var names []string
	for name := range after {
		names = append(names, name)
	}
	slices.SortFunc(names, func(x, y string) int { return int((after[y] - before[y]) - (after[x] - before[x])) })
	var top []string
	for _, name := range names[:min(6, len(names))] {
		top = append(top, fmt.Sprintf("%s %.0f/s", name, float64(after[name]-before[name])/5))
	}
	t.Logf("Redis commands in the steady load, by command: %s", strings.Join(top, ", "))
	restart(c.nodes[0])
	sleepUntil(end.Add(-5 * time.Second))
	proxy.Partition()
	sleepUntil(end.Add(-time.Second))
	restart(c.nodes[1]) // its drain spans the period's end
	sleepUntil(end.Add(3 * time.Second))
	proxy.Heal()
	sleepUntil(end.Add(8 * time.Second))
	restart(c.nodes[2])
	ended := rank.PeriodAt(rank.Board{Reset: "1m", TZ: "UTC"}, end.Add(-time.Second)).Index

	ld.Finish(t, 60*time.Second)
	t.Logf("ledger: %s", l.stats())

	// Commands per second: steady against each restart's window.
	steadyRate := mean(steady)
	t.Logf("Redis commands/s steady: mean %.0f over %d s (per second %.0f)", steadyRate, len(steady), steady)
	for _, w := range windows {
		ps := rate.perSecond(w.from, w.to)
		peak := slices.Max(append(ps, 0))
		t.Logf("Redis commands/s restarting %s: mean %.0f, peak %.0f over %d s (%.2f× steady) %.0f", w.node, mean(ps), peak, len(ps), peak/steadyRate, ps)
		if peak > 2*steadyRate {
			t.Errorf("e2e: restarting %s: %.0f commands/s, more than 2× the steady %.0f", w.node, peak, steadyRate)
		}
	}

	// Every spectator converges to the store's top-10 of both boards.
	tok := adminToken(t)
	truthOf := func(b string) []proto.Entry {
		truth, _, err := readBoard(ctx, c.nodes[0], tok, b)
		if err != nil {
			t.Fatal(err)
		}
		return truth[:min(10, len(truth))]
	}
	pl.Finish(t, 30*time.Second)
	truth := map[string][]proto.Entry{board: truthOf(board), periodic: truthOf(periodic)}
	testenv.Eventually(t, 5*time.Second, "every spectator's last top frames to equal the store's", func() error {
		for _, s := range specs {
			s.mu.Lock()
			for _, b := range []string{board, periodic} {
				if f := s.last[b]; !sameEntries(f.Entries, truth[b]) {
					s.mu.Unlock()
					return fmt.Errorf("spectator %d, %s: top seq %d %v; store %v", s.id, b, f.Seq, f.Entries, truth[b])
				}
			}
			s.mu.Unlock()
		}
		return nil
	})

	var hints, resumed, fresh int
	for _, s := range specs {
		for _, b := range []string{board, periodic} {
			s.renewed(b)
		}
		s.mu.Lock()
		hints += s.hints
		if n := s.finals[periodic][ended]; n != 1 {
			t.Errorf("e2e: spectator %d got the final frame of period %d %d times, want once (finals %v)", s.id, ended, n, s.finals[periodic])
		}
		if len(s.unhinted) > 0 {
			t.Errorf("e2e: spectator %d was closed with 1001 without a hint: %q", s.id, s.unhinted)
		}
		if len(s.early) > 0 {
			t.Errorf("e2e: spectator %d reconnected before its hint's time: %v early", s.id, s.early)
		}
		if len(s.seqBack) > 0 {
			t.Errorf("e2e: spectator %d saw a top seq go back on one stream: %q", s.id, s.seqBack)
		}
		for _, b := range []string{board, periodic} {
			if s.subs[b].Resumed() {
				resumed++
			} else {
				fresh++
			}
		}
		s.mu.Unlock()
	}
	t.Logf("spectators: %d hints; last renewal per board resumed %d, fresh %d", hints, resumed, fresh)
	if hints < spectators {
		t.Errorf("e2e: %d hints for %d spectators through three restarts", hints, spectators)
	}
	if fresh > 0 {
		t.Errorf("e2e: %d subscriptions were not resumed at their last renewal", fresh)
	}
	verify(t, l, board, c.nodes, nil, c.resender(t, c.nodes[0]), verifyOpts{})
}
