// Package live is the live frame engine: throttled, latest-wins `top` and
// `view` frames (docs/protocol.md §4, R7, R8, R9, R12).
//
// Change events (local and from the bus) are hints that mark boards and views
// dirty; the Run loop re-reads only what is dirty, on each board's fixed read
// schedule (schedule.go: at most one read per Interval, at points one
// Interval apart), encodes each distinct frame once and hands the same bytes
// to every subscriber's Outbox, stamped with the read's point so that every
// subscriber's throttle runs in the board's phase. Store reads therefore grow
// with boards × ticks, never with subscribers.
// The store is the truth: a gap in the change stream, a Resync, a period
// rollover or a hint that never arrives (the Refresh backstop) marks the
// whole board dirty.
//
// Lock order: Engine.mu, then Outbox.mu (a leaf: under it only an Outbox's
// DirectWriter.TryAcquire runs, which never waits). Store reads, and the
// fan-out's offers (which may write to sockets, see DirectWriter), happen
// with no Engine lock held.
package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/wsgateway/wsgateway/rank"
)

// Config configures an Engine.
type Config struct {
	// Store is the source of truth for every frame. Required.
	Store rank.Store
	// Interval is the minimum gap between two frames of one key on one
	// connection (--top-interval); it is also the period of each board's
	// read schedule (schedule.go). Zero means 100ms.
	Interval time.Duration
	// Now is the clock for frame timestamps, throttling and periods. Nil
	// means time.Now.
	Now func() time.Time
	// Logger receives store errors (rate-limited). Nil discards.
	Logger *slog.Logger
	// ReadTimeout bounds each store read. Zero means 2s.
	ReadTimeout time.Duration
	// Refresh is the backstop against lost change events: every Refresh a
	// board whose reads showed a seq that the change stream has not reached
	// since the previous check is re-read whole, and an idle board is probed
	// with one small read. Zero means 2s; negative disables the backstop.
	Refresh time.Duration
	// Parallel is how many boards are read concurrently in one tick. Zero
	// means 8.
	Parallel int
	// Decorator gives every entry of a frame its profile fields (R20),
	// once per read, before frames are compared and encoded, so a profile
	// change makes a different frame. A read waits on it at most
	// decorateWait (profiles.go). nil: entries carry the stored names.
	Decorator rank.Decorator
	// OnWatch, when set, is told when a board gains its first subscription
	// on this node (watched true) and when it loses its last one (false):
	// the node's NATS interest follows it. It is called with the engine's
	// lock held, so calls come in the order the changes happened; it must
	// not block nor call the Engine.
	OnWatch func(board string, watched bool)
	// OtherViewers, when set, is a board's open subscriptions on the other
	// nodes (docs/protocol.md §14); board frames then carry "viewers"
	// (viewers.go). Called with the engine's lock held: it must not block
	// nor call the Engine.
	OtherViewers func(board string) int
}

const (
	cfgTTL      = 10 * time.Second // board configs are re-read this often
	maxAhead    = 1024             // out-of-order seqs tracked per board before declaring a gap
	maxLog      = 4096             // changes remembered per board while its reads are in flight
	errLogEvery = 5 * time.Second  // at most one store-error log line per this period
)

// Stats are the engine's counters, for metrics.
type Stats struct {
	Reads    uint64 // store calls made (Top, Ranks, Board)
	Errors   uint64 // store calls that failed
	Encoded  uint64 // frames encoded
	Boards   int    // boards with at least one subscription on this node
	Views    int    // distinct (board, member, around) views
	TopSubs  int    // top subscriptions
	Watchers int    // view subscriptions
}

// Engine computes live frames for every subscription of one node. All methods
// are safe for concurrent use; Run must run for frames to follow changes.
type Engine struct {
	store       rank.Store
	interval    time.Duration
	readTimeout time.Duration
	refresh     time.Duration
	parallel    int
	decorator   rank.Decorator
	onWatch     func(board string, watched bool)
	others      func(board string) int // Config.OtherViewers
	now         func() time.Time
	log         *slog.Logger
	wake        chan struct{} // capacity 1: a board became due for a read
	running     atomic.Bool

	reads, errs, encoded atomic.Uint64
	errLogAt             atomic.Int64  // unix nanos of the last logged store error
	errQuiet             atomic.Uint64 // store errors not logged since then

	mu      sync.Mutex // guards everything below and all board and view state
	boards  map[string]*board
	conns   map[*Outbox]map[string]*sub
	nextID  uint64
	kick    bool      // something became dirty: wake Run after unlocking
	houseAt time.Time // last backstop check
}

// sub is one connection's subscription to one board.
type sub struct {
	top     int    // 0: no top frames
	cohort  string // top frames of this cohort's standings (§12); "": the board's
	topGen  uint64
	v       *view // nil: no view frames
	viewGen uint64
	ml      *memberList // nil: no members frames (members.go)
	mlGen   uint64
}

// New validates cfg, fills defaults and returns an Engine.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("live: Config.Store is required")
	}
	if cfg.Interval < 0 || cfg.ReadTimeout < 0 || cfg.Parallel < 0 {
		return nil, errors.New("live: Interval, ReadTimeout and Parallel must not be negative")
	}
	if cfg.Interval == 0 {
		cfg.Interval = 100 * time.Millisecond
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 2 * time.Second
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = 2 * time.Second
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = 8
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Engine{
		store:       cfg.Store,
		interval:    cfg.Interval,
		readTimeout: cfg.ReadTimeout,
		refresh:     cfg.Refresh,
		parallel:    cfg.Parallel,
		decorator:   cfg.Decorator,
		onWatch:     cfg.OnWatch,
		others:      cfg.OtherViewers,
		now:         cfg.Now,
		log:         cfg.Logger,
		wake:        make(chan struct{}, 1),
		boards:      make(map[string]*board),
		conns:       make(map[*Outbox]map[string]*sub),
	}, nil
}

// Run refreshes dirty boards and hands their frames to the Outboxes until ctx
// is done, then returns nil. It must not be called twice at once.
func (e *Engine) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return errors.New("live: Run is already running")
	}
	defer e.running.Store(false)
	t := time.NewTimer(e.interval)
	defer t.Stop()
	for {
		t.Reset(e.tick(ctx))
		select {
		case <-ctx.Done():
			return nil
		case <-e.wake:
		case <-t.C:
		}
	}
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	s := Stats{Reads: e.reads.Load(), Errors: e.errs.Load(), Encoded: e.encoded.Load()}
	e.mu.Lock()
	defer e.mu.Unlock()
	s.Boards = len(e.boards)
	for _, b := range e.boards {
		s.Views += len(b.views)
		for _, subs := range b.topSubs {
			s.TopSubs += subs.len()
		}
		for _, ct := range b.cohorts {
			for _, subs := range ct.subs {
				s.TopSubs += subs.len()
			}
		}
		for _, v := range b.views {
			s.Watchers += v.watchers.len()
		}
	}
	return s
}

// unlock releases e.mu and wakes Run if something became dirty meanwhile.
func (e *Engine) unlock() {
	kick := e.kick
	e.kick = false
	e.mu.Unlock()
	if kick {
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

// tick runs one round: housekeeping, then one read per due board. It returns
// how long Run may wait before the next round.
func (e *Engine) tick(ctx context.Context) time.Duration {
	// Periods and states follow the store's clock, which may be far from
	// this node's (now: throttling and reads only).
	sn, snOK := e.storeNow(ctx)
	now := e.now()
	// Board frames are due within 1 s of a change (R19), whatever the
	// frame interval.
	wait := min(e.interval, lifecycleTick)
	var jobs []*job
	var finals []*finalJob
	e.mu.Lock()
	house := e.refresh > 0 && now.Sub(e.houseAt) >= e.refresh
	if house {
		e.houseAt = now
	}
	for _, b := range e.boards {
		if house {
			e.backstop(b, now)
		}
		if len(b.ahead) > 0 {
			if d := b.aheadAt.Add(e.interval).Sub(now); d > 0 {
				wait = min(wait, d)
			} else {
				e.gap(b) // a missing seq did not turn up: assume it was lost
			}
		}
		if snOK && b.cfgOK && b.cfg.Reset != rank.None && (sn.Before(b.periodStart) || !sn.Before(b.periodEnd)) {
			p := rank.PeriodAt(b.cfg, sn)
			b.periodStart, b.periodEnd = p.Start, p.End
			if p.Index != b.period {
				b.period, b.changePeriod = p.Index, p.Index
				e.markAll(b)
			}
		}
		if snOK && b.cfgOK && b.cfg.Hot() {
			if k := b.cfg.Decay.BucketAt(sn); k != b.hotBucket {
				b.hotBucket = k
				e.markAll(b)
			}
		}
		if snOK && b.cfgOK {
			if f := e.lifecycleTick(b, sn); f != nil {
				finals = append(finals, f)
			}
			e.viewersTick(b, sn, now)
		}
		if !b.needsRead(now) {
			continue
		}
		at, d := b.readPoint(now, e.interval)
		if d > 0 {
			wait = min(wait, d)
			continue
		}
		jobs = append(jobs, e.snapshot(b, now, at))
	}
	e.kick = false // this round takes care of it
	e.mu.Unlock()

	for _, f := range finals {
		e.runFinal(ctx, f, sn)
	}

	if len(jobs) == 1 {
		e.runJob(ctx, jobs[0])
	} else if len(jobs) > 1 {
		var g errgroup.Group
		g.SetLimit(e.parallel)
		for _, j := range jobs {
			g.Go(func() error { e.runJob(ctx, j); return nil })
		}
		g.Wait()
	}
	return max(wait, time.Millisecond)
}

// backstop catches change events that never arrived: if a read showed a seq
// that the change stream still has not reached one Refresh later, the board
// is re-read whole. An idle board gets one small probe read per Refresh so
// that its seq is known. Lock held.
func (e *Engine) backstop(b *board, now time.Time) {
	if b.heldSeq > b.lastSeq {
		b.seqKnown, b.lastSeq = true, b.heldSeq
		clear(b.ahead)
		e.markAll(b)
	}
	b.heldSeq = b.seenSeq
	if now.Sub(b.lastRead) >= e.refresh {
		b.probe = true
	}
}

// readFailed counts a store error and logs it, at most once per errLogEvery.
// A read cut short by ctx (shutdown) is not worth a log line.
func (e *Engine) readFailed(ctx context.Context, op, board string, err error) {
	e.errs.Add(1)
	if ctx.Err() != nil {
		return
	}
	now := e.now().UnixNano()
	last := e.errLogAt.Load()
	if now-last < int64(errLogEvery) || !e.errLogAt.CompareAndSwap(last, now) {
		e.errQuiet.Add(1)
		return
	}
	e.log.Warn("live: store read failed; retrying next tick",
		"op", op, "board", board, "err", err, "suppressed", e.errQuiet.Swap(0))
}

func (e *Engine) getBoard(parent context.Context, id string) (rank.Board, error) {
	ctx, cancel := context.WithTimeout(parent, e.readTimeout)
	defer cancel()
	e.reads.Add(1)
	b, err := e.store.Board(ctx, id)
	if err != nil {
		e.readFailed(parent, "board", id, err)
		return rank.Board{}, fmt.Errorf("live: board %s: %w", id, err)
	}
	return b, nil
}

func (e *Engine) readTop(parent context.Context, id string, sel rank.PeriodSel, n int) (rank.Page, error) {
	ctx, cancel := context.WithTimeout(parent, e.readTimeout)
	defer cancel()
	e.reads.Add(1)
	p, err := e.store.Top(ctx, id, sel, 0, n)
	if err != nil {
		e.readFailed(parent, "top", id, err)
		return rank.Page{}, fmt.Errorf("live: top %s: %w", id, err)
	}
	return p, nil
}

func (e *Engine) readRanks(parent context.Context, id string, sel rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	ctx, cancel := context.WithTimeout(parent, e.readTimeout)
	defer cancel()
	e.reads.Add(1)
	r, err := e.store.Ranks(ctx, id, sel, members, around)
	if err == nil && len(r.Members) != len(members) {
		err = fmt.Errorf("store returned %d members for %d asked", len(r.Members), len(members))
	}
	if err != nil {
		e.readFailed(parent, "ranks", id, err)
		return rank.Ranks{}, fmt.Errorf("live: ranks %s: %w", id, err)
	}
	return r, nil
}

// BoardStat is one watched board's live figures on this node.
type BoardStat struct {
	Board       string
	Subscribers int    // outboxes subscribed to its top or a view
	Frames      uint64 // frames offered to subscribers since the board was first watched here
}

// BoardStats reports every board watched on this node, for metrics. The
// count of a board that stops being watched and is watched again starts
// over (a counter reset, which Prometheus's rate() handles).
func (e *Engine) BoardStats() []BoardStat {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]BoardStat, 0, len(e.boards))
	for id, b := range e.boards {
		subs := map[*Outbox]struct{}{}
		for _, s := range b.topSubs {
			for o := range s.m {
				subs[o] = struct{}{}
			}
		}
		for _, ct := range b.cohorts {
			for _, s := range ct.subs {
				for o := range s.m {
					subs[o] = struct{}{}
				}
			}
		}
		for _, v := range b.views {
			for o := range v.watchers.m {
				subs[o] = struct{}{}
			}
		}
		for _, l := range b.ml.lists {
			for o := range l.watchers.m {
				subs[o] = struct{}{}
			}
		}
		out = append(out, BoardStat{Board: id, Subscribers: len(subs), Frames: b.framesOut})
	}
	return out
}
