package live

import (
	"slices"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// board is one watched board's state on this node: what every frame kind
// shares (the config, the change stream, the read schedule) and the kinds
// themselves. Guarded by Engine.mu.
type board struct {
	e      *Engine
	id     string
	kinds  []kind
	nsubs  int // connections subscribed to it (Engine.conns entries)
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
	// toldAhead is what subscribers that joined since the last tick were
	// told beyond lc, their phase and the newest final their resume handed
	// them: the tick does not tell it again (lifecycle.go). nil: none.
	toldAhead map[*Outbox]lifecycle
	// ended is the newest period (boards with reset) whose final frame a
	// subscriber here was sent or handed: no frame of it or an older one
	// goes out after (R19). 0: none.
	ended int64
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
	maxSeq   int64     // greatest seq the stream has shown (lastSeq or in ahead)
	seenSeq  int64     // highest seq a read returned
	heldSeq  int64     // seenSeq at the previous backstop check
	lastRead time.Time
	// lastPoint is the schedule point of the board's last scheduled read
	// (schedule.go); zero before the first.
	lastPoint time.Time
	probe     bool // the backstop wants one read of this board

	// reading: a job's reads are in flight (jobs of a board run one at a
	// time: the tick waits for them all).
	reading bool
	// profStale: a profile changed while a job read; it re-reads all when
	// it installs (profiles.go).
	profStale bool

	// framesOut counts the frames offered to this board's subscribers'
	// outboxes (one per outbox per frame), for metrics (BoardStats).
	framesOut uint64

	// stream is the board's epoch and recorded transitions (stream.go).
	stream streamState
}

// newBoard is a board and its frame kinds. A new frame kind is one line
// here (and its file); a new grouping for standings, one in Engine.sources.
func (e *Engine) newBoard(id string) *board {
	b := &board{e: e, id: id}
	for _, src := range e.sources {
		b.kinds = append(b.kinds, newStandings(b, src))
	}
	b.kinds = append(b.kinds,
		newViews(b),
		newLists(b),
	)
	return b
}

// kick wakes Run after the engine unlocks: something became dirty. Lock
// held.
func (b *board) kick() { b.e.kick = true }

// unseq is the seq a mark with no change behind it stands for (a rename, a
// gap, a rollover, a new config): after every seq this board has shown, so
// a resume from any of them sees it (stamp).
func (b *board) unseq() int64 { return max(b.maxSeq, b.seenSeq) + 1 }

// saw records the seq of a read's answer (the backstop compares it with
// the change stream).
func (b *board) saw(seq int64) { b.seenSeq = max(b.seenSeq, seq) }

// markAll marks every frame of the board: changes up to seq may have
// changed any (stamp). Lock held.
func (b *board) markAll(seq int64) {
	for _, k := range b.kinds {
		k.markAll(seq)
	}
}

func (b *board) dirty() bool { return slices.ContainsFunc(b.kinds, kind.dirty) }

// each calls fn for every subscriber set of every kind of b.
func (b *board) each(fn func(*subscribers)) {
	for _, k := range b.kinds {
		k.each(fn)
	}
}

// outboxes lists every connection subscribed to b. Lock held.
func (b *board) outboxes() []*Outbox {
	seen := map[*Outbox]struct{}{}
	var out []*Outbox
	b.each(func(s *subscribers) {
		for o := range s.m {
			if _, ok := seen[o]; !ok {
				seen[o] = struct{}{}
				out = append(out, o)
			}
		}
	})
	return out
}

// goodness maps a score so that higher always ranks higher.
func (b *board) goodness(score int64) int64 {
	if b.cfg.Order == rank.Asc {
		return -score
	}
	return score
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

// gap gives up on the missing seqs below ahead: the store will be re-read.
// Lock held.
func (b *board) gap() {
	for s := range b.ahead {
		b.lastSeq = max(b.lastSeq, s)
	}
	clear(b.ahead)
	b.markAll(b.maxSeq)
}

// accept records seq in the board's change stream and reports whether the
// change is new (not a duplicate or already covered). Lock held.
func (b *board) accept(seq int64, now time.Time) bool {
	switch {
	case !b.seqKnown:
		// Nothing to compare with: whatever came before may have been
		// missed, so re-read everything once.
		b.seqKnown, b.lastSeq, b.maxSeq = true, seq, max(b.maxSeq, seq)
		b.markAll(seq - 1)
		return true
	case seq <= b.lastSeq:
		return false
	}
	b.maxSeq = max(b.maxSeq, seq)
	if seq == b.lastSeq+1 {
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
		b.gap()
		return true
	}
	if b.ahead == nil {
		b.ahead = make(map[int64]struct{})
	}
	if len(b.ahead) == 0 {
		b.aheadAt = now
		b.kick() // Run must come back to check the grace period
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
		if b == nil || !b.accept(c.Seq, now) {
			continue
		}
		// A later period than the last one seen: the store rolled over (a
		// late event into the period before, R17, is not a rollover).
		if b.cfgOK && b.cfg.Reset != rank.None && c.Period > b.changePeriod {
			b.changePeriod = c.Period
			b.markAll(c.Seq)
		}
		for _, k := range b.kinds {
			k.changed(*c)
		}
	}
	e.unlock()
}

// Missed marks a board's frames for a re-read: changes of it may not have
// reached this node (its bus subscription was not confirmed yet, or a
// sender dropped some), and each of those has a seq. So the marks name no
// change (seq 0, not unseq): a frame the re-read finds changed comes with
// that read's newer seq, and a resume of a board in which nothing changed
// still gets nothing (stamp.unchanged).
func (e *Engine) Missed(board string) {
	e.mu.Lock()
	if b := e.boards[board]; b != nil {
		b.markAll(0)
	}
	e.unlock()
}

// Resync marks a board ("" = every board) dirty and its config stale: the
// next tick re-reads it whole. The marks count as a change after every
// seq (unseq): what was missed may have had none (a profile, a config).
func (e *Engine) Resync(board string) {
	e.mu.Lock()
	for id, b := range e.boards {
		if board == "" || id == board {
			b.cfgAt = time.Time{}
			b.markAll(b.unseq())
		}
	}
	e.unlock()
}
