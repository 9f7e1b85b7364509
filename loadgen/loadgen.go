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
	// Required.
	Secret []byte
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
	ack      Histogram // ack latency of every event
	ackWin   Histogram // the same, drained each second for the progress line
	fresh    Histogram // frame receive time − ack time of its seq
	lag      Histogram // frame receive time − its ts
	acks     ackRing
	sent     atomic.Int64
	acked    atomic.Int64
	dups     atomic.Int64
	failed   atomic.Int64
	deltaSum atomic.Int64 // sum of the deltas acknowledged (not duplicates)
	frames   [nFrameKinds]atomic.Int64
	dropped  atomic.Int64 // connections lost during the run
	dialFail atomic.Int64
	// measuring is on between the players' start and the end of the drain:
	// frames are counted only then, so rates cover the same window.
	measuring atomic.Bool

	mu     sync.Mutex
	errs   map[string]int64 // errors by contract code (or "conn", "timeout")
	series []Second
}

// New validates cfg and fills its defaults.
func New(cfg Config) (*Generator, error) {
	u, err := url.Parse(cfg.URL)
	switch {
	case cfg.URL == "" || err != nil || (u.Scheme != "ws" && u.Scheme != "wss"):
		return nil, fmt.Errorf("loadgen: URL %q is not a ws:// or wss:// URL", cfg.URL)
	case len(cfg.Secret) < 32:
		return nil, errors.New("loadgen: Secret must be at least 32 bytes")
	case cfg.Players < 0 || cfg.Spectators < 0 || cfg.Watchers < 0 || cfg.Rate < 0 || cfg.Top < 0:
		return nil, errors.New("loadgen: counts and rate must not be negative")
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
	return &Generator{cfg: cfg, log: log, errs: make(map[string]int64)}, nil
}

func (g *Generator) countErr(code string) {
	g.mu.Lock()
	g.errs[code]++
	g.mu.Unlock()
}

// token mints a token for sub.
func (g *Generator) token(sub string, role auth.Role) (string, error) {
	return auth.MintHS256(g.cfg.Secret, auth.Claims{Sub: sub, Role: role, TTL: g.cfg.Duration + 10*time.Minute})
}

// member is the i-th member id.
func member(i int) string { return "m" + strconv.Itoa(i) }

// Run connects everyone, lets players send for Duration, waits for the
// events in flight, and reports. It fails only when nothing could run (the
// board could not be created, no connection opened); per-event and
// per-connection failures are counted in the report.
func (g *Generator) Run(ctx context.Context) (Report, error) {
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
		return Report{}, err
	}
	players, err := g.connectPlayers(ctx)
	if err != nil {
		closeAll(recvs, players)
		return Report{}, err
	}
	connectTime := time.Since(startConnect)
	if len(players)+len(recvs) == 0 {
		return Report{}, errors.New("loadgen: no connection could be opened")
	}

	// Players stop starting events at the deadline; the events in flight
	// then get Drain to finish, so sent = acked + failed at the end.
	stop := make(chan struct{})
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
		for k := range g.cfg.Inflight {
			seed := uint64(pi)<<16 | uint64(k)
			wg.Go(func() { g.send(ctx, evCtx, c, lim, stop, rand.New(rand.NewPCG(seed, uint64(start.UnixNano())))) })
		}
	}
	progressDone := make(chan struct{})
	go g.progress(start, stop, progressDone)

	select {
	case <-time.After(g.cfg.Duration):
	case <-ctx.Done():
	}
	close(stop)
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
	cancel()
	closeAll(recvs, players)
	return g.report(start, sendElapsed, elapsed, connectTime, len(players), len(recvs)), nil
}

func closeAll(recvs []*receiver, players []*client.Client) {
	var wg sync.WaitGroup
	for _, r := range recvs {
		wg.Go(r.close)
	}
	for _, c := range players {
		wg.Go(func() { c.Close() })
	}
	wg.Wait()
}

// send is one of a player connection's Inflight senders.
func (g *Generator) send(ctx, evCtx context.Context, c *client.Client, lim *rate.Limiter, stop <-chan struct{}, r *rand.Rand) {
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
		d := now.Sub(t0)
		g.ack.Record(d)
		g.ackWin.Record(d)
		g.acks.put(ack.Seq, now)
		g.acked.Add(1)
		if ack.Duplicate {
			g.dups.Add(1)
		} else {
			g.deltaSum.Add(delta)
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
// connection writes for many members, and is not rate-limited).
func (g *Generator) connectPlayers(ctx context.Context) ([]*client.Client, error) {
	out := make([]*client.Client, g.cfg.Players)
	err := g.dialAll(ctx, g.cfg.Players, func(ctx context.Context, i int) error {
		tok, err := g.token("load-player-"+strconv.Itoa(i), auth.Server)
		if err != nil {
			return err
		}
		c, err := client.Dial(ctx, g.cfg.URL, tok, &client.Options{
			Reconnect: true, MaxPending: g.cfg.Inflight, Logger: g.log,
			OnError: func(error) {},
		})
		if err != nil {
			return err
		}
		out[i] = c
		return nil
	})
	return compact(out), err
}

// connectReceivers opens spectators, then watchers.
func (g *Generator) connectReceivers(ctx context.Context) ([]*receiver, error) {
	n := g.cfg.Spectators + g.cfg.Watchers
	out := make([]*receiver, n)
	err := g.dialAll(ctx, n, func(ctx context.Context, i int) error {
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
		tok, err := g.token(sub, auth.Spectator)
		if err != nil {
			return err
		}
		r, err := g.dialReceiver(ctx, tok, req)
		if err != nil {
			return err
		}
		out[i] = r
		return nil
	})
	return compact(out), err
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

func compact[T any](s []*T) []*T {
	out := s[:0]
	for _, v := range s {
		if v != nil {
			out = append(out, v)
		}
	}
	return out
}

// createBoard PUTs the board with an admin token.
func (g *Generator) createBoard(ctx context.Context) error {
	u, _ := url.Parse(g.cfg.URL)
	u.Scheme = strings.Replace(u.Scheme, "ws", "http", 1)
	u.Path = "/api/v1/boards/" + url.PathEscape(g.cfg.Board)
	tok, err := g.token("load-admin", auth.Admin)
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
