package live

import (
	"math"
	"slices"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// board is one watched board's state on this node. Guarded by Engine.mu.
type board struct {
	id     string
	cfg    rank.Board
	cfgOK  bool
	cfgAt  time.Time   // when cfg was read; zero forces a re-read
	told   viewersTold // the viewers board frames last said (viewers.go)
	period int64       // current period by this node's clock (0: no periods)
	// period spans [periodStart, periodEnd) (zero end: no periods): within
	// it the tick need not call rank.PeriodAt, which loads the board's
	// time zone.
	periodStart, periodEnd time.Time
	// lc is what subscribers were told of the board's lifecycle (R19).
	lc lifecycle
	// changePeriod is the period of the latest change event; a change in
	// another period means the store rolled over.
	changePeriod int64
	// hotBucket is a hot board's bucket (by the store's clock) its frames
	// were last marked for: at a bucket boundary every score changes with
	// no change event, so the tick marks the board's frames then (R22).
	hotBucket int64

	// The change stream. Every seq up to lastSeq was seen (or covered by a
	// full re-read); ahead holds later seqs seen out of order, which is
	// normal: local events race each other and the bus.
	seqKnown bool
	lastSeq  int64
	ahead    map[int64]struct{}
	aheadAt  time.Time // when lastSeq last stopped short of ahead
	seenSeq  int64     // highest seq a read returned
	heldSeq  int64     // seenSeq at the previous backstop check
	lastRead time.Time
	// lastPoint is the schedule point of the board's last scheduled read
	// (schedule.go); zero before the first.
	lastPoint time.Time
	probe     bool // the backstop wants one read of this board

	// framesOut counts the frames offered to this board's subscribers'
	// outboxes (one per outbox per frame), for metrics (BoardStats).
	framesOut uint64

	// top frames
	topSubs  map[int]*subscribers // by N
	maxN     int
	topDirty bool
	frames   map[int]*topFrame // latest frame per N that has subscribers
	// cohort top frames (cohort.go), by cohort id; dirtyCohorts are those
	// marked, in marking order
	cohorts      map[string]*cohortTops
	dirtyCohorts []*cohortTops

	// view frames
	views    map[viewKey]*view
	byMember map[string][]*view
	dirty    []*view // views with dirty set, in marking order (may hold removed views)
	index    rangeIndex

	// members frames (members.go)
	ml memberLists

	// While reads are in flight, changes are logged so that a view installed
	// from a read at seq S can be checked against changes after S that were
	// tested against its previous window (see replay).
	inflight int
	log      []logged
	logStart int64 // position of log[0] in the stream of logged changes
	logOver  bool  // the log was full: replay must assume the worst
	// profGen counts profile changes heard while reads were in flight; a
	// job that started under another value re-reads (profiles.go).
	profGen uint64
}

type logged struct {
	seq    int64
	member string
	cohort string // the change's cohort on a cohort board (§12)
	lo, hi int64  // the change's span in goodness space
}

type topFrame struct {
	entries []rank.Entry
	total   int64
	seq     int64
	bytes   []byte
	// decimals: the scores are in units of 10^-decimals (hot boards).
	decimals int
	// final: the frame shows a final board's standings (R19).
	final finalRead
	// unsent: a Subscribe's read installed it and it has not been offered
	// to the other subscribers yet; the next scheduled read does that.
	unsent bool
	// meta: the entries carry their meta (a "meta": true subscription).
	meta bool
	// cohort: the frame is that cohort's standings (cohort.go).
	cohort string
}

type viewKey struct {
	member string
	around int
	meta   bool // the subscription said "meta": true
}

// view is one (board, member, around) watched by one or more connections.
// Guarded by Engine.mu.
type view struct {
	id       uint64
	key      viewKey
	watchers *subscribers
	dirty    bool
	removed  bool
	res      *viewResult // nil until the first read; replaced, never mutated
	// unsent: res came from a Subscribe's read and has not been offered to
	// the other watchers yet; the next scheduled read does that.
	unsent bool

	// The window's score range in goodness space; lo is MinInt64 when the
	// window reaches the board's last rank, hi MaxInt64 when it reaches rank
	// 1. Set only for a found member; such a view is in the board's index.
	lo, hi      int64
	maxHi       int64
	left, right *view
	prio        uint32
	indexed     bool
}

type viewResult struct {
	mr       rank.MemberRank
	seq      int64
	bytes    []byte
	decimals int // as topFrame's
}

func newBoard(id string) *board {
	return &board{
		id:       id,
		topSubs:  make(map[int]*subscribers),
		frames:   make(map[int]*topFrame),
		views:    make(map[viewKey]*view),
		byMember: make(map[string][]*view),
	}
}

func (b *board) empty() bool {
	return len(b.topSubs) == 0 && len(b.views) == 0 && len(b.ml.lists) == 0 && len(b.cohorts) == 0
}

// goodness maps a score so that higher always ranks higher.
func (b *board) goodness(score int64) int64 {
	if b.cfg.Order == rank.Asc {
		return -score
	}
	return score
}

func (b *board) needsRead(now time.Time) bool {
	return !b.cfgOK || now.Sub(b.cfgAt) >= cfgTTL || b.probe ||
		(b.topDirty && b.maxN > 0) || len(b.dirty) > 0 || b.ml.dirty || len(b.dirtyCohorts) > 0
}

// setCfg installs a config read at now. It reports whether the change
// invalidates frames and windows already computed (order, ties, periods).
func (b *board) setCfg(c rank.Board, now time.Time) (shape bool) {
	first := !b.cfgOK
	shape = !first && (b.cfg.Order != c.Order || b.cfg.Tiebreak != c.Tiebreak ||
		b.cfg.Reset != c.Reset || b.cfg.TZ != c.TZ)
	b.cfg, b.cfgOK, b.cfgAt = c, true, now
	if first || shape {
		p := rank.PeriodAt(c, now)
		b.period, b.periodStart, b.periodEnd = p.Index, p.Start, p.End
		b.changePeriod = b.period
	}
	return shape
}

// markTop marks the top frames dirty. Lock held.
func (e *Engine) markTop(b *board) {
	if !b.topDirty {
		b.topDirty = true
		e.kick = true
	}
}

// markView marks v dirty. Lock held.
func (e *Engine) markView(b *board, v *view) {
	if !v.dirty && !v.removed {
		v.dirty = true
		b.dirty = append(b.dirty, v)
		e.kick = true
	}
}

// markAll marks the whole board dirty. Lock held.
func (e *Engine) markAll(b *board) {
	e.markTop(b)
	for _, ct := range b.cohorts {
		e.markCohort(b, ct)
	}
	for _, v := range b.views {
		e.markView(b, v)
	}
	e.markLists(b)
}

// gap gives up on the missing seqs below ahead: the store will be re-read.
// Lock held.
func (e *Engine) gap(b *board) {
	for s := range b.ahead {
		b.lastSeq = max(b.lastSeq, s)
	}
	clear(b.ahead)
	e.markAll(b)
}

// accept records seq in the board's change stream and reports whether the
// change is new (not a duplicate or already covered). Lock held.
func (e *Engine) accept(b *board, seq int64, now time.Time) bool {
	switch {
	case !b.seqKnown:
		// Nothing to compare with: whatever came before may have been
		// missed, so re-read everything once.
		b.seqKnown, b.lastSeq = true, seq
		e.markAll(b)
		return true
	case seq <= b.lastSeq:
		return false
	case seq == b.lastSeq+1:
		b.lastSeq = seq
		for len(b.ahead) > 0 {
			if _, ok := b.ahead[b.lastSeq+1]; !ok {
				break
			}
			delete(b.ahead, b.lastSeq+1)
			b.lastSeq++
		}
		b.aheadAt = now // progress: give the rest of ahead a full grace period
		return true
	}
	if _, dup := b.ahead[seq]; dup {
		return false
	}
	if len(b.ahead) >= maxAhead {
		b.lastSeq = max(b.lastSeq, seq)
		e.gap(b)
		return true
	}
	if b.ahead == nil {
		b.ahead = make(map[int64]struct{})
	}
	if len(b.ahead) == 0 {
		b.aheadAt = now
		e.kick = true // Run must come back to check the grace period
	}
	b.ahead[seq] = struct{}{}
	return true
}

// Changed takes change events (local and remote; hints, in any order) and
// marks dirty what they may have changed. Cost per change: O(affected views
// + log views).
func (e *Engine) Changed(changes []rank.Change) {
	now := e.now()
	e.mu.Lock()
	for i := range changes {
		c := &changes[i]
		b := e.boards[c.Board]
		if b == nil || !e.accept(b, c.Seq, now) {
			continue
		}
		// A later period than the last one seen: the store rolled over (a
		// late event into the period before, R17, is not a rollover).
		if b.cfgOK && b.cfg.Reset != rank.None && c.Period > b.changePeriod {
			b.changePeriod = c.Period
			e.markAll(b) // the store rolled over to a new period
		}
		// Top: only a change that touches the first maxN ranks, or adds a
		// member (total), can change a top frame. On a cohort board the
		// change's ranks are within its cohort, never worse than the
		// board's, so the test still marks every change that matters.
		if n := int64(b.maxN); n > 0 && (c.Old == nil || c.Rank <= n || (c.PrevRank > 0 && c.PrevRank <= n)) {
			e.markTop(b)
		}
		e.markLists(b) // any change may move a listed member's rank
		e.cohortChanged(b, c)
		if len(b.views) == 0 {
			continue
		}
		if !b.cfgOK {
			e.markAll(b) // no order known: cannot place the change
			continue
		}
		l := logged{seq: c.Seq, member: c.Member, cohort: c.Cohort, lo: math.MinInt64, hi: b.goodness(c.New)}
		if c.Old != nil { // else: a new member comes from "worst possible"
			o := b.goodness(*c.Old)
			l.lo, l.hi = min(o, l.hi), max(o, l.hi)
		}
		e.touchViews(b, l)
		if b.inflight > 0 {
			if len(b.log) < maxLog {
				b.log = append(b.log, l)
			} else {
				b.logOver = true
			}
		}
	}
	e.unlock()
}

// touchViews marks the views a change may affect: the changed member's own,
// and every found view whose window range intersects the change's span
// (the span crosses or enters the window, so a rank, score or neighbour
// moves). On a cohort board a view's window is within its member's cohort,
// which a change in another cohort cannot move (sameCohort). Lock held.
func (e *Engine) touchViews(b *board, l logged) {
	for _, v := range b.byMember[l.member] {
		e.markView(b, v)
	}
	b.index.stab(l.lo, l.hi, func(v *view) {
		if sameCohort(v, l) {
			e.markView(b, v)
		}
	})
}

// Resync marks a board ("" = every board) dirty and its config stale: the
// next tick re-reads it whole.
func (e *Engine) Resync(board string) {
	e.mu.Lock()
	for id, b := range e.boards {
		if board == "" || id == board {
			b.cfgAt = time.Time{}
			e.markAll(b)
		}
	}
	e.unlock()
}

// setRange recomputes v's window range from its result and re-indexes it.
// Lock held.
func (b *board) setRange(v *view) {
	b.index.remove(v)
	if v.removed || v.res == nil || !v.res.mr.Found {
		return
	}
	around := v.res.mr.Around
	i := slices.IndexFunc(around, func(x rank.Entry) bool { return x.Member == v.key.member })
	if i < 0 {
		// Not expected from a correct store; an unbounded range keeps the
		// view correct at the price of extra reads.
		v.lo, v.hi = math.MinInt64, math.MaxInt64
	} else {
		v.lo, v.hi = b.goodness(around[len(around)-1].Score), b.goodness(around[0].Score)
		if i < v.key.around { // fewer neighbours above than asked: rank 1 is in the window
			v.hi = math.MaxInt64
		}
		if len(around)-1-i < v.key.around { // the window reaches the last rank
			v.lo = math.MinInt64
		}
	}
	b.index.insert(v)
}
