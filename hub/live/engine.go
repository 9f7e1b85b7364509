// Package live is the live frame engine: throttled, latest-wins `top`,
// `view` and `members` frames (docs/protocol.md §4, R7, R8, R9, R12, §11),
// one frame kind each (kind.go).
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
	"cmp"
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

// Store is the store reads every board's frames need; the engines
// (rank.Store) satisfy it. A standings source reads through an interface
// of its own, which New asserts (cohortReader).
type Store interface {
	Board(ctx context.Context, id string) (rank.Board, error)
	Top(ctx context.Context, board string, period rank.PeriodSel, offset, limit int) (rank.Page, error)
	Ranks(ctx context.Context, board string, period rank.PeriodSel, members []string, around int) (rank.Ranks, error)
	Now(ctx context.Context) (time.Time, error)
}

// Config configures an Engine.
type Config struct {
	// Store is the source of truth for every frame. Required.
	Store Store
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
	// half an interval (profiles.go). nil: entries carry the stored names.
	Decorator rank.Decorator
	// OnWatch, when set, is told when a board gains its first subscription
	// on this node (watched true) and when it loses its last one (false):
	// the node's NATS interest follows it. It is called with the engine's
	// lock held, so calls come in the order the changes happened; it must
	// not block nor call the Engine.
	OnWatch func(board string, watched bool)
	// ListBudget bounds the ids this node's member lists read per Interval,
	// on average over every board (docs/protocol.md §11): a board's lists
	// are read only while the node has credit left, one Interval bringing
	// ListBudget ids of it, so beyond the budget the members frames slow
	// down and the store does not. A list that would take the node's union
	// past maxListPeriods times the budget is refused (BusyError). Zero
	// means DefaultListBudget; negative: no bound.
	ListBudget int
	// MaxListIDs bounds the distinct ids one member's members
	// subscriptions (Spec.Owner) list on one board on this node; a
	// subscribe past it is refused (rank.ErrBadRequest). Zero means
	// DefaultMaxListIDs; negative: no bound.
	MaxListIDs int
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

// Engine computes live frames for every subscription of one node. All methods
// are safe for concurrent use; Run must run for frames to follow changes.
type Engine struct {
	// cfg is the Config as New filled it: ListBudget and MaxListIDs are 0
	// when unbounded.
	cfg     Config
	sources []source      // standings.go: the whole board first
	wake    chan struct{} // capacity 1: a board became due for a read
	running atomic.Bool

	reads, errs, encoded atomic.Uint64
	errLogAt             atomic.Int64  // unix nanos of the last logged store error
	errQuiet             atomic.Uint64 // store errors not logged since then

	// streams records the boards' transitions and answers resumes
	// (stream.go); nil when the store keeps no streams.
	streams Streams
	flights flights // shared store calls of resumes and marks

	mu     sync.Mutex // guards everything below and all board and view state
	boards map[string]*board
	conns  map[*Outbox]map[string]*sub
	kick   bool // something became dirty: wake Run after unlocking
	// finals keeps final frames for resumes (stream.go).
	finals map[finalKey]keptFinal
	// listIDs is the ids the boards' member lists hold, over every board;
	// listCredit, the ids they may read now (members.go), refilled by
	// ListBudget per Interval up to ListBudget, and spent by each read of
	// a board's union, into debt.
	listIDs, listCredit int
	creditAt            time.Time
	houseAt             time.Time // last backstop check
}

// New validates cfg, fills defaults and returns an Engine.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("live: Config.Store is required")
	}
	if cfg.Interval < 0 || cfg.ReadTimeout < 0 || cfg.Parallel < 0 {
		return nil, errors.New("live: Interval, ReadTimeout and Parallel must not be negative")
	}
	cfg.Interval = cmp.Or(cfg.Interval, 100*time.Millisecond)
	cfg.ReadTimeout = cmp.Or(cfg.ReadTimeout, 2*time.Second)
	cfg.Refresh = cmp.Or(cfg.Refresh, 2*time.Second)
	cfg.Parallel = cmp.Or(cfg.Parallel, 8)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.ListBudget = orDefault(cfg.ListBudget, DefaultListBudget)
	cfg.MaxListIDs = orDefault(cfg.MaxListIDs, DefaultMaxListIDs)
	srcs, err := sources(cfg.Store)
	if err != nil {
		return nil, err
	}
	streams, _ := cfg.Store.(Streams)
	return &Engine{
		cfg:     cfg,
		streams: streams,
		finals:  make(map[finalKey]keptFinal),
		sources: srcs,
		wake:    make(chan struct{}, 1),
		boards:  make(map[string]*board),
		conns:   make(map[*Outbox]map[string]*sub),
	}, nil
}

// orDefault is v, or def when v is zero, or 0 (none) when v is negative.
func orDefault(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// Run refreshes dirty boards and hands their frames to the Outboxes until ctx
// is done, then returns nil. It must not be called twice at once.
func (e *Engine) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return errors.New("live: Run is already running")
	}
	defer e.running.Store(false)
	t := time.NewTimer(e.cfg.Interval)
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

func (e *Engine) now() time.Time { return e.cfg.Now() }

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
	if snOK {
		e.markDue(ctx, sn) // recorded before anyone is told (stream.go)
	}
	now := e.now()
	// Board frames are due within 1 s of a change (R19), whatever the
	// frame interval.
	wait := min(e.cfg.Interval, lifecycleTick)
	var jobs []*job
	var finals []*finalJob
	e.mu.Lock()
	house := e.cfg.Refresh > 0 && now.Sub(e.houseAt) >= e.cfg.Refresh
	if house {
		e.houseAt = now
	}
	e.refill(now)
	for _, b := range e.boards {
		if house {
			e.backstop(b, now)
		}
		if snOK && b.cfgOK {
			if f := e.storeTick(b, sn, now); f != nil {
				finals = append(finals, f)
			}
		}
		j, d := e.schedule(b, now)
		if j != nil {
			jobs = append(jobs, j)
		}
		if d > 0 {
			wait = min(wait, d)
		}
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
		g.SetLimit(e.cfg.Parallel)
		for _, j := range jobs {
			g.Go(func() error { e.runJob(ctx, j); return nil })
		}
		g.Wait()
	}
	return max(wait, time.Millisecond)
}

// refill adds to the list credit what the time since the last refill
// brings (ListBudget per Interval), up to ListBudget. Lock held.
func (e *Engine) refill(now time.Time) {
	if d := now.Sub(e.creditAt); d > 0 {
		// Debt is at most the node's union, maxListPeriods budgets: a
		// longer gap refills it all (and cannot overflow).
		d = min(d, (maxListPeriods+1)*e.cfg.Interval)
		e.listCredit = min(e.listCredit+int(int64(e.cfg.ListBudget)*int64(d)/int64(e.cfg.Interval)), e.cfg.ListBudget)
		e.creditAt = now
	}
}

// storeTick follows the store's clock sn on b: a period rollover or a hot
// board's new bucket marks every frame (no change event says so), and the
// lifecycle and viewers are compared with what subscribers were told (it
// returns the final frames due). Lock held.
func (e *Engine) storeTick(b *board, sn, now time.Time) *finalJob {
	if b.cfg.Reset != rank.None && (sn.Before(b.periodStart) || !sn.Before(b.periodEnd)) {
		p := rank.PeriodAt(b.cfg, sn)
		b.periodStart, b.periodEnd = p.Start, p.End
		if p.Index != b.period {
			b.period, b.changePeriod = p.Index, p.Index
			b.markAll(b.unseq())
		}
	}
	if b.cfg.Hot() {
		if k := b.cfg.Decay.BucketAt(sn); k != b.hotBucket {
			b.hotBucket = k
			b.markAll(b.unseq())
		}
	}
	f := e.lifecycleTick(b, b.phaseNow(sn))
	e.viewersTick(b, sn, now)
	return f
}

// schedule returns b's job when b is due for a read now, and how long the
// tick may wait for b (0: no need to come back). Lock held.
func (e *Engine) schedule(b *board, now time.Time) (*job, time.Duration) {
	var wait time.Duration
	if len(b.ahead) > 0 {
		if d := b.aheadAt.Add(e.cfg.Interval).Sub(now); d > 0 {
			wait = d
		} else {
			b.gap() // a missing seq did not turn up: assume it was lost
		}
	}
	if b.cfgOK && now.Sub(b.cfgAt) < cfgTTL && !b.probe && !b.dirty() {
		return nil, wait
	}
	at, d := b.readPoint(now, e.cfg.Interval)
	if d > 0 {
		if wait == 0 || d < wait {
			wait = d
		}
		return nil, wait
	}
	return e.snapshot(b, now, at), wait
}

// backstop catches change events that never arrived: if a read showed a seq
// that the change stream still has not reached one Refresh later, the board
// is re-read whole. An idle board gets one small probe read per Refresh so
// that its seq is known. Lock held.
func (e *Engine) backstop(b *board, now time.Time) {
	if b.heldSeq > b.lastSeq {
		b.seqKnown, b.lastSeq, b.maxSeq = true, b.heldSeq, max(b.maxSeq, b.heldSeq)
		clear(b.ahead)
		b.markAll(b.heldSeq)
	}
	b.heldSeq = b.seenSeq
	if now.Sub(b.lastRead) >= e.cfg.Refresh {
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
	e.cfg.Logger.Warn("live: store read failed; retrying next tick",
		"op", op, "board", board, "err", err, "suppressed", e.errQuiet.Swap(0))
}

// call makes one store read, bounded by ReadTimeout, counting it and its
// failure.
func (e *Engine) call(parent context.Context, op, board string, read func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(parent, e.cfg.ReadTimeout)
	defer cancel()
	e.reads.Add(1)
	if err := read(ctx); err != nil {
		e.readFailed(parent, op, board, err)
		return fmt.Errorf("live: %s %s: %w", op, board, err)
	}
	return nil
}

func (e *Engine) getBoard(ctx context.Context, id string) (b rank.Board, err error) {
	err = e.call(ctx, "board", id, func(ctx context.Context) error {
		b, err = e.cfg.Store.Board(ctx, id)
		return err
	})
	return b, err
}

// readTop reads the first n entries of a group of src.
func (e *Engine) readTop(ctx context.Context, src source, board string, sel rank.PeriodSel, group string, n int) (p rank.Page, err error) {
	op, name := "top", board
	if group != "" {
		op, name = src.name()+" top", board+"/"+group
	}
	err = e.call(ctx, op, name, func(ctx context.Context) error {
		p, err = src.top(ctx, board, sel, group, n)
		return err
	})
	return p, err
}

func (e *Engine) readRanks(ctx context.Context, id string, sel rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	return e.ranksWith(ctx, e.cfg.Store.Ranks, id, sel, members, around)
}

// ranksWith is a Ranks-shaped read (the board's, or a group's) through
// call, checking that it answers every member asked.
func (e *Engine) ranksWith(ctx context.Context, read func(context.Context, string, rank.PeriodSel, []string, int) (rank.Ranks, error),
	id string, sel rank.PeriodSel, members []string, around int) (r rank.Ranks, err error) {
	err = e.call(ctx, "ranks", id, func(ctx context.Context) error {
		r, err = read(ctx, id, sel, members, around)
		if err == nil && len(r.Members) != len(members) {
			err = fmt.Errorf("store returned %d members for %d asked", len(r.Members), len(members))
		}
		return err
	})
	return r, err
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
		out = append(out, BoardStat{Board: id, Subscribers: b.nsubs, Frames: b.framesOut})
	}
	return out
}
