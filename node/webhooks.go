package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/webhook"
)

// Webhooks (docs/webhooks.md): every node watches every board's schedule
// on the store's clock and appends what became true to the store's outbox
// (rank.Outbox), each fact guarded by a marker so that however many nodes
// notice it, it is written once; and every node runs a webhook.Deliverer,
// whose leases let one node attempt a delivery at a time.
//
// The outboxWatch looks at all boards, not only the ones this node's live
// engine ticks for its subscribers: a board nobody watches still ends.
// A fact is news for RetryFor after it happened: a node that starts later
// does not report older ones; a webhook created while a fact is news and
// no other webhook wanted it hears of it.

// WebhooksConfig tunes the node's webhooks.
type WebhooksConfig struct {
	// AllowPrivate lets webhook URLs reach loopback, private and
	// link-local addresses (--webhook-allow-private).
	AllowPrivate bool
	// Watch bounds how long the outbox watcher sleeps between reads of
	// the store: it wakes when the next board or period becomes final or
	// changes state, when a board or webhook changes on this node or a
	// board on another, and at least every Watch, when it re-reads the
	// webhooks and lists every board again (a webhook created on another
	// node, a board event the bus lost); zero = DefaultWebhookWatch.
	Watch time.Duration
	// Deliver tunes the delivery loop; Node and AllowPrivate are filled in.
	Deliver webhook.Config
}

// DefaultWebhookWatch is WebhooksConfig.Watch's default.
const DefaultWebhookWatch = time.Minute

// markerKeep outlasts the span in which a fact is news, so a marker is
// never gone while a node could still append its fact.
const markerKeep = rank.RetryFor + time.Hour

// maxPeriodsBack bounds the walk back to the latest final period: the
// longest grace (24 h) over the shortest reset (1m).
const maxPeriodsBack = 24*60 + 1

// fact is one event the outboxWatch found true.
type fact struct {
	marker string
	event  string
	at     time.Time // when it became true
	period int64
	final  bool // carries standings: read them
	// skipEmpty: a period nobody scored in is not news (and a new board's
	// latest final period is one from before it existed).
	skipEmpty bool
	state     rank.State
}

// facts lists what became true on board b in the RetryFor before now.
func facts(b rank.Board, now time.Time) []fact {
	recent := func(t time.Time) bool { return !t.After(now) && now.Sub(t) < rank.RetryFor }
	var out []fact
	state := func(st rank.State, at time.Time) {
		if recent(at) {
			out = append(out, fact{marker: fmt.Sprintf("state|%s|%s|%d", b.ID, st, at.UnixMilli()),
				event: rank.EventBoardState, at: at, state: st})
		}
	}
	if !b.StartsAt.IsZero() {
		state(rank.Open, b.StartsAt.Time)
	}
	if !b.EndsAt.IsZero() {
		if b.Grace > 0 {
			state(rank.Closing, b.EndsAt.Time)
		}
		fin := b.FinalAt()
		state(rank.Final, fin)
		if recent(fin) {
			last := rank.PeriodAt(b, b.EndsAt.Add(-time.Millisecond))
			out = append(out, fact{marker: fmt.Sprintf("final|%s|%d", b.ID, fin.UnixMilli()),
				event: rank.EventBoardFinal, at: fin, period: last.Index, final: true})
		}
	}
	if b.Reset == rank.None || b.StateAt(now) == rank.Final {
		return out // a final board's last period is its board.final
	}
	// The latest period past its grace; a grace longer than a period makes
	// it one before the last.
	p := rank.PeriodAt(b, now)
	for range maxPeriodsBack {
		p = p.Previous(b)
		if !now.Before(p.End.Add(time.Duration(b.Grace))) {
			break
		}
	}
	fin := p.End.Add(time.Duration(b.Grace))
	if recent(fin) && !now.Before(fin) && (b.StartsAt.IsZero() || p.End.After(b.StartsAt.Time)) {
		out = append(out, fact{marker: fmt.Sprintf("period|%s|%d", b.ID, p.Index),
			event: rank.EventPeriodFinal, at: fin, period: p.Index, final: true, skipEmpty: true})
	}
	return out
}

// reward is one member's reward in a final event.
type reward struct {
	Member string `json:"member"`
	Reward string `json:"reward"`
}

// finalData is a final event's data (§13).
type finalData struct {
	Period    *int64       `json:"period,omitempty"`
	Standings []rank.Entry `json:"standings"`
	Total     int64        `json:"total"`
	Rewards   []reward     `json:"rewards"`
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
	Rewards   []reward     `json:"rewards"`
}

// outboxWatch appends facts to the outbox. It keeps every board's config
// and the moment the next fact can become true, and sleeps until then:
// the store is read when a fact is due, when a board or a webhook changes,
// and every Watch (the webhooks, and every board again, in case a board
// event was lost), not once a tick per board.
type outboxWatch struct {
	n     *Node
	every time.Duration // Watch
	wake  chan struct{} // a board or webhook changed; buffered, one pending wake
	mu    sync.Mutex    // guards changed and relist
	// changed is the boards created, changed or deleted since the last
	// look; relist, that board events may have been lost.
	changed map[string]bool
	relist  bool

	// Owned by the watcher's goroutine (watchWebhooks):
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

// newOutboxWatch is n's watcher; it runs from Run on (watchWebhooks), and
// hears of board changes from New on.
func newOutboxWatch(n *Node) *outboxWatch {
	every := n.cfg.Webhooks.Watch
	if every <= 0 {
		every = DefaultWebhookWatch
	}
	return &outboxWatch{n: n, every: every, wake: make(chan struct{}, 1),
		changed: map[string]bool{}, done: map[string]time.Time{}}
}

// boardChanged is told of a board created, changed or deleted on this node
// or another ("" = any board: the bus may have lost board events), so the
// watcher re-reads it now rather than at its next relist.
func (w *outboxWatch) boardChanged(board string) {
	w.mark(board)
	w.poke()
}

// mark notes board to be read again at the next look ("" = every board).
func (w *outboxWatch) mark(board string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if board == "" {
		w.relist = true
	} else {
		w.changed[board] = true
	}
}

// poke wakes the watcher to look now.
func (w *outboxWatch) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// takeChanged returns and clears what boardChanged was told.
func (w *outboxWatch) takeChanged() (map[string]bool, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	changed, relist := w.changed, w.relist
	w.changed, w.relist = map[string]bool{}, false
	return changed, relist
}

// watchWebhooks runs the outboxWatch until ctx ends.
func (n *Node) watchWebhooks(ctx context.Context) {
	w := n.outbox
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
			n.log.Warn("node: webhook watch", "err", err)
		}
		t.Reset(wait)
	}
}

// outboxRetry is how soon the outbox watcher tries again after a failed
// read or append.
const outboxRetry = time.Second

// tick looks at what changed, and at every board when a fact is due, and
// returns how long the watcher may sleep.
func (w *outboxWatch) tick(ctx context.Context) (time.Duration, error) {
	s := w.n.store
	hooks, err := s.Webhooks(ctx)
	if err != nil {
		return outboxRetry, err
	}
	if len(hooks) == 0 {
		// Nothing to tell, nothing to read: the boards are listed afresh
		// when a webhook appears.
		w.boards, w.hooks = nil, nil
		w.takeChanged()
		return w.every, nil
	}
	now, err := s.Now(ctx)
	if err != nil {
		return outboxRetry, err
	}
	if err := w.refresh(ctx); err != nil {
		return outboxRetry, err
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
		for _, f := range facts(b, now) {
			if !wanted(hooks, f.event, b.ID) {
				continue // not marked: a webhook created while it is news still hears of it
			}
			if err := w.append(ctx, b, f); err != nil {
				return outboxRetry, err
			}
		}
		if next := nextFact(b, now); !next.IsZero() && (due.IsZero() || next.Before(due)) {
			due = next
		}
	}
	w.due, w.stale = due, false
	return w.sleep(now), nil
}

// refresh brings w.boards up to date: every board when the list is
// missing or Watch old or board events may have been lost, else the
// boards boardChanged named. Any change makes every board looked at.
func (w *outboxWatch) refresh(ctx context.Context) error {
	s := w.n.store
	changed, relist := w.takeChanged()
	if w.boards == nil || relist || time.Since(w.listed) >= w.every {
		listed := time.Now()
		all, err := s.Boards(ctx)
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
		b, err := s.GetBoard(ctx, id)
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
func (w *outboxWatch) sleep(now time.Time) time.Duration {
	d := w.every - time.Since(w.listed)
	if !w.due.IsZero() {
		d = min(d, w.due.Sub(now))
	}
	return max(d, 0)
}

// sameHook: a and b want the same events of the same boards.
func sameHook(a, b rank.Webhook) bool {
	return a.ID == b.ID && slices.Equal(a.Events, b.Events) && slices.Equal(a.Boards, b.Boards)
}

// nextFact is the earliest moment after now at which facts(b, ·) can list
// a fact it does not list at now; zero: none ever will.
func nextFact(b rank.Board, now time.Time) time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	if !b.StartsAt.IsZero() {
		consider(b.StartsAt.Time)
	}
	if !b.EndsAt.IsZero() {
		consider(b.EndsAt.Time)
		consider(b.FinalAt())
	}
	if b.Reset == rank.None {
		return next
	}
	// The current period's grace ends first unless a grace longer than a
	// period leaves an earlier one's still running. As in facts, no period
	// ends before the board starts, nor once it is final.
	grace := time.Duration(b.Grace)
	p := rank.PeriodAt(b, now)
	for range maxPeriodsBack {
		fin := p.End.Add(grace)
		if (b.StartsAt.IsZero() || p.End.After(b.StartsAt.Time)) && (b.EndsAt.IsZero() || fin.Before(b.FinalAt())) {
			consider(fin)
		}
		q := p.Previous(b)
		if q.Index == p.Index || !q.End.Add(grace).After(now) {
			break
		}
		p = q
	}
	return next
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
func (w *outboxWatch) append(ctx context.Context, b rank.Board, f fact) error {
	if _, seen := w.done[f.marker]; seen {
		return nil
	}
	var data any = map[string]string{"state": string(f.state)}
	decimals := 0
	if f.final {
		d, total, dec, err := w.standings(ctx, b, f)
		if err != nil {
			return err
		}
		if f.skipEmpty && total == 0 {
			w.remember(f)
			return nil
		}
		data, decimals = d, dec
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("node: webhook data of %s: %w", b.ID, err)
	}
	raw = proto.Decimalize(raw, decimals) // a hot board's scores, as REST prints them
	appended, err := w.n.store.AppendOutbox(ctx, f.marker, markerKeep, rank.OutboxEvent{Event: f.event, Board: b.ID, TS: f.at, Data: raw})
	if err != nil {
		return fmt.Errorf("node: append %s of %s: %w", f.event, b.ID, err)
	}
	if appended {
		w.n.log.Info("node: webhook event", "event", f.event, "board", b.ID)
	}
	w.remember(f)
	return nil
}

// remember keeps f's marker as done for as long as it could matter.
func (w *outboxWatch) remember(f fact) {
	w.done[f.marker] = f.at.Add(markerKeep)
}

// standings reads a final period's standings and rewards: the board's,
// or on a cohort board each cohort's. It returns the data, the board's
// total and the scores' decimals.
func (w *outboxWatch) standings(ctx context.Context, b rank.Board, f fact) (any, int64, int, error) {
	var sel rank.PeriodSel
	var period *int64
	if b.Reset != rank.None {
		sel = rank.PeriodSel(strconv.FormatInt(f.period, 10))
		period = &f.period
	}
	if b.Cohorted() {
		return w.cohortStandings(ctx, b, sel, period)
	}
	page, err := w.n.store.Top(ctx, b.ID, sel, 0, b.FinalReach())
	if err != nil {
		return nil, 0, 0, fmt.Errorf("node: final standings of %s: %w", b.ID, err)
	}
	w.n.profs.Decorate(ctx, page.Entries)
	d := finalData{Period: period, Total: page.Total}
	d.Standings, d.Rewards = ranked(b, page.Entries)
	return d, page.Total, page.Decimals, nil
}

// cohortStandings reads the final standings of each cohort of a period
// (sel, explicit on a board with periods). A league's tier moves of the
// period are made when the next one is first played (rank/cohort.go), and
// they change only members' next placements, never this period's cohorts
// or their order: this read is the same before and after them. A cohort
// whose members were all banned or removed has nothing to report and is
// left out.
func (w *outboxWatch) cohortStandings(ctx context.Context, b rank.Board, sel rank.PeriodSel, period *int64) (any, int64, int, error) {
	s := w.n.store
	all, err := s.Top(ctx, b.ID, sel, 0, 0)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("node: final standings of %s: %w", b.ID, err)
	}
	ids, err := s.Cohorts(ctx, b.ID, sel)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("node: final cohorts of %s: %w", b.ID, err)
	}
	d := cohortFinalData{Period: period, Cohorts: []cohortFinal{}, Total: all.Total}
	for _, id := range ids {
		page, err := s.CohortTop(ctx, b.ID, sel, id, 0, b.FinalReach())
		if err != nil {
			return nil, 0, 0, fmt.Errorf("node: final standings of %s cohort %s: %w", b.ID, id, err)
		}
		if page.Total == 0 {
			continue
		}
		w.n.profs.Decorate(ctx, page.Entries)
		c := cohortFinal{Cohort: id}
		c.Standings, c.Rewards = ranked(b, page.Entries)
		d.Cohorts = append(d.Cohorts, c)
	}
	return d, all.Total, all.Decimals, nil
}

// ranked cuts entries (the first FinalReach of a ranking) to the board's
// standings count and lists the rewards their ranks earn.
func ranked(b rank.Board, entries []rank.Entry) ([]rank.Entry, []reward) {
	standings := append([]rank.Entry{}, entries[:min(len(entries), b.StandingsCount())]...)
	rewards := []reward{}
	for _, e := range entries {
		if r := b.RewardFor(e.Rank); r != "" {
			rewards = append(rewards, reward{Member: e.Member, Reward: r})
		}
	}
	return standings, rewards
}

// WebhookChanged is told of a webhook stored on this node (api): the
// watcher looks again at once, so the facts still news reach it now rather
// than at the next Watch.
func (n *Node) WebhookChanged() { n.outbox.poke() }

// runWebhooks runs the outboxWatch and the delivery loop until ctx ends.
func (n *Node) runWebhooks(ctx context.Context) (wait func(), err error) {
	dcfg := n.cfg.Webhooks.Deliver
	dcfg.Node, dcfg.AllowPrivate = n.cfg.ID, n.cfg.Webhooks.AllowPrivate
	d, err := webhook.New(n.store, n.log, dcfg)
	if err != nil {
		return nil, fmt.Errorf("node: webhooks: %w", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { n.watchWebhooks(ctx) })
	wg.Go(func() { _ = d.Run(ctx) })
	return wg.Wait, nil
}
