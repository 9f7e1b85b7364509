package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// BenchmarkReconnectStorm is §15's reconnect storm: 10,000 spectators of
// one board leave one gateway and arrive at another within one second
// (evenly spread, as a drain's hints spread them), each subscribing again:
// resuming (since: the epoch and seq it holds) or fresh. The board either
// did not change meanwhile or changed once just before. An op is one storm;
// it reports the Redis commands the storm cost (INFO commandstats, all
// commands and EVALSHA alone: the scripts, i.e. the store reads), the
// receiving gateway's CPU (from /proc) and the time from the storm's start
// until every spectator holds the board's current top frame. Both gateways
// already watch the board (a spectator each), as in a rolling restart.
//
//	go test ./e2e -run '^$' -bench ReconnectStorm -benchtime 2x
//
// evalsha-over-idle is EVALSHA less the rate measured over a quiet 2 s
// before the storm (probes of idle boards, the webhook poller): the
// storm's own store reads. The spectators do what the clients do: a dial
// that fails is tried again after a back-off, a subscribe answered
// unavailable or rate_limited is sent again after its retry_after_ms;
// both are counted (dial-retries, resubscribes). LB_STORM_CLIENTS changes the number of
// spectators (default 10000); LB_E2E_BIN runs another gateway binary.
func BenchmarkReconnectStorm(b *testing.B) {
	testenv.Long(b)
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("LB_STORM_CLIENTS")); err == nil && v > 0 {
		n = v
	}
	for _, mode := range []struct {
		name            string
		resume, changed bool
	}{
		{"resume/unchanged", true, false},
		{"resume/changed", true, true},
		{"fresh/unchanged", false, false},
		{"fresh/changed", false, true},
	} {
		b.Run(mode.name, func(b *testing.B) { benchStorm(b, n, mode.resume, mode.changed) })
	}
}

func benchStorm(b *testing.B, n int, resume, changed bool) {
	e := startEnv(b)
	var nodes [2]*gateway
	for i := range nodes {
		nodes[i] = startGateway(b, gwOpts{Node: fmt.Sprintf("n%d", i+1), RedisURL: e.Redis.URL(), NATSURL: e.NATS.URL(),
			Args: []string{"--max-conns-per-member", "0"}})
	}
	const board = "storm"
	putBoard(b, nodes[0], board, nil)
	srv, err := dialRaw(nodes[0], token(b, auth.Claims{Sub: "srv", Role: auth.Server}))
	if err != nil {
		b.Fatal(err)
	}
	defer srv.CloseNow()
	// The scorer's connection is read all along, so that it answers the
	// gateway's pings while the spectators connect.
	acks := make(chan int64, 1)
	go func() {
		defer close(acks)
		for {
			_, data, err := srv.Read(context.Background())
			if err != nil {
				return
			}
			var a proto.Ack
			if json.Unmarshal(data, &a) == nil && a.Type == proto.TypeAck {
				acks <- a.Seq
			}
		}
	}()
	// score sends one event: a small one for the warm-up, one that moves
	// the top for a storm's change.
	score := func(i int, delta int) int64 {
		b.Helper()
		m := fmt.Appendf(nil, `{"type":"score","id":"s%d","board":"%s","member":"m%02d","delta":%d}`, i, board, i%50, delta)
		if err := srv.Write(context.Background(), websocket.MessageText, m); err != nil {
			b.Fatal(err)
		}
		seq, ok := <-acks
		if !ok {
			b.Fatal("the scorer's connection ended")
		}
		return seq
	}
	var seq int64
	for i := range 200 {
		seq = score(i, 1+i%7)
	}
	// Each gateway watches the board, as a node of a busy deployment does.
	for _, g := range nodes {
		k := newStormConn(b, g, 0, board)
		if err := k.subscribe(nil); err != nil {
			b.Fatal(err)
		}
		defer k.ws.CloseNow()
	}

	conns := make([]*stormConn, n)
	b.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.ws.CloseNow()
			}
		}
	})
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range conns {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			conns[i] = newStormConn(b, nodes[0], i+1, board)
			if err := conns[i].subscribe(nil); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	rdb := redis.NewClient(&redis.Options{Addr: e.Redis.Addr()})
	defer rdb.Close()

	var totalCmds, totalEvals, overIdle, cpuMS, allMS, dialRetries, resubs float64
	at := 0
	b.ResetTimer()
	for op := 0; op < b.N; op++ {
		to := nodes[1-at]
		testenv.Eventually(b, 30*time.Second, "every spectator to hold the current frame before the storm", func() error {
			for _, c := range conns {
				if c.held() < seq {
					return fmt.Errorf("spectator %d holds seq %d of %d", c.id, c.held(), seq)
				}
			}
			return nil
		})
		// The store's background (probes, the webhook poller) over a quiet
		// moment, to tell the storm's own reads from it.
		_, idle0 := commandCalls(b, rdb)
		quietFrom := time.Now()
		time.Sleep(2 * time.Second)
		_, idle1 := commandCalls(b, rdb)
		idleRate := float64(idle1-idle0) / time.Since(quietFrom).Seconds()
		if changed {
			seq = score(1000+op, 100000)
		}
		var tries retries
		for _, c := range conns {
			c.mu.Lock()
			c.tries = &tries
			c.mu.Unlock()
		}
		calls0, evals0 := commandCalls(b, rdb)
		cpu0 := procCPU(b, to.Pid())
		start := time.Now()
		var done atomic.Int64
		allHeld := make(chan struct{})
		for i, c := range conns {
			go func() {
				time.Sleep(time.Until(start.Add(time.Second * time.Duration(i) / time.Duration(n))))
				err := c.moveTo(to, resume, seq, func() {
					if done.Add(1) == int64(n) {
						close(allHeld)
					}
				})
				if err != nil {
					b.Error(err)
				}
			}()
		}
		select {
		case <-allHeld:
		case <-time.After(60 * time.Second):
			var waiting []string
			for _, c := range conns {
				c.mu.Lock()
				if c.onHold != nil && len(waiting) < 5 {
					waiting = append(waiting, fmt.Sprintf("spectator %d: joined %v seq %d of %d, last error %s", c.id, c.joined, c.seq, c.want, c.lastErr))
				}
				c.mu.Unlock()
			}
			b.Fatalf("%d of %d spectators hold the current frame 60 s after the storm began; waiting: %q", done.Load(), n, waiting)
		}
		took := time.Since(start)
		time.Sleep(200 * time.Millisecond) // the board's next scheduled read, if any, lands
		calls1, evals1 := commandCalls(b, rdb)
		cpu1 := procCPU(b, to.Pid())
		totalCmds += float64(calls1 - calls0)
		totalEvals += float64(evals1 - evals0)
		overIdle += float64(evals1-evals0) - idleRate*(took+200*time.Millisecond).Seconds()
		cpuMS += float64(cpu1-cpu0) * 10 // clock ticks of 10 ms
		allMS += float64(took.Milliseconds())
		dialRetries += float64(tries.dials.Load())
		resubs += float64(tries.subscribes.Load())
		at = 1 - at
	}
	b.StopTimer()
	ops := float64(b.N)
	b.ReportMetric(totalCmds/ops, "redis-cmds/storm")
	b.ReportMetric(totalEvals/ops, "evalsha/storm")
	b.ReportMetric(overIdle/ops, "evalsha-over-idle/storm")
	b.ReportMetric(cpuMS/ops, "gateway-cpu-ms/storm")
	b.ReportMetric(allMS/ops, "ms-until-all-hold/storm")
	b.ReportMetric(dialRetries/ops, "dial-retries/storm")
	b.ReportMetric(resubs/ops, "resubscribes/storm")
}

// retries counts what a storm's spectators tried again.
type retries struct {
	dials      atomic.Int64 // a dial that failed (the gateway slow to answer the upgrade)
	subscribes atomic.Int64 // a subscribe answered unavailable or rate_limited
}

// stormConn is one raw spectator: what it holds of the board's stream.
type stormConn struct {
	id    int
	board string
	tok   string
	ws    *websocket.Conn

	mu      sync.Mutex
	joined  bool // the current connection's subscribe was answered
	epoch   string
	seq     int64 // greatest top seq held
	resumed bool
	lastErr string // the last error frame
	since   *proto.Since
	tries   *retries
	// want is the seq that counts as holding the current frame on the
	// current connection; onHold is called once it is held.
	want   int64
	onHold func()
}

func newStormConn(b *testing.B, g *gateway, id int, board string) *stormConn {
	c := &stormConn{id: id, board: board, tok: token(b, auth.Claims{Sub: fmt.Sprintf("spec%05d", id), Role: auth.Spectator})}
	ws, err := dialRaw(g, c.tok)
	if err != nil {
		b.Fatal(err)
	}
	c.ws = ws
	return c
}

// dialRaw opens a spectator's WebSocket to g and reads its welcome.
func dialRaw(g *gateway, tok string) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, g.URL(), &websocket.DialOptions{
		Subprotocols: []string{proto.Subprotocol, proto.BearerPrefix + tok},
	})
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", g.opts.Node, err)
	}
	ws.SetReadLimit(1 << 20)
	if _, _, err := ws.Read(ctx); err != nil {
		ws.CloseNow()
		return nil, fmt.Errorf("welcome from %s: %w", g.opts.Node, err)
	}
	return ws, nil
}

func (c *stormConn) held() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

// subscribe sends subscribe (with since when given) and reads the
// connection from then on.
func (c *stormConn) subscribe(since *proto.Since) error {
	c.mu.Lock()
	c.since = since
	c.mu.Unlock()
	if err := c.sendSubscribe(c.ws, since); err != nil {
		return err
	}
	go c.read(c.ws)
	return nil
}

func (c *stormConn) sendSubscribe(ws *websocket.Conn, since *proto.Since) error {
	req := proto.Request{Type: proto.TypeSubscribe, ID: "sub", Board: c.board, Top: new(10), Since: since}
	m, _ := json.Marshal(req)
	if err := ws.Write(context.Background(), websocket.MessageText, m); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	return nil
}

func (c *stormConn) read(ws *websocket.Conn) {
	for {
		_, data, err := ws.Read(context.Background())
		if err != nil {
			return
		}
		var f struct {
			Type       string `json:"type"`
			Epoch      string `json:"epoch"`
			Resumed    bool   `json:"resumed"`
			Seq        int64  `json:"seq"`
			Code       string `json:"code"`
			RetryAfter int64  `json:"retry_after_ms"`
		}
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		c.mu.Lock()
		switch f.Type {
		case proto.TypeSubscribed:
			c.joined, c.epoch, c.resumed = true, f.Epoch, f.Resumed
			if !f.Resumed {
				c.seq = 0
			}
		case proto.TypeTop:
			c.seq = max(c.seq, f.Seq)
		case proto.TypeError:
			c.lastErr = string(data)
			if !c.joined && (f.Code == proto.CodeUnavailable || f.Code == proto.CodeRateLimited) {
				if c.tries != nil {
					c.tries.subscribes.Add(1)
				}
				since := c.since
				time.AfterFunc(time.Duration(max(f.RetryAfter, 100))*time.Millisecond, func() {
					c.sendSubscribe(ws, since) // fails only once ws is closed, which ends this reader
				})
			}
		}
		var hold func()
		if c.onHold != nil && c.joined && c.seq >= c.want {
			hold, c.onHold = c.onHold, nil
		}
		c.mu.Unlock()
		if hold != nil {
			hold()
		}
	}
}

// moveTo closes the connection and subscribes again on g; onHold runs
// once the new connection holds the frame of seq.
func (c *stormConn) moveTo(g *gateway, resume bool, seq int64, onHold func()) error {
	c.ws.CloseNow()
	c.mu.Lock()
	var since *proto.Since
	if resume {
		since = &proto.Since{Epoch: c.epoch, Seq: c.seq}
	}
	c.joined, c.want, c.onHold = false, seq, onHold
	c.mu.Unlock()
	backoff := 100 * time.Millisecond
	deadline := time.Now().Add(30 * time.Second)
	for {
		ws, err := dialRaw(g, c.tok)
		if err == nil {
			c.ws = ws
			return c.subscribe(since)
		}
		if time.Now().After(deadline) {
			return err
		}
		if c.tries != nil {
			c.tries.dials.Add(1)
		}
		time.Sleep(backoff/2 + rand.N(backoff/2)) // the clients' jittered back-off
		backoff = min(2*backoff, 2*time.Second)
	}
}

// commandCalls is Redis's calls of every command so far (INFO itself
// aside) and of EVALSHA alone.
func commandCalls(b *testing.B, rdb *redis.Client) (all, evals int64) {
	all, evals, err := redisCalls(context.Background(), rdb)
	if err != nil {
		b.Fatal(err)
	}
	return all, evals
}

// redisCalls reads INFO commandstats: the calls of every command so far
// (INFO itself aside) and of EVALSHA alone.
func redisCalls(ctx context.Context, rdb *redis.Client) (all, evals int64, err error) {
	byName, err := commandsByName(ctx, rdb)
	for name, n := range byName {
		all += n
		if name == "evalsha" {
			evals += n
		}
	}
	return all, evals, err
}

// commandsByName is INFO commandstats' calls per command so far, INFO
// itself aside.
func commandsByName(ctx context.Context, rdb *redis.Client) (map[string]int64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		v, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, _ := strconv.ParseInt(v, 10, 64)
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out, nil
}

// procCPU is a process's user + system CPU in clock ticks (1/100 s).
func procCPU(b *testing.B, pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return ut + st
}
