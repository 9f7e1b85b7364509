package live

import (
	"context"
	"fmt"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// Limits of a subscription (docs/protocol.md §4).
const (
	MaxTop    = rank.MaxTop
	MaxAround = rank.MaxAround
)

// Spec is one subscribe's ask (docs/protocol.md §4, §11, §12, §15).
type Spec struct {
	Board string
	// Top: top frames of the first Top entries; 0: none.
	Top int
	// Member and Around: view frames of Member with Around neighbours; 0:
	// none.
	Member string
	Around int
	// Members: members frames of these ids (1..MaxMembers); nil: none.
	Members []string
	// Meta: top and view frames carry their entries' meta.
	Meta bool
	// Group, when its Kind is set, fills the top slot with that group's
	// standings instead of the board's (Cohort, §12).
	Group Group
	// RegionView: the view is within the member's region on a region
	// board (scope "region", §17).
	RegionView bool
	// Owner is the member whose Members count toward its bound on this
	// node (Config.MaxListIDs); "": none (servers, anonymous spectators).
	Owner string
	// Resume: the connection resumes the client's subscription, whose
	// greatest seq of the board was Since (§15): a frame that shows what
	// the client had at Since is not sent again (stamp.unchanged).
	Resume bool
	Since  int64

	// Set by SubscribeStream (stream.go): the board's stream as read for
	// this subscribe; for a resume, the moment that stream shows the board
	// at, the final frames it missed (sent first) and the newest one's
	// period, and quiet: the client holds the board frame already.
	stream    *rank.Stream
	shown     time.Time
	finals    [][]byte
	lastFinal int64
	quiet     bool
}

// Group names one group of a board's members: a Kind of grouping (Cohort)
// and the group's id within the board.
type Group struct{ Kind, ID string }

// check validates what of sp needs no board config.
func (sp *Spec) check() error {
	if err := checkMembers(sp.Board, sp.Members); err != nil {
		return err
	}
	switch {
	case !rank.ValidBoardID(sp.Board):
		return fmt.Errorf("live: subscribe %q: %w", sp.Board, rank.ErrInvalidBoard)
	case sp.Top < 0 || sp.Top > MaxTop:
		return fmt.Errorf("live: subscribe %s: %w: top %d is not within 0..%d", sp.Board, rank.ErrBadRequest, sp.Top, MaxTop)
	case sp.Around < 0 || sp.Around > MaxAround:
		return fmt.Errorf("live: subscribe %s: %w: around %d is not within 0..%d", sp.Board, rank.ErrBadRequest, sp.Around, MaxAround)
	case sp.Around > 0 && !rank.ValidMemberID(sp.Member):
		return fmt.Errorf("live: subscribe %s: %w", sp.Board, rank.ErrInvalidMember)
	case sp.Group.Kind != "" && sp.Group.ID == "":
		return fmt.Errorf("live: subscribe %s: %w: %s: an empty id", sp.Board, rank.ErrBadRequest, sp.Group.Kind)
	case sp.Since < 0:
		return fmt.Errorf("live: subscribe %s: %w: since %d", sp.Board, rank.ErrBadRequest, sp.Since)
	}
	return nil
}

// SubscribeSpec subscribes o to sp.Board as sp asks, replacing o's previous
// subscription to the board. The frames this node holds go in o at once
// (R7), and cost no store read (R33); a frame it does not hold yet comes
// from the board's next read, which every subscriber arriving before it
// shares. The board frame (R19) goes first.
//
// An invalid Spec, an unknown board or a failed config read changes
// nothing: o keeps its previous subscription to the board, if any.
func (e *Engine) SubscribeSpec(ctx context.Context, o *Outbox, sp Spec) error {
	if err := sp.check(); err != nil {
		return err
	}
	if sp.Top == 0 && sp.Around == 0 && len(sp.Members) == 0 {
		e.Unsubscribe(o, sp.Board)
		return nil
	}
	src := e.source(sp.Group.Kind)
	if src == nil {
		return fmt.Errorf("live: subscribe %s: %w: no groups of kind %q", sp.Board, rank.ErrBadRequest, sp.Group.Kind)
	}
	cfg, err := e.config(ctx, sp.Board)
	if err != nil {
		return fmt.Errorf("live: subscribe: %w", err)
	}
	if sp.Group.Kind != "" {
		if err := src.check(cfg, sp.Group.ID); err != nil {
			return fmt.Errorf("live: subscribe %s: %w", sp.Board, err)
		}
	}
	if _, ok := e.cfg.Store.(regionRanker); sp.RegionView && (!cfg.Regions || !ok) {
		return fmt.Errorf("live: subscribe %s: %w", sp.Board, rank.NoRegions(sp.Board))
	}
	sn, _ := e.storeNow(ctx)
	now := e.now()
	e.mu.Lock()
	b := e.boards[sp.Board]
	if b == nil {
		b = e.newBoard(sp.Board)
	}
	if err := e.admit(o, b, &sp); err != nil {
		e.mu.Unlock()
		return err
	}
	if !b.cfgOK {
		b.setCfg(cfg, now)
	}
	if sp.stream != nil && b.cfgOK && (!b.stream.ok || b.stream.st.Seq < sp.stream.Seq) {
		b.install(*sp.stream, sn)
	}
	v, ok := b.joinPhase(&sp, sn)
	if !ok {
		e.mu.Unlock()
		return errOvertaken
	}
	e.unregister(o, b)
	e.addBoard(b) // new, or unregister dropped it as left empty
	subs := e.conns[o]
	if subs == nil {
		subs = make(map[string]*sub)
		e.conns[o] = subs
	}
	s := &sub{parts: make([]part, len(b.kinds))}
	subs[b.id] = s
	b.nsubs++
	o.resumeFinals(sp.finals)
	b.joined(o, v, &sp)
	st := &start{o: o, board: b.id, last: b.lastSeq, resume: sp.Resume, since: sp.Since, reading: b.reading}
	for i, k := range b.kinds {
		s.parts[i] = k.join(&sp, st)
	}
	for k, gen := range st.opened {
		if gen == 0 {
			o.close(slotKey{b.id, slotKind(k)})
		}
	}
	countFrames(b, st.out)
	e.unlock()
	deliver(st.out)
	return nil
}

// An admitter is a kind that may refuse a subscription for what it holds
// (a bound), asked before anything changes. old is the connection's
// current part of the kind on the board (nil: none), which the
// subscription would replace. Lock held.
type admitter interface {
	admit(sp *Spec, old part) error
}

// admit asks b's kinds whether o may subscribe as sp asks. Lock held.
func (e *Engine) admit(o *Outbox, b *board, sp *Spec) error {
	cur := e.conns[o][b.id]
	for i, k := range b.kinds {
		if a, ok := k.(admitter); ok {
			var old part
			if cur != nil {
				old = cur.parts[i]
			}
			if err := a.admit(sp, old); err != nil {
				return err
			}
		}
	}
	return nil
}

// source is the standings source of Group kind name; nil: none.
func (e *Engine) source(name string) source {
	for _, src := range e.sources {
		if src.name() == name {
			return src
		}
	}
	return nil
}

// config is board's config: the one held, else read.
func (e *Engine) config(ctx context.Context, board string) (rank.Board, error) {
	e.mu.Lock()
	b := e.boards[board]
	if b != nil && b.cfgOK {
		cfg := b.cfg
		e.mu.Unlock()
		return cfg, nil
	}
	e.mu.Unlock()
	// The config gives the order, needed to place view windows; it also
	// turns an unknown board into an error before anything is kept.
	return e.getBoard(ctx, board)
}

// sub is one connection's subscription to one board: its part of each of
// the board's kinds (nil: it asked nothing of it).
type sub struct{ parts []part }

// Unsubscribe ends o's subscription to board, pending frames included.
func (e *Engine) Unsubscribe(o *Outbox, board string) {
	e.mu.Lock()
	if b := e.boards[board]; b != nil {
		e.unregister(o, b)
	}
	e.mu.Unlock()
	o.closeBoard(board)
}

// Drop forgets every subscription of o (its connection is gone).
func (e *Engine) Drop(o *Outbox) {
	var ids []string
	e.mu.Lock()
	for id := range e.conns[o] {
		if b := e.boards[id]; b != nil {
			e.unregister(o, b)
		}
		ids = append(ids, id)
	}
	delete(e.conns, o)
	e.mu.Unlock()
	for _, id := range ids {
		o.closeBoard(id)
	}
}

// unregister removes o's subscription to b, and b itself when nothing is left
// on it. Lock held.
func (e *Engine) unregister(o *Outbox, b *board) {
	subs := e.conns[o]
	s := subs[b.id]
	if s == nil {
		return
	}
	delete(subs, b.id)
	if len(subs) == 0 {
		delete(e.conns, o)
	}
	delete(b.toldAhead, o)
	for _, p := range s.parts {
		if p != nil {
			p.leave(o)
		}
	}
	if b.nsubs--; b.nsubs == 0 && e.boards[b.id] == b {
		e.dropBoard(b.id)
	}
}

// addBoard makes b the board of its id, telling OnWatch when that id had
// none (its first local subscription). Lock held.
func (e *Engine) addBoard(b *board) {
	if e.boards[b.id] == b {
		return
	}
	_, had := e.boards[b.id]
	e.boards[b.id] = b
	if !had && e.cfg.OnWatch != nil {
		e.cfg.OnWatch(b.id, true)
	}
}

// dropBoard forgets board id, telling OnWatch (its last local subscription
// ended). Lock held.
func (e *Engine) dropBoard(id string) {
	if _, ok := e.boards[id]; !ok {
		return
	}
	delete(e.boards, id)
	if e.cfg.OnWatch != nil {
		e.cfg.OnWatch(id, false)
	}
}
