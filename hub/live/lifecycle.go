package live

// Board lifecycle frames (R19): `board` frames after `subscribed` and on
// every change of state or current period, `deleted` on deletion, and one
// last `top` frame with "final":true for each period or board that becomes
// final. All of it is noticed by this node's own tick against the store's
// clock (rank.Store.Now): no cron, no leader; every node computes the same
// frames from the same clock and data.

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// lifecycleTick bounds the gap between two ticks, so a state or period
// change reaches subscribers within 1 s (R19) even with a longer interval.
const lifecycleTick = 500 * time.Millisecond

// lifecycle is what a board's subscribers were last told. Guarded by
// Engine.mu.
type lifecycle struct {
	known  bool
	state  rank.State
	period int64
	// final is the latest period (or board) found final, and whether
	// there is one: a change of it sends that period's final top frame.
	final  int64
	hasFin bool
	cfg    [3]int64  // the schedule told: starts_at, ends_at, grace
	at     time.Time // a moment of the phase (phaseNow), to order two phases
}

// phaseAt is the lifecycle of a board with config cfg at at.
func phaseAt(cfg rank.Board, at time.Time) lifecycle {
	st, period, final, hasFinal := phase(cfg, at)
	return lifecycle{known: true, state: st, period: period, final: final, hasFin: hasFinal, cfg: scheduleOf(cfg), at: at}
}

// sameBoard reports whether l and m make the same board frame, viewers
// aside.
func (l lifecycle) sameBoard(m lifecycle) bool {
	return l.state == m.state && l.period == m.period && l.cfg == m.cfg
}

// after reports whether l is a later phase than m (a phase moves only
// forward with the clock; the schedule aside, which a new config moves).
func (l lifecycle) after(m lifecycle) bool {
	same := l.state == m.state && l.period == m.period && l.final == m.final && l.hasFin == m.hasFin
	return !same && m.at.Before(l.at)
}

// scheduleOf is the part of a config a board frame shows.
func scheduleOf(c rank.Board) [3]int64 {
	return [3]int64{c.StartsAt.Ms(), c.EndsAt.Ms(), int64(c.Grace)}
}

// phase is the board's state, current period and latest final period at
// store time now.
func phase(cfg rank.Board, now time.Time) (st rank.State, period, final int64, hasFinal bool) {
	st = cfg.StateAt(now)
	cur := rank.PeriodAt(cfg, now)
	period = cur.Index
	switch {
	case st == rank.Scheduled:
	case st == rank.Final:
		final, hasFinal = rank.PeriodAt(cfg, cfg.EndsAt.Add(-time.Millisecond)).Index, true
	case cfg.Reset != rank.None:
		prev := cur.Previous(cfg)
		if !cfg.StartsAt.IsZero() && !prev.End.After(cfg.StartsAt.Time) {
			break // the tournament had not started in that period
		}
		if !now.Before(prev.End.Add(time.Duration(cfg.Grace))) {
			final, hasFinal = prev.Index, true
		}
	}
	return st, period, final, hasFinal
}

func msPtr(t rank.Instant) *int64 {
	if t.IsZero() {
		return nil
	}
	v := t.UnixMilli()
	return &v
}

// encodeBoard is the board frame of cfg in state st; viewers is nil when
// the frame does not carry them.
func encodeBoard(cfg rank.Board, st rank.State, period int64, ts time.Time, viewers *int) []byte {
	f := proto.Board{
		Type: proto.TypeBoard, Board: cfg.ID, State: string(st),
		StartsAt: msPtr(cfg.StartsAt), EndsAt: msPtr(cfg.EndsAt), TS: ts.UnixMilli(), Viewers: viewers,
	}
	if cfg.Reset != rank.None {
		f.Period = period
	}
	if !cfg.EndsAt.IsZero() {
		v := cfg.FinalAt().UnixMilli()
		f.FinalAt = &v
	}
	b, _ := json.Marshal(f) // plain types: cannot fail
	return b
}

// finalRead is what a top read of a board that was final when it began
// reads, and how its frames say so. R19 makes the final frame a board's
// last top frame: a read that was due when the board went final, or one
// that a later moderation change makes, must not follow it with a frame
// that looks live, nor (reset boards) show the empty period after the end.
type finalRead struct {
	is     bool
	sel    rank.PeriodSel // the last period, on boards with reset
	period int64
}

// finalOf is finalRead for b's phase as last told to its subscribers. Lock
// held.
func finalOf(b *board) finalRead {
	if !b.lc.known || b.lc.state != rank.Final {
		return finalRead{}
	}
	return finalPeriod(b.cfg, b.lc.final)
}

// finalPeriod is finalRead for period final of a board with config cfg
// (the whole board when it has no reset).
func finalPeriod(cfg rank.Board, final int64) finalRead {
	if cfg.Reset == rank.None {
		return finalRead{is: true}
	}
	return finalRead{is: true, sel: rank.PeriodSel(strconv.FormatInt(final, 10)), period: final}
}

// finalJob is the final top frames of a period or board that became
// final, to read and send after the lock is released.
type finalJob struct {
	board string
	read  finalRead
	// current: the board itself became final, so its final frame is
	// each key's current frame from now on (§15).
	current bool
	groups  []finalGroup // standings.go
}

// finaler is a kind that sends final frames (standings).
type finaler interface {
	// finals lists each group's subscribers by key; board: the board
	// itself became final (standings.finals).
	finals(board bool) []finalGroup
	// ended forgets the held frames of period p or older, which must not
	// reach a subscriber after the period's final (b.ended).
	ended(p int64)
}

// lifecycleTick compares b's phase at store time now with what its
// subscribers were told: a change sends a board frame to each at once, a
// newly final period yields a finalJob. Neither goes to a subscriber that
// was told it as it joined (b.toldAhead). Lock held.
func (e *Engine) lifecycleTick(b *board, now time.Time) *finalJob {
	lc := &b.lc
	if !lc.known {
		b.knowPhase(now)
		return nil
	}
	defer b.pruneAhead(now)
	if now.After(lc.at) {
		lc.at = now // a moment of the phase told from here on
	}
	st, period, final, hasFinal := phase(b.cfg, now)
	if sc := scheduleOf(b.cfg); st != lc.state || period != lc.period || sc != lc.cfg {
		lc.state, lc.period, lc.cfg = st, period, sc
		frame := encodeBoard(b.cfg, st, period, now, b.told.count())
		for _, o := range b.outboxes() {
			if a, ok := b.toldAhead[o]; !ok || !a.sameBoard(*lc) {
				o.event(frame)
			}
		}
	}
	if !hasFinal || (lc.hasFin && final == lc.final) {
		return nil
	}
	lc.final, lc.hasFin = final, true
	if st != rank.Final {
		b.endPeriod(final) // the board's own final is its current frame
	}
	j := &finalJob{board: b.id, read: finalPeriod(b.cfg, final), current: st == rank.Final}
	for _, k := range b.kinds {
		if f, ok := k.(finaler); ok {
			j.groups = append(j.groups, f.finals(j.current)...)
		}
	}
	if b.toldAhead != nil {
		handed := func(t target) bool { a, ok := b.toldAhead[t.o]; return ok && a.hasFin && final <= a.final }
		for _, fg := range j.groups {
			for k, to := range fg.keys {
				fg.keys[k] = slices.DeleteFunc(slices.Clone(to), handed)
			}
		}
	}
	if len(j.groups) == 0 {
		return nil
	}
	return j
}

// knowPhase records b's phase at at (a moment of phaseNow) as told, when
// nothing was told yet. Lock held.
func (b *board) knowPhase(at time.Time) {
	if !b.lc.known {
		b.lc = phaseAt(b.cfg, at)
	}
}

// joinPhase is the phase a subscriber joining b is told (R19): a resume's
// as its stream showed it (Spec.shown), else the board's at the store's
// time sn. ok is false for a resume that this node overtook: it told b's
// subscribers a later phase than the resume's stream held, whose final
// frames the resume would lack. Lock held.
func (b *board) joinPhase(sp *Spec, sn time.Time) (v lifecycle, ok bool) {
	if !sp.shown.IsZero() {
		v = phaseAt(b.cfg, sp.shown)
		return v, !b.lc.known || !b.lc.after(v)
	}
	v = phaseAt(b.cfg, b.phaseNow(sn))
	if b.lc.known && b.lc.after(v) {
		v = b.lc // sn was this node's clock (the store's failed), behind the store's
	}
	return v, true
}

// joined tells o, joining b in phase v, the board frame (R19), unless sp is
// a resume whose client holds it; then, for the tick, what o was told or
// handed (sp's missed finals) beyond b's subscribers (b.toldAhead). Lock held.
func (b *board) joined(o *Outbox, v lifecycle, sp *Spec) {
	b.knowPhase(v.at)
	if !sp.quiet {
		o.event(encodeBoard(b.cfg, v.state, v.period, v.at, b.told.count()))
	}
	v.final, v.hasFin = sp.lastFinal, len(sp.finals) > 0
	if v.hasFin {
		b.endPeriod(v.final)
	}
	if v.sameBoard(b.lc) && (!v.hasFin || (b.lc.hasFin && v.final <= b.lc.final)) {
		return
	}
	if b.toldAhead == nil {
		b.toldAhead = make(map[*Outbox]lifecycle, 1)
	}
	b.toldAhead[o] = v
}

// pruneAhead forgets what subscribers were told as they joined, once the
// tick's phase at now is not before it: the tick told the same or later.
// Lock held.
func (b *board) pruneAhead(now time.Time) {
	maps.DeleteFunc(b.toldAhead, func(_ *Outbox, a lifecycle) bool { return !a.at.After(now) })
	if len(b.toldAhead) == 0 {
		b.toldAhead = nil // a map never shrinks
	}
}

// endPeriod records that period p (of a board with reset) is final for a
// subscriber here: its frames, and older ones, are past (b.ended). Lock
// held.
func (b *board) endPeriod(p int64) {
	if b.cfg.Reset == rank.None || p <= b.ended {
		return
	}
	b.ended = p
	for _, k := range b.kinds {
		if f, ok := k.(finaler); ok {
			f.ended(p)
		}
	}
}

// past reports whether a frame of period p is past: its final went to a
// subscriber here (R19: the final frame is a period's last). Lock held.
func (b *board) past(p int64) bool { return b.ended != 0 && p <= b.ended }

// runFinal reads each group's standings of a final period and sends each
// top subscriber its final frame, an event superseding a pending frame of
// the period that ended. A cohort's id names another group in the next
// period, so this is the last frame of the group the subscriber watched.
// When the board itself is final, each frame becomes its key's current
// frame before it is sent: a later subscriber's top frame is the final one.
func (e *Engine) runFinal(ctx context.Context, j *finalJob, ts time.Time) {
	for _, fg := range j.groups {
		page, err := e.readTop(ctx, fg.src, j.board, j.read.sel, fg.id, fg.n)
		if err != nil {
			if j.current {
				e.mu.Lock()
				fg.retry()
				e.unlock()
			}
			continue // logged; the live frames go on
		}
		e.decorate(ctx, page.Entries)
		frames := make(map[int]*topFrame, len(fg.keys))
		for k := range fg.keys {
			f := newTopFrame(page, k, j.read, fg.src, fg.id)
			f.bytes = e.encodeTop(j.board, f, ts.UnixMilli())
			if j.read.period != 0 {
				e.keepFinal(finalKey{j.board, j.read.period, fg.src.name(), fg.id, k}, f.bytes)
			}
			frames[k] = f
		}
		if j.current {
			e.mu.Lock()
			for k, f := range frames {
				fg.hold(k, f)
			}
			e.unlock()
		}
		for k, to := range fg.keys {
			for _, t := range to {
				t.o.final(j.board, frames[k].bytes)
			}
		}
	}
}

// storeNow is the store's clock, or the engine's own when the store does
// not answer (frames then follow once it does).
func (e *Engine) storeNow(ctx context.Context) (time.Time, bool) {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.ReadTimeout)
	defer cancel()
	t, err := e.cfg.Store.Now(rctx)
	if err != nil {
		return e.now(), false
	}
	return t, true
}

// BoardDeleted tells every subscriber of board on this node that it is
// gone (a board frame with state "deleted") and ends their subscriptions:
// no frame of it follows.
func (e *Engine) BoardDeleted(board string) {
	e.mu.Lock()
	b := e.boards[board]
	var os []*Outbox
	if b != nil {
		os = b.outboxes()
		for _, o := range os {
			e.unregister(o, b)
		}
		e.dropBoard(board)
	}
	for k := range e.finals { // a board made again under the id has its own
		if k.board == board {
			delete(e.finals, k)
		}
	}
	e.mu.Unlock()
	frame, _ := json.Marshal(proto.Board{Type: proto.TypeBoard, Board: board, State: "deleted", TS: e.now().UnixMilli()})
	for _, o := range os {
		o.closeBoard(board)
		o.event(frame)
	}
}
