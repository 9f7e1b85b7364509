// Package loadgen is the load generator behind `wsgateway load`: players
// sending score events through the Go client, spectators holding top
// subscriptions and watchers holding view subscriptions, measured with
// log-linear histograms and reported as JSON and as an HTML page with
// inline SVG charts.
package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/proto"
)

// Config describes one load run.
type Config struct {
	// URL is the gateway's WebSocket endpoint, ws://host:port/ws. Required.
	URL string
	// Secret is the gateway's HS256 key: every token is minted from it
	// (players as role server, spectators and watchers as role spectator).
	// Required unless Tokens is set.
	Secret []byte
	// Tokens, when set, supplies each connection's token instead of
	// minting it from Secret: a fixed token (which must be role server or
	// admin for players to write for many members), or one fetched from a
	// --dev gateway's token endpoint. See DevTokens.
	Tokens func(ctx context.Context, sub string, role auth.Role) (string, error)
	// Board is the board under load. Default "load".
	Board string
	// Players send score events; Spectators subscribe to the top; Watchers
	// subscribe to the view of their own member. Zero means none of that kind.
	Players, Spectators, Watchers int
	// Top is the spectators' top-N; 0 means the board's default.
	Top int
	// Around is the watchers' neighbours above and below. Default 5.
	Around int
	// Members is how many distinct members events spread over. Default 100000.
	Members int
	// Rate is the total events per second; 0 sends as fast as acks return,
	// with Inflight outstanding per player connection.
	Rate int
	// Inflight is the outstanding events per player connection. Default 8.
	Inflight int
	// Duration is how long players send, after every connection is up.
	// Default 10s.
	Duration time.Duration
	// Create creates (or updates) the board first, with an admin token, over
	// REST; the board gets client_writes and default settings.
	Create bool
	// DialParallel bounds the connections being opened at once. Default 64.
	DialParallel int
	// Drain is how long events still in flight at the end may take. Default 10s.
	Drain time.Duration
	// Churn is the mean lifetime of every connection while players send:
	// each player, spectator and watcher connection lives a uniformly drawn
	// Churn/2 … 3·Churn/2 (so they do not all leave together), then closes
	// cleanly and dials again, which starts a new lifetime. A player first
	// waits for its events in flight. Zero: connections live the whole run.
	Churn time.Duration
	// Progress, when set, receives a progress line once a second (as
	// "\r…" when ProgressTTY, else one line each).
	Progress    io.Writer
	ProgressTTY bool
	// Logger receives connection errors. Nil discards.
	Logger *slog.Logger
}

// Generator runs one configured load.
type Generator struct {
	cfg Config
	log *slog.Logger

	// Measurements, shared by every connection (atomics only).
	ack        Histogram // ack latency of every event (ackWin's values, moved each second)
	ackWin     Histogram // ack latencies of the current second (the progress line)
	fresh      Histogram // frame receive time − ack time of its seq
	lag        Histogram // frame receive time − its ts
	acks       ackRing
	sent       atomic.Int64
	acked      atomic.Int64
	dups       atomic.Int64
	failed     atomic.Int64
	deltaSum   atomic.Int64 // sum of the deltas acknowledged (duplicates too)
	frames     [nFrameKinds]atomic.Int64
	dropped    atomic.Int64 // connections lost during the run
	dialFail   atomic.Int64
	churned    atomic.Int64 // connections closed at the end of their lifetime
	redials    atomic.Int64 // churned connections dialled again
	reconnects atomic.Int64 // player clients' own reconnects after a lost connection
	// measuring is on between the players' start and the end of the drain:
	// frames are counted only then, so rates cover the same window.
	measuring atomic.Bool
	// receivers: the run has spectators or watchers, whose frames are
	// timed against the acks' arrival (acks).
	receivers bool

	mu     sync.Mutex
	errs   map[string]int64 // errors by contract code (or "conn", "timeout")
	drops  map[string]int64 // dropped receivers by why their connection ended
	series []Second
}

// New validates cfg and fills its defaults.
func New(cfg Config) (*Generator, error) {
	u, err := url.Parse(cfg.URL)
	switch {
	case cfg.URL == "" || err != nil || (u.Scheme != "ws" && u.Scheme != "wss"):
		return nil, fmt.Errorf("loadgen: URL %q is not a ws:// or wss:// URL", cfg.URL)
	case cfg.Tokens == nil && len(cfg.Secret) < 32:
		return nil, errors.New("loadgen: Secret must be at least 32 bytes (or set Tokens)")
	case cfg.Players < 0 || cfg.Spectators < 0 || cfg.Watchers < 0 || cfg.Rate < 0 || cfg.Top < 0:
		return nil, errors.New("loadgen: counts and rate must not be negative")
	case cfg.Churn < 0 || (cfg.Churn > 0 && cfg.Churn < minChurn):
		return nil, fmt.Errorf("loadgen: Churn must be 0 or at least %s", minChurn)
	case cfg.Players+cfg.Spectators+cfg.Watchers == 0:
		return nil, errors.New("loadgen: nothing to do: no players, spectators or watchers")
	}
	if cfg.Board == "" {
		cfg.Board = "load"
	}
	if cfg.Around <= 0 {
		cfg.Around = 5
	}
	if cfg.Members <= 0 {
		cfg.Members = 100000
	}
	if cfg.Inflight <= 0 {
		cfg.Inflight = 8
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.DialParallel <= 0 {
		cfg.DialParallel = 64
	}
	if cfg.Drain <= 0 {
		cfg.Drain = 10 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Generator{cfg: cfg, log: log, errs: make(map[string]int64), drops: make(map[string]int64),
		receivers: cfg.Spectators+cfg.Watchers > 0}, nil
}

func (g *Generator) countErr(code string) {
	g.mu.Lock()
	g.errs[code]++
	g.mu.Unlock()
}

// minChurn keeps a churning connection alive long enough to subscribe or
// send: below it the run would measure mostly handshakes.
const minChurn = 20 * time.Millisecond

// lifetime draws one connection's lifetime: uniform in [Churn/2, 3·Churn/2].
func (g *Generator) lifetime(r *rand.Rand) time.Duration {
	return g.cfg.Churn/2 + time.Duration(r.Int64N(int64(g.cfg.Churn)+1))
}

// token mints (or, with Config.Tokens, obtains) a token for sub.
func (g *Generator) token(ctx context.Context, sub string, role auth.Role) (string, error) {
	if g.cfg.Tokens != nil {
		return g.cfg.Tokens(ctx, sub, role)
	}
	return auth.MintHS256(g.cfg.Secret, auth.Claims{Sub: sub, Role: role, TTL: g.cfg.Duration + 10*time.Minute})
}

// member is the i-th member id, built in one allocation (one per event).
func member(i int) string {
	var buf [24]byte
	return string(strconv.AppendInt(append(buf[:0], 'm'), int64(i), 10))
}

// Run connects everyone, lets players send for Duration, waits for the
// events in flight, and reports. It fails only when nothing could run (the
// board could not be created, no connection opened); per-event and
// per-connection failures are counted in the report.
func (g *Generator) Run(ctx context.Context) (Report, error) {
	if err := g.preflight(ctx); err != nil {
		return Report{}, err
	}
	if g.cfg.Create {
		if err := g.createBoard(ctx); err != nil {
			return Report{}, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	startConnect := time.Now()
	recvs, err := g.connectReceivers(ctx)
	if err != nil {
		closeAll(recvs, nil)
		return Report{}, err
	}
	players, err := g.connectPlayers(ctx)
	if err != nil {
		closeAll(recvs, players)
		return Report{}, err
	}
	connectTime := time.Since(startConnect)
	nPlayers, nRecvs := count(players), count(recvs)
	if nPlayers+nRecvs == 0 {
		return Report{}, errors.New("loadgen: no connection could be opened")
	}

	// Players stop starting events at the deadline (sendCtx ends, which also
	// ends churn); the events in flight then get Drain to finish, so sent =
	// acked + failed at the end. Receivers stay until the drain is over.
	sendCtx, stop := context.WithCancel(ctx)
	defer stop()
	var lim *rate.Limiter
	if g.cfg.Rate > 0 {
		lim = rate.NewLimiter(rate.Limit(g.cfg.Rate), max(g.cfg.Rate/100, 1))
	}
	evCtx, evCancel := context.WithCancel(context.Background())
	defer evCancel()
	start := time.Now()
	g.measuring.Store(true)
	var wg sync.WaitGroup
	for pi, c := range players {
		if c != nil {
			wg.Go(func() { g.player(sendCtx, evCtx, pi, c, lim, uint64(start.UnixNano())) })
		}
	}
	end := make(chan struct{})
	var rwg sync.WaitGroup
	for ri, r := range recvs {
		if r != nil {
			rwg.Go(func() { g.receiverSlot(sendCtx, end, ri, r, uint64(start.UnixNano())) })
		}
	}
	progressDone := make(chan struct{})
	go g.progress(start, sendCtx.Done(), progressDone)

	select {
	case <-time.After(g.cfg.Duration):
	case <-ctx.Done():
	}
	stop()
	sendElapsed := time.Since(start)
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(g.cfg.Drain):
		evCancel() // abandoned events are counted as "timeout" errors
		<-drained
	}
	elapsed := time.Since(start)
	g.measuring.Store(false)
	<-progressDone
	g.ackWin.drainInto(&g.ack) // what progress did not move
	close(end)
	rwg.Wait()
	return g.report(start, sendElapsed, elapsed, connectTime, nPlayers, nRecvs), nil
}

func count[T any](s []*T) int {
	n := 0
	for _, v := range s {
		if v != nil {
			n++
		}
	}
	return n
}

// player runs player connection i: Inflight senders on c until sendCtx
// ends; with Churn, the senders stop at the end of c's lifetime, c closes
// once its events are answered, and a new connection takes over.
func (g *Generator) player(sendCtx, evCtx context.Context, i int, c *client.Client, lim *rate.Limiter, seed uint64) {
	r := rand.New(rand.NewPCG(uint64(i), seed))
	for {
		lifeCtx, cancel := sendCtx, context.CancelFunc(func() {})
		if g.cfg.Churn > 0 {
			lifeCtx, cancel = context.WithTimeout(sendCtx, g.lifetime(r))
		}
		var wg sync.WaitGroup
		for range g.cfg.Inflight {
			sr := rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
			wg.Go(func() { g.send(lifeCtx, evCtx, c, lim, sr) })
		}
		wg.Wait()
		cancel()
		c.Close()
		if sendCtx.Err() != nil {
			return
		}
		g.churned.Add(1)
		if !g.redial(sendCtx, func(ctx context.Context) (err error) {
			c, err = g.dialPlayer(ctx, i)
			return err
		}) {
			return
		}
	}
}

// receiverSlot holds receiver i (r) until end; with Churn, while sendCtx
// lasts, r closes at the end of its lifetime and is dialled again.
func (g *Generator) receiverSlot(sendCtx context.Context, end <-chan struct{}, i int, r *receiver, seed uint64) {
	rng := rand.New(rand.NewPCG(uint64(i)|1<<32, seed))
	for {
		var life <-chan time.Time
		var t *time.Timer
		if g.cfg.Churn > 0 && sendCtx.Err() == nil {
			t = time.NewTimer(g.lifetime(rng))
			life = t.C
		}
		select {
		case <-life:
		case <-sendCtx.Done():
		}
		if t != nil {
			t.Stop()
		}
		if sendCtx.Err() != nil { // end is closed only after sendCtx ends
			<-end
			r.close()
			return
		}
		r.close()
		g.churned.Add(1)
		if !g.redial(sendCtx, func(ctx context.Context) (err error) {
			r, err = g.dialReceiverSlot(ctx, i)
			return err
		}) {
			<-end
			return
		}
	}
}

// redial dials a churned connection again, with backoff, until it succeeds
// (true) or ctx ends (false). Failures count as dial failures.
func (g *Generator) redial(ctx context.Context, dial func(context.Context) error) bool {
	backoff := 50 * time.Millisecond
	for {
		dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := dial(dctx)
		cancel()
		if err == nil {
			g.redials.Add(1)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		g.dialFail.Add(1)
		g.countErr("dial")
		g.log.Warn("loadgen: redial", "err", err)
		sleep(ctx.Done(), backoff)
		backoff = min(2*backoff, 2*time.Second)
	}
}

func closeAll(recvs []*receiver, players []*client.Client) {
	var wg sync.WaitGroup
	for _, r := range recvs {
		if r != nil {
			wg.Go(r.close)
		}
	}
	for _, c := range players {
		if c != nil {
			wg.Go(func() { c.Close() })
		}
	}
	wg.Wait()
}

// send is one of a player connection's Inflight senders. It starts events
// until ctx ends (the end of the run or of the connection's lifetime); each
// event itself is bounded by evCtx only, so that it gets its answer.
func (g *Generator) send(ctx, evCtx context.Context, c *client.Client, lim *rate.Limiter, r *rand.Rand) {
	stop := ctx.Done()
	for {
		select {
		case <-stop:
			return
		default:
		}
		if lim != nil {
			if err := lim.Wait(ctx); err != nil {
				return
			}
		}
		m := member(r.IntN(g.cfg.Members))
		delta := 1 + r.Int64N(100)
		g.sent.Add(1)
		t0 := time.Now()
		ack, err := c.Score(evCtx, client.ScoreReq{Board: g.cfg.Board, Member: m, Delta: &delta})
		now := time.Now()
		if err != nil {
			g.failed.Add(1)
			var e *client.Error
			switch {
			case errors.As(err, &e):
				g.countErr(e.Code)
				if e.RetryAfter > 0 {
					sleep(stop, e.RetryAfter)
				}
			case errors.Is(err, context.Canceled):
				g.countErr("timeout")
			default:
				g.countErr("conn")
				sleep(stop, 100*time.Millisecond) // the client is reconnecting
			}
			continue
		}
		// One histogram per event: progress moves each second's values
		// from ackWin into ack (and report the last ones).
		g.ackWin.Record(now.Sub(t0))
		if g.receivers {
			g.acks.put(ack.Seq, now) // only frames are timed against it
		}
		g.acked.Add(1)
		// Every call has its own id, so even a duplicate ack (the client or
		// the gateway's store client re-sent it) answers an event applied
		// exactly once: its delta is on the board.
		g.deltaSum.Add(delta)
		if ack.Duplicate {
			g.dups.Add(1)
		}
	}
}

func sleep(stop <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
	case <-t.C:
	}
}

// connectPlayers opens the player connections (role server: a player
// connection writes for many members, and is not rate-limited). Slot i
// holds player i, nil when its dial failed.
func (g *Generator) connectPlayers(ctx context.Context) ([]*client.Client, error) {
	out := make([]*client.Client, g.cfg.Players)
	err := g.dialAll(ctx, g.cfg.Players, func(ctx context.Context, i int) (err error) {
		out[i], err = g.dialPlayer(ctx, i)
		return err
	})
	return out, err
}

func (g *Generator) dialPlayer(ctx context.Context, i int) (*client.Client, error) {
	tok, err := g.token(ctx, "load-player-"+strconv.Itoa(i), auth.Server)
	if err != nil {
		return nil, err
	}
	return client.Dial(ctx, g.cfg.URL, tok, &client.Options{
		Reconnect: true, MaxPending: g.cfg.Inflight, Logger: g.log,
		OnError: func(error) {},
		OnState: func(s client.State) {
			if s == client.StateReconnecting {
				g.reconnects.Add(1)
			}
		},
	})
}

// connectReceivers opens spectators (slots 0…Spectators-1), then watchers;
// a slot is nil when its dial failed.
func (g *Generator) connectReceivers(ctx context.Context) ([]*receiver, error) {
	n := g.cfg.Spectators + g.cfg.Watchers
	out := make([]*receiver, n)
	err := g.dialAll(ctx, n, func(ctx context.Context, i int) (err error) {
		out[i], err = g.dialReceiverSlot(ctx, i)
		return err
	})
	return out, err
}

// dialReceiverSlot dials receiver i: a spectator of the top, or a watcher
// of its own member's view.
func (g *Generator) dialReceiverSlot(ctx context.Context, i int) (*receiver, error) {
	var sub string
	req := proto.Request{Type: proto.TypeSubscribe, ID: "sub", Board: g.cfg.Board}
	if i < g.cfg.Spectators {
		sub = "load-spectator-" + strconv.Itoa(i)
		if g.cfg.Top > 0 {
			req.Top = new(g.cfg.Top)
		}
	} else {
		// Watchers are spread over the members, each watching itself.
		w := i - g.cfg.Spectators
		sub = member(w * g.cfg.Members / max(g.cfg.Watchers, 1))
		req.Top, req.Around = new(0), new(g.cfg.Around)
	}
	tok, err := g.token(ctx, sub, auth.Spectator)
	if err != nil {
		return nil, err
	}
	return g.dialReceiver(ctx, tok, req)
}

// dialAll runs dial for 0…n-1, DialParallel at a time. Failed dials are
// counted; only a cancelled ctx is an error.
func (g *Generator) dialAll(ctx context.Context, n int, dial func(context.Context, int) error) error {
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(g.cfg.DialParallel)
	for i := range n {
		eg.Go(func() error {
			dctx, cancel := context.WithTimeout(ectx, 20*time.Second)
			defer cancel()
			if err := dial(dctx, i); err != nil {
				if ectx.Err() != nil {
					return ectx.Err()
				}
				g.dialFail.Add(1)
				g.countErr("dial")
				g.log.Warn("loadgen: dial", "err", err)
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return fmt.Errorf("loadgen: connect: %w", err)
	}
	return nil
}

// createBoard PUTs the board with an admin token.
func (g *Generator) createBoard(ctx context.Context) error {
	u, _ := url.Parse(g.cfg.URL)
	u.Scheme = strings.Replace(u.Scheme, "ws", "http", 1)
	u.Path = "/api/v1/boards/" + url.PathEscape(g.cfg.Board)
	tok, err := g.token(ctx, "load-admin", auth.Admin)
	if err != nil {
		return fmt.Errorf("loadgen: create board: %w", err)
	}
	body, _ := json.Marshal(map[string]any{"id": g.cfg.Board, "client_writes": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("loadgen: create board: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("loadgen: create board: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("loadgen: create board: %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return nil
}

// progress prints a line once a second and keeps the per-second series.
func (g *Generator) progress(start time.Time, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var lastAcked, lastFailed, lastFrames int64
	last := start
	for {
		var now time.Time
		select {
		case <-stop:
			return
		case now = <-t.C:
		}
		var win Histogram
		g.ackWin.drainInto(&win)
		g.ack.Merge(&win)
		acked, failed, frames := g.acked.Load(), g.failed.Load(), g.totalFrames()
		dt := now.Sub(last).Seconds()
		s := Second{
			T:      now.Sub(start).Seconds(),
			Events: float64(acked-lastAcked) / dt,
			P50:    ms(win.Quantile(0.5)),
			P99:    ms(win.Quantile(0.99)),
			Frames: float64(frames-lastFrames) / dt,
			Errors: failed - lastFailed,
		}
		lastAcked, lastFailed, lastFrames, last = acked, failed, frames, now
		g.mu.Lock()
		if len(g.series) < maxSeries {
			g.series = append(g.series, s)
		}
		g.mu.Unlock()
		if g.cfg.Progress != nil {
			line := fmt.Sprintf("%5.0fs  events/s %8.0f  ack p99 %7.2fms  frames/s %9.0f  errors %d",
				s.T, s.Events, s.P99, s.Frames, failed)
			if g.cfg.Churn > 0 {
				line += fmt.Sprintf("  churned %d", g.churned.Load())
			}
			if g.cfg.ProgressTTY {
				fmt.Fprintf(g.cfg.Progress, "\r%s\x1b[K", line)
			} else {
				fmt.Fprintln(g.cfg.Progress, line)
			}
		}
	}
}

// maxSeries bounds the per-second series (one hour).
const maxSeries = 3600

func (g *Generator) totalFrames() int64 {
	var n int64
	for i := range g.frames {
		n += g.frames[i].Load()
	}
	return n
}

// ackRing remembers when the ack of each recent seq arrived, so a frame
// carrying that seq can be timed (freshness). Slots are reused every
// ringSize seqs; a reader checks the seq before and after reading the time.
type ackRing struct {
	slots [ringSize]struct {
		seq atomic.Int64
		at  atomic.Int64 // unix ns
	}
}

const ringSize = 1 << 18

func (r *ackRing) put(seq int64, at time.Time) {
	s := &r.slots[seq&(ringSize-1)]
	s.seq.Store(0)
	s.at.Store(at.UnixNano())
	s.seq.Store(seq)
}

func (r *ackRing) get(seq int64) (time.Time, bool) {
	if seq <= 0 {
		return time.Time{}, false
	}
	s := &r.slots[seq&(ringSize-1)]
	if s.seq.Load() != seq {
		return time.Time{}, false
	}
	at := s.at.Load()
	if at == 0 || s.seq.Load() != seq {
		return time.Time{}, false
	}
	return time.Unix(0, at), true
}
