package live

// Board streams and resume (docs/protocol.md §15). A board's stream is its
// epoch and the seq at which each transition of its schedule was recorded
// in the store (rank.Streams): every node records a transition the first
// time it sees it, before it tells its subscribers (a board frame, a final
// frame), so "changed after seq N" is one comparison for events and
// transitions alike. A resume then gets, in order, the final frames of the
// periods whose finality was recorded after its seq, the board frame if
// the phase or schedule was, and each kind's frames whose key changed
// (stamp.unchanged).
//
// A read of another node may see a transition's mark before this node has
// told it: a frame of that read would reach a client that then lacks the
// transition's frames. So a job whose read may have followed the board's
// next transition (by the store's clock, give or take transitionMargin)
// asks the store's marks before it delivers, and tells what they record
// first.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// Streams is what resume needs of the store (rank.Streams); New asserts
// it of Config.Store. Without it subscriptions carry no epoch and never
// resume.
type Streams interface {
	MarkStream(ctx context.Context, board string) (rank.Stream, error)
	RenewEpoch(ctx context.Context, board, old string) (string, error)
}

// transitionMargin is how far ahead of a transition, by this node's
// estimate of the store's clock, a job checks the store's marks before it
// delivers: more than the estimate's error (a round trip, the drift
// between resyncs).
const transitionMargin = 250 * time.Millisecond

// streamState is a board's stream as this node last recorded or read it.
// Guarded by Engine.mu.
type streamState struct {
	st rank.Stream
	ok bool
	// key is the schedule key of the config it was read for; nextAt the
	// first transition after the moment it was read (zero: none).
	key    string
	nextAt time.Time
}

// phaseNow is the moment b's phase is told at, by the store's time sn
// (an estimate): a transition is told once it is recorded (rank.Streams),
// so that every frame after it on any node is newer than its mark. That
// is sn, a later transition the store recorded (another node saw it
// first), or, while the next transition is past by sn but not recorded yet
// (the estimate runs ahead of the store's clock, or the store did not
// answer), the last one recorded. Without a stream (no store streams, a
// board not read yet): sn. Lock held.
func (b *board) phaseNow(sn time.Time) time.Time {
	s := &b.stream
	l, ok := b.lastMark()
	if !ok {
		return sn
	}
	if l.After(sn) || (!s.nextAt.IsZero() && !sn.Before(s.nextAt)) {
		return l
	}
	return sn
}

// lastMark is the moment of the last transition b's stream records, if
// any. Lock held.
func (b *board) lastMark() (time.Time, bool) {
	s := &b.stream
	if !s.ok || len(s.st.Marks) == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(s.st.Marks[len(s.st.Marks)-1].At), true
}

// recorded reports whether b's stream holds every transition up to sn and
// b's schedule. Lock held.
func (b *board) recorded(sn time.Time) bool {
	s := &b.stream
	if !s.ok || s.key != b.cfg.ScheduleKey() {
		return false
	}
	return s.nextAt.IsZero() || sn.Before(s.nextAt)
}

// install makes st b's stream, read at store time sn. Lock held.
func (b *board) install(st rank.Stream, sn time.Time) {
	s := &b.stream
	if s.ok && s.st.Epoch == st.Epoch && st.Seq < s.st.Seq {
		return // an older read, overtaken
	}
	s.st, s.ok, s.key = st, true, b.cfg.ScheduleKey()
	// The seqs the marks took are no events: the change stream must not
	// wait for them, nor take their absence for lost changes (a gap
	// re-reads, and touches, everything).
	if b.seqKnown {
		now := b.e.now()
		for _, m := range st.Marks {
			b.accept(m.Seq, now)
		}
		b.accept(st.ScheduleSeq, now)
	}
	// The first transition the stream does not hold: after its last one,
	// which the store recorded when its clock had passed it.
	base := sn.Add(-transitionMargin)
	if n := len(st.Marks); n > 0 {
		base = time.UnixMilli(st.Marks[n-1].At)
	}
	s.nextAt = b.cfg.NextTransition(base)
	if st.Epoch == rank.UnbornEpoch {
		// A board --dev shows before its first write: looked at again
		// each second, since that write gives it an epoch of its own.
		s.nextAt = sn.Add(time.Second)
	}
}

// mark records board's transitions up to the store's clock and returns
// its stream; concurrent calls for one board share one store call.
func (e *Engine) mark(ctx context.Context, board string) (rank.Stream, error) {
	v, err := e.flights.do(ctx, "m\x00"+board, func(ctx context.Context) (any, error) {
		rctx, cancel := context.WithTimeout(ctx, e.cfg.ReadTimeout)
		defer cancel()
		e.reads.Add(1)
		return e.streams.MarkStream(rctx, board)
	})
	if err != nil {
		return rank.Stream{}, err
	}
	return v.(rank.Stream), nil
}

// markDue records the transitions the store's clock sn has reached on the
// watched boards whose streams do not hold them yet, before the tick tells
// their subscribers.
func (e *Engine) markDue(ctx context.Context, sn time.Time) {
	if e.streams == nil {
		return
	}
	var due []string
	e.mu.Lock()
	for id, b := range e.boards {
		if b.cfgOK && !b.recorded(sn) {
			due = append(due, id)
		}
	}
	e.mu.Unlock()
	e.markAll(ctx, due, sn)
}

func (e *Engine) markAll(ctx context.Context, ids []string, sn time.Time) {
	var g errgroup.Group
	g.SetLimit(e.cfg.Parallel)
	for _, id := range ids {
		g.Go(func() error {
			st, err := e.mark(ctx, id)
			if err != nil {
				e.readFailed(ctx, "mark stream", id, err)
				return nil
			}
			e.mu.Lock()
			if b := e.boards[id]; b != nil {
				b.install(st, sn)
			}
			e.mu.Unlock()
			return nil
		})
	}
	g.Wait()
}

// settleTransitions runs before a job of b delivers what it read: when the
// read may have followed b's next transition, the store's marks say
// whether it did, and a transition recorded there is told first (R19's
// board and final frames), so that no subscriber holds a frame newer than
// a transition it was not told.
func (e *Engine) settleTransitions(ctx context.Context, b *board) {
	if e.streams == nil {
		return
	}
	e.mu.Lock()
	next := b.stream.nextAt
	// A subscribe's read of the stream may have recorded a transition
	// that the tick did not tell yet: told first, at its mark.
	var f *finalJob
	l, ok := b.lastMark()
	if ok && b.cfgOK && b.lc.known && l.After(b.lc.at) {
		f = e.lifecycleTick(b, l)
	}
	e.unlock()
	if f != nil {
		e.runFinal(ctx, f, l)
	}
	if next.IsZero() {
		return
	}
	sn, _ := e.storeNow(ctx)
	if sn.Before(next.Add(-transitionMargin)) {
		return
	}
	st, err := e.mark(ctx, b.id)
	if err != nil {
		e.readFailed(ctx, "mark stream", b.id, err)
		return
	}
	e.mu.Lock()
	b.install(st, sn)
	f = nil
	if b.cfgOK {
		f = e.lifecycleTick(b, b.phaseNow(sn))
	}
	e.unlock()
	if f != nil {
		e.runFinal(ctx, f, sn)
	}
}

// Joined is what a subscribe answers of the board's stream (§15).
type Joined struct {
	Epoch   string // "" when the store keeps no streams
	Resumed bool
}

// SubscribeStream is SubscribeSpec with §15's resume: since (nil: none) is
// the client's last epoch and greatest seq of the board. When since's
// epoch is the board's, the subscription resumes: the final frames of the
// periods that became final after since's seq (oldest first, at most
// retain), the board frame if the phase or schedule changed after it, and
// each kind's frames that changed after it; else it is a fresh
// subscription. A seq beyond the store's own means the store lost data:
// the board gets a new epoch, and the subscription is fresh. The stream
// comes from memory when this node holds it up to the store's clock.
func (e *Engine) SubscribeStream(ctx context.Context, o *Outbox, sp Spec, since *proto.Since) (Joined, error) {
	if e.streams == nil {
		return Joined{}, e.SubscribeSpec(ctx, o, sp)
	}
	if err := sp.check(); err != nil {
		return Joined{}, err
	}
	cfg, err := e.config(ctx, sp.Board)
	if err != nil {
		return Joined{}, fmt.Errorf("live: subscribe: %w", err)
	}
	for try := 1; ; try++ {
		if try == maxOvertaken {
			since = nil // fresh: nothing to overtake
		}
		j, err := e.subscribeStream(ctx, o, sp, cfg, since)
		if !errors.Is(err, errOvertaken) {
			return j, err
		}
	}
}

// errOvertaken is SubscribeSpec's answer to a resume that this node's
// tick overtook between its read of the stream and its subscription
// (board.joinPhase): the resume reads the stream again, which holds what
// the tick told (recorded first).
var errOvertaken = errors.New("live: resume overtaken by a transition")

// maxOvertaken bounds a resume's reads of the stream: transitions are far
// apart, so the second read is the last one overtaken; the last try is a
// fresh subscription.
const maxOvertaken = 3

// subscribeStream is one try of SubscribeStream, cfg the board's config.
func (e *Engine) subscribeStream(ctx context.Context, o *Outbox, sp Spec, cfg rank.Board, since *proto.Since) (Joined, error) {
	sn, _ := e.storeNow(ctx)
	st, err := e.streamOf(ctx, sp.Board, sn, false)
	if err != nil {
		// The store fails: a fresh subscription, whose frames come with
		// the first read that succeeds; without an epoch, the client
		// cannot resume it.
		e.readFailed(ctx, "mark stream", sp.Board, err)
		return Joined{}, e.SubscribeSpec(ctx, o, sp)
	}
	resumed := false
	if since != nil {
		st, resumed = e.resumable(ctx, sp.Board, sn, st, since)
	}
	sp.stream = &st
	if resumed {
		sp.shown = latestOf(st, sn)
		sp.Resume, sp.Since = true, since.Seq
		sp.quiet = !boardChanged(cfg, st, since.Seq, sp.shown)
		if sp.Top > 0 {
			sp.finals, sp.lastFinal = e.missedFinals(ctx, cfg, st, since.Seq, sp.shown, &sp)
		}
	}
	return Joined{Epoch: st.Epoch, Resumed: resumed}, e.SubscribeSpec(ctx, o, sp)
}

// streamOf is board's stream: the one held when it holds every transition
// up to sn (and fresh is not asked), else the store's.
func (e *Engine) streamOf(ctx context.Context, board string, sn time.Time, fresh bool) (rank.Stream, error) {
	e.mu.Lock()
	if b := e.boards[board]; !fresh && b != nil && b.cfgOK && b.recorded(sn) {
		st := b.stream.st
		e.mu.Unlock()
		return st, nil
	}
	e.mu.Unlock()
	st, err := e.mark(ctx, board)
	if err != nil {
		return rank.Stream{}, err
	}
	e.mu.Lock()
	if b := e.boards[board]; b != nil && b.cfgOK {
		b.install(st, sn)
	}
	e.mu.Unlock()
	return st, nil
}

// resumable checks since against board's stream st: whether the client
// resumes, and the stream to answer with. A held stream with another
// epoch is read again first (another node renewed it, or the board was
// made again); a seq beyond what the store has renews the epoch.
func (e *Engine) resumable(ctx context.Context, board string, sn time.Time, st rank.Stream, since *proto.Since) (rank.Stream, bool) {
	if since.Epoch != st.Epoch {
		fresh, err := e.streamOf(ctx, board, sn, true)
		if err != nil || since.Epoch != fresh.Epoch {
			return st, false
		}
		st = fresh
	}
	// The greatest seq this node knows of: its stream's, its change
	// stream's, its reads'.
	e.mu.Lock()
	known := st.Seq
	if b := e.boards[board]; b != nil {
		known = max(known, b.maxSeq, b.seenSeq)
	}
	e.mu.Unlock()
	if since.Seq <= known {
		return st, true
	}
	// Ahead of what this node knows: the store may just be ahead of it,
	// else its seq went back (a store that lost writes).
	fresh, err := e.streamOf(ctx, board, sn, true)
	if err != nil {
		return st, false
	}
	if since.Seq <= fresh.Seq {
		return fresh, fresh.Epoch == since.Epoch
	}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.ReadTimeout)
	epoch, err := e.streams.RenewEpoch(rctx, board, fresh.Epoch)
	cancel()
	if err != nil {
		e.readFailed(ctx, "renew epoch", board, err)
		return fresh, false
	}
	e.cfg.Logger.Warn("live: a client held a later seq than the store: the store lost writes; the board's stream gets a new epoch",
		"board", board, "seq", fresh.Seq, "client_seq", since.Seq, "epoch", epoch)
	fresh.Epoch = epoch
	e.mu.Lock()
	if b := e.boards[board]; b != nil && b.cfgOK {
		b.stream.ok = false // read again with the new epoch
	}
	e.mu.Unlock()
	return fresh, false
}

// latestOf is the moment a board's phase is told at for stream st at
// store time sn (board.phaseNow).
func latestOf(st rank.Stream, sn time.Time) time.Time {
	if n := len(st.Marks); n > 0 {
		if l := time.UnixMilli(st.Marks[n-1].At); l.After(sn) {
			return l
		}
	}
	return sn
}

// boardChanged reports whether a client at seq since holds another board
// frame than the one of now: the current phase, or the schedule, was
// recorded after since (or not at all).
func boardChanged(cfg rank.Board, st rank.Stream, since int64, now time.Time) bool {
	if st.ScheduleSeq > since {
		return true
	}
	tr := cfg.Transitions(now, 1)
	if len(tr) == 0 {
		return false
	}
	seq, ok := st.MarkOf(tr[0].At)
	return !ok || seq > since
}

// missedFinals is the final top frames (sp's N, meta and group) of the
// periods whose finality st recorded after seq since, oldest first, and
// the newest one's period: those still readable at now, but the board's
// own final when the board is final, which its current frame shows. Each
// comes from the engine's cache, else from one read shared by every
// resume that wants it.
func (e *Engine) missedFinals(ctx context.Context, cfg rank.Board, st rank.Stream, since int64, now time.Time, sp *Spec) (out [][]byte, last int64) {
	src := e.source(sp.Group.Kind)
	for _, tr := range cfg.Transitions(now, rank.MarkDepth(cfg)) {
		if !tr.Final {
			continue
		}
		seq, ok := st.MarkOf(tr.At)
		if !ok || seq <= since || !cfg.Retains(tr.FinalPeriod, now) {
			continue
		}
		if !cfg.EndsAt.IsZero() && tr.At.Equal(cfg.FinalAt()) {
			continue // the board's own final: its current frame
		}
		f, err := e.finalFrame(ctx, cfg, tr.FinalPeriod, src, sp.Group.ID, keyOf(sp.Top, sp.Meta))
		if err != nil {
			continue // logged; the live frames go on
		}
		out, last = append(out, f), tr.FinalPeriod
	}
	return out, last
}

// finalKey names one final frame: a board's period, a group, a top key.
type finalKey struct {
	board  string
	period int64
	src    string
	group  string
	k      int
}

// finalKeep is how long a final frame is kept for resumes: final standings
// change only by moderation, which a client away that long sees in the
// next frame of it anyway.
const finalKeep = time.Minute

// maxFinals bounds the final frames kept.
const maxFinals = 4096

type keptFinal struct {
	bytes []byte
	at    time.Time
}

// finalFrame is the final top frame of period of board cfg for the top
// key k of group id of src.
func (e *Engine) finalFrame(ctx context.Context, cfg rank.Board, period int64, src source, id string, k int) ([]byte, error) {
	key := finalKey{cfg.ID, period, src.name(), id, k}
	now := e.now()
	e.mu.Lock()
	if f, ok := e.finals[key]; ok && now.Sub(f.at) < finalKeep {
		e.mu.Unlock()
		return f.bytes, nil
	}
	e.mu.Unlock()
	v, err := e.flights.do(ctx, fmt.Sprint("f\x00", key), func(ctx context.Context) (any, error) {
		read := finalPeriod(cfg, period)
		page, err := e.readTop(ctx, src, cfg.ID, read.sel, id, topCount(k))
		if err != nil {
			return nil, err
		}
		e.decorate(ctx, page.Entries)
		b := e.encodeTop(cfg.ID, newTopFrame(page, k, read, src, id), e.now().UnixMilli())
		e.keepFinal(key, b)
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// keepFinal keeps a final frame for resumes.
func (e *Engine) keepFinal(key finalKey, b []byte) {
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.finals) >= maxFinals {
		for k, f := range e.finals {
			if now.Sub(f.at) >= finalKeep || len(e.finals) >= maxFinals {
				delete(e.finals, k)
			}
		}
	}
	e.finals[key] = keptFinal{b, now}
}

// flights lets concurrent callers of one key share one call.
type flights struct{ g singleflight.Group }

// do runs fn once for every caller of key that arrives while it runs; a
// caller whose ctx ends stops waiting (the call goes on for the others).
func (fs *flights) do(ctx context.Context, key string, fn func(context.Context) (any, error)) (any, error) {
	ch := fs.g.DoChan(key, func() (any, error) { return fn(context.WithoutCancel(ctx)) })
	select {
	case r := <-ch:
		return r.Val, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
