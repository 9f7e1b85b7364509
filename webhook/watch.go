package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// Every node runs a Watcher beside its Deliverer: it watches every board's
// schedule on the store's clock (rank.Board.Facts) and appends what became
// true to the outbox, each fact guarded by its marker so that however many
// nodes notice it, it is written once. It looks at all boards, not only the
// ones a node has subscribers for: a board nobody watches still ends. A
// webhook created while a fact is news and no other webhook wanted it
// hears of it.

// WatchStore is what the Watcher reads and writes of the store.
type WatchStore interface {
	Webhooks(ctx context.Context) ([]rank.Webhook, error)
	AppendOutbox(ctx context.Context, marker string, keep time.Duration, ev rank.OutboxEvent) (bool, error)
	Now(ctx context.Context) (time.Time, error)
	Boards(ctx context.Context) ([]rank.Board, error)
	GetBoard(ctx context.Context, id string) (rank.Board, error)
	Top(ctx context.Context, board string, period rank.PeriodSel, offset, limit int) (rank.Page, error)
	Cohorts(ctx context.Context, board string, period rank.PeriodSel) ([]string, error)
	CohortTop(ctx context.Context, board string, period rank.PeriodSel, cohort string, offset, limit int) (rank.Page, error)
}

// DefaultWatch is WatchConfig.Every's default.
const DefaultWatch = time.Minute

// WatchConfig tunes a Watcher; its zero value is usable.
type WatchConfig struct {
	// Every bounds how long the watcher sleeps between reads of the store:
	// it wakes when the next board or period becomes final or changes
	// state, when told of a board or webhook change, and at least every
	// Every, when it re-reads the webhooks and lists every board again (a
	// webhook created on another node, a board event the bus lost); zero =
	// DefaultWatch.
	Every time.Duration
	// Decorator gives the final standings their profile fields; nil: the
	// stored names only.
	Decorator rank.Decorator
	Logger    *slog.Logger // nil = discard
}

// markerKeep outlasts the span in which a fact is news, so a marker is
// never gone while a node could still append its fact.
const markerKeep = rank.RetryFor + time.Hour

// watchRetry is how soon the watcher tries again after a failed read or
// append.
const watchRetry = time.Second

// Watcher appends the facts of every board to the outbox. It keeps every
// board's config and the moment the next fact can become true, and sleeps
// until then: the store is read when a fact is due, when a board or a
// webhook changes, and every Every (the webhooks, and every board again, in
// case a board event was lost), not once a tick per board. Its methods are
// safe for concurrent use; Run runs once.
type Watcher struct {
	store WatchStore
	cfg   WatchConfig
	wake  chan struct{} // a board or webhook changed; buffered, one pending wake
	mu    sync.Mutex    // guards changed and relist
	// changed is the boards created, changed or deleted since the last
	// look; relist, that board events may have been lost.
	changed map[string]bool
	relist  bool

	// Owned by Run's goroutine:
	// done is the markers this node has found written, and when they stop
	// mattering.
	done   map[string]time.Time
	boards map[string]rank.Board // nil: to be listed
	listed time.Time             // when boards was listed (this node's clock)
	hooks  []rank.Webhook        // as of the last look
	// due is the store-clock moment the next fact can become true; zero:
	// none will. stale: look at every board at the next tick anyway (the
	// boards or webhooks changed, or an append failed).
	due   time.Time
	stale bool
}

// NewWatcher returns a Watcher of store; it hears of board changes from
// now on, and looks at the store once Run runs.
func NewWatcher(store WatchStore, cfg WatchConfig) *Watcher {
	if cfg.Every <= 0 {
		cfg.Every = DefaultWatch
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Watcher{store: store, cfg: cfg, wake: make(chan struct{}, 1),
		changed: map[string]bool{}, done: map[string]time.Time{}}
}

// BoardChanged is told of a board created, changed or deleted on this node
// or another ("" = any board: the bus may have lost board events), so the
// watcher re-reads it now rather than at its next relist.
func (w *Watcher) BoardChanged(board string) {
	w.mark(board)
	w.WebhookChanged()
}

// WebhookChanged is told of a webhook stored on this node
// (api.WebhookListener): the watcher looks again at once, so the facts
// still news reach it now rather than at the next Every.
func (w *Watcher) WebhookChanged() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// mark notes board to be read again at the next look ("" = every board).
func (w *Watcher) mark(board string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if board == "" {
		w.relist = true
	} else {
		w.changed[board] = true
	}
}

// takeChanged returns and clears what BoardChanged was told.
func (w *Watcher) takeChanged() (map[string]bool, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	changed, relist := w.changed, w.relist
	w.changed, w.relist = map[string]bool{}, false
	return changed, relist
}

// Run appends facts until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.wake:
		}
		wait, err := w.tick(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.cfg.Logger.Warn("webhook: watch", "err", err)
		}
		t.Reset(wait)
	}
}

// tick looks at what changed, and at every board when a fact is due, and
// returns how long the watcher may sleep.
func (w *Watcher) tick(ctx context.Context) (time.Duration, error) {
	hooks, err := w.store.Webhooks(ctx)
	if err != nil {
		return watchRetry, err
	}
	if len(hooks) == 0 {
		// Nothing to tell, nothing to read: the boards are listed afresh
		// when a webhook appears.
		w.boards, w.hooks = nil, nil
		w.takeChanged()
		return w.cfg.Every, nil
	}
	now, err := w.store.Now(ctx)
	if err != nil {
		return watchRetry, err
	}
	if err := w.refresh(ctx); err != nil {
		return watchRetry, err
	}
	if !slices.EqualFunc(hooks, w.hooks, sameHook) {
		w.stale = true // a new webhook hears of the facts still news
	}
	w.hooks = hooks
	if !w.stale && (w.due.IsZero() || now.Before(w.due)) {
		return w.sleep(now), nil
	}
	for m, until := range w.done {
		if now.After(until) {
			delete(w.done, m)
		}
	}
	w.stale = true // until every board was looked at
	var due time.Time
	for _, b := range w.boards {
		for _, f := range b.Facts(now) {
			if !wanted(hooks, f.Event, b.ID) {
				continue // not marked: a webhook created while it is news still hears of it
			}
			if err := w.append(ctx, b, f); err != nil {
				return watchRetry, err
			}
		}
		if next := b.NextFact(now); !next.IsZero() && (due.IsZero() || next.Before(due)) {
			due = next
		}
	}
	w.due, w.stale = due, false
	return w.sleep(now), nil
}

// refresh brings w.boards up to date: every board when the list is
// missing or Every old or board events may have been lost, else the
// boards BoardChanged named. Any change makes every board looked at.
func (w *Watcher) refresh(ctx context.Context) error {
	changed, relist := w.takeChanged()
	if w.boards == nil || relist || time.Since(w.listed) >= w.cfg.Every {
		listed := time.Now()
		all, err := w.store.Boards(ctx)
		if err != nil {
			w.mark("") // listed again at the retry
			return err
		}
		w.boards, w.listed, w.stale = make(map[string]rank.Board, len(all)), listed, true
		for _, b := range all {
			w.boards[b.ID] = b
		}
		return nil
	}
	for id := range changed {
		w.stale = true
		// GetBoard, not Board: the dev store's Board would create a
		// deleted board again.
		b, err := w.store.GetBoard(ctx, id)
		switch {
		case errors.Is(err, rank.ErrUnknownBoard), errors.Is(err, rank.ErrInvalidBoard):
			delete(w.boards, id) // gone, or never a board: not read again
		case err != nil:
			for id := range changed {
				w.mark(id) // read again at the retry
			}
			return err
		default:
			w.boards[id] = b
		}
	}
	return nil
}

// sleep is how long the watcher may sleep at store time now: until the
// next fact is due or the next relist, whichever is first.
func (w *Watcher) sleep(now time.Time) time.Duration {
	d := w.cfg.Every - time.Since(w.listed)
	if !w.due.IsZero() {
		d = min(d, w.due.Sub(now))
	}
	return max(d, 0)
}

// sameHook: a and b want the same events of the same boards.
func sameHook(a, b rank.Webhook) bool {
	return a.ID == b.ID && slices.Equal(a.Events, b.Events) && slices.Equal(a.Boards, b.Boards)
}

func wanted(hooks []rank.Webhook, event, board string) bool {
	for _, h := range hooks {
		if h.Wants(event, board) {
			return true
		}
	}
	return false
}

// append writes f to the outbox unless this node already saw it written.
func (w *Watcher) append(ctx context.Context, b rank.Board, f rank.Fact) error {
	if _, seen := w.done[f.Marker]; seen {
		return nil
	}
	var data any = map[string]string{"state": string(f.State)}
	decimals := 0
	if f.Final {
		d, total, dec, err := w.standings(ctx, b, f)
		if err != nil {
			return err
		}
		if f.SkipEmpty && total == 0 {
			w.remember(f)
			return nil
		}
		data, decimals = d, dec
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("webhook: data of %s: %w", b.ID, err)
	}
	raw = proto.Decimalize(raw, decimals) // a hot board's scores, as REST prints them
	appended, err := w.store.AppendOutbox(ctx, f.Marker, markerKeep, rank.OutboxEvent{Event: f.Event, Board: b.ID, TS: f.At, Data: raw})
	if err != nil {
		return fmt.Errorf("webhook: append %s of %s: %w", f.Event, b.ID, err)
	}
	if appended {
		w.cfg.Logger.Info("webhook: event", "event", f.Event, "board", b.ID)
	}
	w.remember(f)
	return nil
}

// remember keeps f's marker as done for as long as it could matter.
func (w *Watcher) remember(f rank.Fact) {
	w.done[f.Marker] = f.At.Add(markerKeep)
}

// finalData is a final event's data (§13).
type finalData struct {
	Period    *int64       `json:"period,omitempty"`
	Standings []rank.Entry `json:"standings"`
	Total     int64        `json:"total"`
	Rewards   []rank.Award `json:"rewards"`
}

// cohortFinalData is a final event's data on a cohort board (§13): the
// standings and rewards of each cohort, ranks within it.
type cohortFinalData struct {
	Period  *int64        `json:"period,omitempty"`
	Total   int64         `json:"total"`
	Cohorts []cohortFinal `json:"cohorts"`
}

type cohortFinal struct {
	Cohort    string       `json:"cohort"`
	Standings []rank.Entry `json:"standings"`
	Rewards   []rank.Award `json:"rewards"`
}

// standings reads a final period's standings and rewards: the board's,
// or on a cohort board each cohort's. It returns the data, the board's
// total and the scores' decimals.
func (w *Watcher) standings(ctx context.Context, b rank.Board, f rank.Fact) (any, int64, int, error) {
	var sel rank.PeriodSel
	var period *int64
	if b.Reset != rank.None {
		sel = rank.PeriodSel(strconv.FormatInt(f.Period, 10))
		period = &f.Period
	}
	if b.Cohorted() {
		return w.cohortStandings(ctx, b, sel, period)
	}
	page, err := w.store.Top(ctx, b.ID, sel, 0, b.FinalReach())
	if err != nil {
		return nil, 0, 0, fmt.Errorf("webhook: final standings of %s: %w", b.ID, err)
	}
	w.decorate(ctx, page.Entries)
	d := finalData{Period: period, Total: page.Total}
	d.Standings, d.Rewards = b.FinalStandings(page.Entries)
	return d, page.Total, page.Decimals, nil
}

// cohortStandings reads the final standings of each cohort of a period
// (sel, explicit on a board with periods). A league's tier moves of the
// period are made when the next one is first played (rank/cohort.go), and
// they change only members' next placements, never this period's cohorts
// or their order: this read is the same before and after them. A cohort
// whose members were all banned or removed has nothing to report and is
// left out.
func (w *Watcher) cohortStandings(ctx context.Context, b rank.Board, sel rank.PeriodSel, period *int64) (any, int64, int, error) {
	all, err := w.store.Top(ctx, b.ID, sel, 0, 0)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("webhook: final standings of %s: %w", b.ID, err)
	}
	ids, err := w.store.Cohorts(ctx, b.ID, sel)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("webhook: final cohorts of %s: %w", b.ID, err)
	}
	d := cohortFinalData{Period: period, Cohorts: []cohortFinal{}, Total: all.Total}
	for _, id := range ids {
		page, err := w.store.CohortTop(ctx, b.ID, sel, id, 0, b.FinalReach())
		if err != nil {
			return nil, 0, 0, fmt.Errorf("webhook: final standings of %s cohort %s: %w", b.ID, id, err)
		}
		if page.Total == 0 {
			continue
		}
		w.decorate(ctx, page.Entries)
		c := cohortFinal{Cohort: id}
		c.Standings, c.Rewards = b.FinalStandings(page.Entries)
		d.Cohorts = append(d.Cohorts, c)
	}
	return d, all.Total, all.Decimals, nil
}

func (w *Watcher) decorate(ctx context.Context, es []rank.Entry) {
	if w.cfg.Decorator != nil {
		w.cfg.Decorator.Decorate(ctx, es)
	}
}
