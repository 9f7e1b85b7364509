// Package memstore is the in-memory rank engine: one order-statistic B+tree
// per board period plus a member map, a lock per board, and an idempotency
// table with expiry. It implements the same semantics as the Redis engine
// (rank/ranktest holds them equal) for a single gateway node.
//
// DESIGN.md names an order-statistic skip list; this engine deviates on
// measurement: at a million members a skip list lookup chases a pointer
// per level, each a cache miss. The B+tree (btree.go: 64 entries a node, a
// count per child) keeps the same O(log n) apply and rank and O(log n + k)
// pages but touches a few nodes a lookup, the upper ones cached
// (docs/performance.md).
//
// Lock order: Store.mu before board.mu; no other lock is held with either.
//
// DeleteBoard drops everything, the change seq included: a re-created board
// starts again at seq 1, as the Redis engine does when its keys are deleted.
package memstore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// Config configures a Store. The zero value is ready to use.
type Config struct {
	// Now is the store's clock: period boundaries and idempotency expiry.
	// nil = time.Now.
	Now func() time.Time
	// Logger receives debug lines about sweeps. nil = discard.
	Logger *slog.Logger
	// SweepInterval is how often a background sweep removes expired
	// idempotency records and periods of boards that get no writes (writes
	// sweep as they go). 0 = one minute; negative = no background sweep.
	SweepInterval time.Duration
	// EraseChunk is how many items of a board's idempotency record queue
	// an erasure looks at under one hold of the board's lock (erase.go).
	// 0 = DefaultEraseChunk.
	EraseChunk int
}

// DefaultEraseChunk is Config.EraseChunk's default: a millisecond or so.
const DefaultEraseChunk = 16384

// Store is the memory engine. All methods are safe for concurrent use.
type Store struct {
	now func() time.Time
	// hooks: the Sink hears one change per batch, on the submitting
	// goroutine, after the board's lock is released; each Apply is a batch
	// of one for Complete.
	hooks  rank.Hooks
	log    *slog.Logger
	chunk  int // Config.EraseChunk
	closed atomic.Bool
	stop   chan struct{} // closed by Close to end the sweeper
	done   chan struct{} // closed when the sweeper has ended

	mu     sync.RWMutex // guards boards (the map, not the boards)
	boards map[string]*board

	profiles profileTable // profiles.go

	global map[string]rank.Ban // global bans by member (moderation.go), under mu

	outcomes sync.Pool // *outcome, for Hooks.Complete (Apply)

	*Outbox // webhooks and their deliveries (webhook.go)
}

var _ rank.Store = (*Store)(nil)

// sweepChunk bounds the records one sweep step removes while holding a
// board's lock, so a mass expiry never stalls writers for long.
const (
	sweepChunk      = 4096
	sweepPerApply   = 8 // an apply adds one record and removes up to this many
	defaultInterval = time.Minute
)

// New returns an empty store that calls back into hooks.
func New(hooks rank.Hooks, cfg Config) (*Store, error) {
	s := &Store{
		now:    cfg.Now,
		hooks:  hooks,
		log:    cfg.Logger,
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		boards: map[string]*board{},
		global: map[string]rank.Ban{},
		chunk:  cfg.EraseChunk,
	}
	if s.chunk <= 0 {
		s.chunk = DefaultEraseChunk
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.Outbox = NewOutbox(s.now)
	s.outcomes.New = newOutcome
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	interval := cfg.SweepInterval
	if interval == 0 {
		interval = defaultInterval
	}
	if interval < 0 {
		close(s.done)
		return s, nil
	}
	go s.sweeper(interval)
	return s, nil
}

func (s *Store) sweeper(interval time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.Sweep()
		}
	}
}

// Sweep removes expired idempotency records and expired periods of every
// board now. The background sweeper calls it; tests may too.
func (s *Store) Sweep() {
	s.mu.RLock()
	bs := make([]*board, 0, len(s.boards))
	for _, b := range s.boards {
		bs = append(bs, b)
	}
	s.mu.RUnlock()
	for _, b := range bs {
		for {
			b.mu.Lock()
			now := s.now()
			n := b.sweepIdem(now, sweepChunk)
			if n < sweepChunk {
				b.sweepGains(now)
				dropped := b.dropExpiredPeriods(now)
				if n > 0 || dropped > 0 {
					s.log.Debug("memstore: sweep", "board", b.cfg.ID, "records", n, "periods", dropped)
				}
			}
			b.mu.Unlock()
			if n < sweepChunk {
				break
			}
		}
	}
}

var errClosed = fmt.Errorf("%w: memstore closed", rank.ErrUnavailable)

// lookup finds a live board by id.
func (s *Store) lookup(ctx context.Context, id string) (*board, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	b := s.boards[id]
	s.mu.RUnlock()
	if b != nil { // its id was validated by PutBoard; skip the regexp on the hot path
		return b, nil
	}
	if !rank.ValidBoardID(id) {
		return nil, rank.ErrInvalidBoard
	}
	return nil, rank.ErrUnknownBoard
}

// PutBoard creates or replaces a board config. A change of order or
// tiebreak re-keys the board's data for the new rules.
func (s *Store) PutBoard(ctx context.Context, cfg rank.Board) (rank.Board, error) {
	if s.closed.Load() {
		return rank.Board{}, fmt.Errorf("memstore: put board %s: %w", cfg.ID, errClosed)
	}
	if err := ctx.Err(); err != nil {
		return rank.Board{}, fmt.Errorf("memstore: put board %s: %w", cfg.ID, err)
	}
	if err := cfg.Validate(); err != nil {
		return rank.Board{}, fmt.Errorf("memstore: put board %s: %w", cfg.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cfg, err := s.resolve(cfg) // group and source rules (derived.go)
	if err != nil {
		return rank.Board{}, fmt.Errorf("memstore: put board %s: %w", cfg.ID, err)
	}
	if b := s.boards[cfg.ID]; b != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.cfg.StateAt(s.now()) == rank.Final {
			return rank.Board{}, fmt.Errorf("memstore: put board %s: %w: the board is final", cfg.ID, rank.ErrBoardClosed)
		}
		if err := rank.CheckShardsChange(b.cfg, cfg); err != nil {
			return rank.Board{}, fmt.Errorf("memstore: put board %s: %w", cfg.ID, err)
		}
		if err := rank.CheckDecayChange(b.cfg, cfg); err != nil {
			return rank.Board{}, fmt.Errorf("memstore: put board %s: %w", cfg.ID, err)
		}
		if err := rank.CheckCohortChange(b.cfg, cfg); err != nil {
			return rank.Board{}, fmt.Errorf("memstore: put board %s: %w", cfg.ID, err)
		}
		if err := rank.CheckRegionsChange(b.cfg, cfg); err != nil {
			return rank.Board{}, fmt.Errorf("memstore: put board %s: %w", cfg.ID, err)
		}
		b.reconfigure(cfg)
		return cfg, nil
	}
	nb := newBoard(cfg)
	// A new board starts with every global ban (§7): it has no data to hide.
	now := s.now()
	for m, ban := range s.global {
		if ban.Live(now) {
			nb.gbans[m] = ban
		}
	}
	nb.resetBanExp()
	s.boards[cfg.ID] = nb
	s.link(nb, now)
	return cfg, nil
}

// GetBoard returns a board's config.
func (s *Store) GetBoard(ctx context.Context, id string) (rank.Board, error) {
	b, err := s.lookup(ctx, id)
	if err != nil {
		return rank.Board{}, fmt.Errorf("memstore: get board %s: %w", id, err)
	}
	v := b.view.Load()
	if v.deleted {
		return rank.Board{}, fmt.Errorf("memstore: get board %s: %w", id, rank.ErrUnknownBoard)
	}
	return v.cfg, nil
}

// CachedBoard implements rank.BoardCache: every config is in memory here,
// so the hub's read of it on each score needs no context (and no timeout
// to build for one). The view is published whole and never changed after,
// so it is shared as it is.
func (s *Store) CachedBoard(id string) (*rank.Board, bool) {
	if s.closed.Load() {
		return nil, false
	}
	s.mu.RLock()
	b := s.boards[id]
	s.mu.RUnlock()
	if b == nil {
		return nil, false
	}
	v := b.view.Load()
	if v.deleted {
		return nil, false
	}
	return &v.cfg, true
}

// Board is GetBoard: the memory engine's configs are never stale.
func (s *Store) Board(ctx context.Context, id string) (rank.Board, error) {
	return s.GetBoard(ctx, id)
}

// Forget does nothing: there is no cache to drop.
func (s *Store) Forget(string) {}

// Boards lists every board's config, sorted by id.
func (s *Store) Boards(ctx context.Context) ([]rank.Board, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("memstore: boards: %w", errClosed)
	}
	s.mu.RLock()
	bs := make([]*board, 0, len(s.boards))
	for _, b := range s.boards {
		bs = append(bs, b)
	}
	s.mu.RUnlock()
	out := make([]rank.Board, 0, len(bs))
	for _, b := range bs {
		b.mu.RLock()
		if !b.deleted {
			out = append(out, b.cfg)
		}
		b.mu.RUnlock()
	}
	slices.SortFunc(out, func(x, y rank.Board) int {
		switch {
		case x.ID < y.ID:
			return -1
		case x.ID > y.ID:
			return 1
		}
		return 0
	})
	return out, nil
}

// DeleteBoard removes a board and all its data.
func (s *Store) DeleteBoard(ctx context.Context, id string) error {
	if _, err := s.lookup(ctx, id); err != nil {
		return fmt.Errorf("memstore: delete board %s: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.boards[id]
	if b == nil { // deleted since the lookup
		return fmt.Errorf("memstore: delete board %s: %w", id, rank.ErrUnknownBoard)
	}
	if err := s.unlink(b); err != nil {
		return fmt.Errorf("memstore: delete board %s: %w", id, err)
	}
	delete(s.boards, id)
	b.mu.Lock()
	b.clear()
	b.mu.Unlock()
	return nil
}

// Count is the number of members in the board's current period.
func (s *Store) Count(ctx context.Context, id string) (int64, error) {
	b, err := s.lookup(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("memstore: count %s: %w", id, err)
	}
	now := s.rlock(b)
	defer b.mu.RUnlock()
	if b.deleted {
		return 0, fmt.Errorf("memstore: count %s: %w", id, rank.ErrUnknownBoard)
	}
	z := b.readable(rank.PeriodAt(b.cfg, now).Index, now)
	if z == nil {
		return 0, nil
	}
	return int64(z.tr.len()), nil
}

// Apply applies one event atomically and idempotently and completes it
// inline: the sink and done run on the caller's goroutine before Apply
// returns.
func (s *Store) Apply(ctx context.Context, e rank.Event, done rank.Done) {
	r, err := s.apply(ctx, e)
	if err == nil && s.hooks.Sink != nil {
		if c, ok := rank.ChangeOf(e, r); ok {
			s.hooks.Sink([]rank.Change{c})
		}
	}
	if s.hooks.Complete == nil {
		done(r, err)
		return
	}
	o := s.outcomes.Get().(*outcome)
	o.done, o.r, o.err = done, r, err
	s.hooks.Complete(o.run)
	*o = outcome{run: o.run}
	s.outcomes.Put(o)
}

// outcome is one Apply's batch of one for Hooks.Complete: its run is bound
// once, when the pool makes it, so completing costs no closure per event.
type outcome struct {
	done rank.Done
	r    rank.Result
	err  error
	run  func()
}

func newOutcome() any {
	o := &outcome{}
	o.run = func() { o.done(o.r, o.err) }
	return o
}

func (s *Store) apply(ctx context.Context, e rank.Event) (rank.Result, error) {
	if err := ctx.Err(); err != nil {
		return rank.Result{}, fmt.Errorf("memstore: apply %s: %w", e.Board, err) // not applied
	}
	b, err := s.lookup(ctx, e.Board)
	if err != nil {
		return rank.Result{}, fmt.Errorf("memstore: apply %s: %w", e.Board, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.deleted {
		return rank.Result{}, fmt.Errorf("memstore: apply %s: %w", e.Board, rank.ErrUnknownBoard)
	}
	now := s.now()
	r, err := b.apply(e, now)
	if err != nil {
		b.keepVerdict(e, now, err) // §16: a refused verdict still stands (integrity.go)
		return rank.Result{}, fmt.Errorf("memstore: apply %s: %w", e.Board, err)
	}
	b.maintain(e, r, now) // derived boards, in the same step (derived.go)
	return r, nil
}

// Top reads entries [offset, offset+limit) of a period.
func (s *Store) Top(ctx context.Context, id string, sel rank.PeriodSel, offset, limit int) (rank.Page, error) {
	b, err := s.lookup(ctx, id)
	if err != nil {
		return rank.Page{}, fmt.Errorf("memstore: top %s: %w", id, err)
	}
	if offset < 0 || limit < 0 {
		return rank.Page{}, fmt.Errorf("memstore: top %s: %w: offset %d and limit %d must not be negative", id, rank.ErrBadRequest, offset, limit)
	}
	now := s.rlock(b)
	defer b.mu.RUnlock()
	if b.deleted {
		return rank.Page{}, fmt.Errorf("memstore: top %s: %w", id, rank.ErrUnknownBoard)
	}
	idx, err := sel.Resolve(b.cfg, now)
	if err != nil {
		return rank.Page{}, fmt.Errorf("memstore: top %s: %w", id, err)
	}
	if err := b.cfg.CheckWindow(offset, limit); err != nil {
		return rank.Page{}, fmt.Errorf("memstore: top %s: %w", id, err)
	}
	pg := rank.Page{Board: id, Period: idx, Offset: offset, Seq: b.seq, Decimals: b.cfg.Decimals()}
	if z := b.readable(idx, now); z != nil {
		pg.Total = int64(z.tr.len())
		pg.Entries = b.entries(z, offset+1, limit)
	}
	return pg, nil
}

// Ranks reads several members with their neighbours in one snapshot.
func (s *Store) Ranks(ctx context.Context, id string, sel rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	b, err := s.lookup(ctx, id)
	if err != nil {
		return rank.Ranks{}, fmt.Errorf("memstore: ranks %s: %w", id, err)
	}
	whole := around == rank.BoardRanks
	if whole {
		around = 0
	}
	if around < 0 {
		return rank.Ranks{}, fmt.Errorf("memstore: ranks %s: %w: around %d is negative", id, rank.ErrBadRequest, around)
	}
	now := s.rlock(b)
	defer b.mu.RUnlock()
	if b.deleted {
		return rank.Ranks{}, fmt.Errorf("memstore: ranks %s: %w", id, rank.ErrUnknownBoard)
	}
	idx, err := sel.Resolve(b.cfg, now)
	if err != nil {
		return rank.Ranks{}, fmt.Errorf("memstore: ranks %s: %w", id, err)
	}
	out := rank.Ranks{Board: id, Period: idx, Seq: b.seq, Members: make([]rank.MemberRank, len(members)), Decimals: b.cfg.Decimals()}
	z := b.readable(idx, now)
	if z != nil {
		out.Total = int64(z.tr.len())
	}
	for _, m := range members {
		// A member on the board was validated when it was written.
		if (z == nil || z.members[m] == nil) && !rank.ValidMemberID(m) {
			return rank.Ranks{}, fmt.Errorf("memstore: ranks %s: %w: %q", id, rank.ErrInvalidMember, m)
		}
	}
	for i, m := range members {
		out.Members[i] = rank.MemberRank{Member: m}
		if z == nil {
			continue
		}
		n := z.members[m]
		if n == nil {
			continue
		}
		if z.co != nil && !whole {
			out.Members[i] = b.cohortRank(z, n, around)
			continue
		}
		pos := z.tr.rankOf(&n.key)
		lo := max(1, pos-around)
		hi := min(z.tr.len(), pos+around)
		out.Members[i] = rank.MemberRank{
			Member: m,
			Found:  true,
			Rank:   b.rankIn(z, n, pos),
			Score:  n.score,
			Name:   b.names[m],
			Around: b.entries(z, lo, hi-lo+1),
		}
		if !whole {
			b.regionRank(z, n, &out.Members[i]) // region.go
		}
	}
	return out, nil
}

// History reads a member's last applied events in a period, newest first.
func (s *Store) History(ctx context.Context, id string, sel rank.PeriodSel, member string) ([]rank.HistoryEvent, error) {
	b, err := s.lookup(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("memstore: history %s: %w", id, err)
	}
	if err := rank.CheckMemberID(member); err != nil {
		return nil, fmt.Errorf("memstore: history %s: %w", id, err)
	}
	now := s.rlock(b)
	defer b.mu.RUnlock()
	if b.deleted {
		return nil, fmt.Errorf("memstore: history %s: %w", id, rank.ErrUnknownBoard)
	}
	idx, err := sel.Resolve(b.cfg, now)
	if err != nil {
		return nil, fmt.Errorf("memstore: history %s: %w", id, err)
	}
	out := []rank.HistoryEvent{}
	if z := b.readable(idx, now); z != nil {
		h := z.history[member]
		for i := len(h) - 1; i >= 0; i-- {
			out = append(out, h[i])
		}
	}
	return out, nil
}

// Now is the store's clock.
func (s *Store) Now(context.Context) (time.Time, error) {
	if s.closed.Load() {
		return time.Time{}, fmt.Errorf("memstore: now: %w", errClosed)
	}
	return s.now(), nil
}

// Ping reports nil while the store is open.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("memstore: ping: %w", errClosed)
	}
	return nil
}

// Close stops the sweeper; every later call fails with rank.ErrUnavailable.
// Closing twice is harmless.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	close(s.stop)
	<-s.done
	return nil
}
