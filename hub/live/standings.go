package live

import (
	"context"
	"encoding/json"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// Standings: `top` frames of the whole board, or of one group of its
// members (docs/protocol.md §4 R7, §12 cohorts). A source says where a
// group's standings are read and which group a change moved in; the rest
// is shared: per dirty group one read of the largest N its subscribers
// want per tick, one encoding per (group, N), and the final frames of R19.

// A source is a grouping of a board's members whose standings fill a
// subscriber's top slot. It is stateless: the standings kind keeps the
// state.
type source interface {
	// name is the Spec.Group.Kind that selects it; "" the whole board.
	name() string
	// check reports whether id names a group of a board with config cfg.
	check(cfg rank.Board, id string) error
	// place is the group change c moved in and its ranks there (prev 0:
	// it was not ranked before); ok false: c names no group, so it may
	// have moved any.
	place(c rank.Change) (id string, rnk, prev int64, ok bool)
	// top reads a group's first n entries.
	top(ctx context.Context, board string, sel rank.PeriodSel, id string, n int) (rank.Page, error)
	// label names the group in its frames.
	label(t *proto.Top, id string)
}

// sources are the groupings a top slot can show, the whole board first. A
// new grouping is its file and a line here.
func sources(st Store) ([]source, error) {
	var out []source
	for _, mk := range []func(Store) (source, error){
		newWholeBoard,
		newCohorts,
		newRegions, // region.go
	} {
		src, err := mk(st)
		if err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	return out, nil
}

// wholeBoard is the board's own standings: one group, "".
type wholeBoard struct{ st Store }

func newWholeBoard(st Store) (source, error) { return wholeBoard{st}, nil }

func (wholeBoard) name() string                   { return "" }
func (wholeBoard) check(rank.Board, string) error { return nil }
func (wholeBoard) label(*proto.Top, string)       {}
func (wholeBoard) place(c rank.Change) (string, int64, int64, bool) {
	// On a cohort board c's ranks are within its cohort, never worse than
	// on the whole board: the top-N test still marks every change that
	// can move the board's top.
	return "", c.Rank, c.PrevRank, true
}

func (w wholeBoard) top(ctx context.Context, board string, sel rank.PeriodSel, _ string, n int) (rank.Page, error) {
	return w.st.Top(ctx, board, sel, 0, n)
}

// standings is one source's top subscriptions on one board. Guarded by
// Engine.mu.
type standings struct {
	b      *board
	src    source
	groups map[string]*group
	marked []*group // groups marked dirty, in marking order (may hold left ones)
}

// group is the top subscriptions of one group: one key per N asked.
type group struct {
	id    string
	keys  map[int]*topKey // by topKey(N, meta)
	maxN  int
	dirty bool
	stamp // every key's
}

// topKey is one (group, N, meta): its subscribers share each frame's bytes.
type topKey struct {
	k    int
	subs *subscribers
	cur  *topFrame // the latest frame; nil before the first read
}

type topFrame struct {
	frame
	entries []rank.Entry
	total   int64
	// decimals: the scores are in units of 10^-decimals (hot boards).
	decimals int
	// final: the frame shows a final board's standings (R19).
	final finalRead
	// period is the period the read answered for (b.past).
	period int64
	// meta: the entries carry their meta (a "meta": true subscription).
	meta  bool
	src   source
	group string
}

func newStandings(b *board, src source) *standings {
	return &standings{b: b, src: src, groups: make(map[string]*group)}
}

// topPart is a connection's subscription to one topKey.
type topPart struct {
	s   *standings
	g   *group
	key *topKey
}

func (s *standings) join(sp *Spec, st *start) part {
	if sp.Top == 0 || sp.Group.Kind != s.src.name() {
		return nil
	}
	g := s.groups[sp.Group.ID]
	if g == nil {
		g = &group{id: sp.Group.ID, keys: make(map[int]*topKey)}
		s.groups[g.id] = g
	}
	k := keyOf(sp.Top, sp.Meta)
	key := g.keys[k]
	if key == nil {
		key = &topKey{k: k, subs: newSubscribers()}
		g.keys[k] = key
	}
	g.maxN = max(g.maxN, topCount(k))
	if key.subs.join(st, topSlot, held(key.cur), g.stamp, g.dirty) {
		s.mark(g, 0)
	}
	return &topPart{s, g, key}
}

func (p *topPart) leave(o *Outbox) {
	s, g, key := p.s, p.g, p.key
	if !key.subs.leave(o) {
		return
	}
	delete(g.keys, key.k)
	g.maxN = 0
	for k := range g.keys {
		g.maxN = max(g.maxN, topCount(k))
	}
	if len(g.keys) == 0 {
		g.dirty = false // a pending mark in s.marked is then skipped
		delete(s.groups, g.id)
	}
}

// mark marks g's frames for a read; seq is the change behind it (stamp).
func (s *standings) mark(g *group, seq int64) {
	g.touch(seq)
	if !g.dirty && g.maxN > 0 {
		g.dirty = true
		s.marked = append(s.marked, g)
		s.b.kick()
	}
}

// changed marks the group c moved in when c touches the first maxN ranks
// there or adds a member; a change that names no group marks them all.
func (s *standings) changed(c rank.Change) {
	if len(s.groups) == 0 {
		return
	}
	id, rnk, prev, ok := s.src.place(c)
	if !ok {
		s.markAll(c.Seq)
		return
	}
	g := s.groups[id]
	if g == nil {
		return
	}
	if n := int64(g.maxN); c.Old == nil || rnk <= n || (prev > 0 && prev <= n) {
		s.mark(g, c.Seq)
	}
}

func (s *standings) markAll(seq int64) {
	for _, g := range s.groups {
		s.mark(g, seq)
	}
}

func (s *standings) profiles(changed map[string]struct{}) {
	for _, g := range s.groups {
		for _, key := range g.keys {
			if key.cur != nil && shows(changed, key.cur.entries) {
				s.mark(g, s.b.unseq())
				break
			}
		}
	}
}

func (s *standings) dirty() bool { return len(s.marked) > 0 }

func (s *standings) each(fn func(*subscribers)) {
	for _, g := range s.groups {
		for _, key := range g.keys {
			fn(key.subs)
		}
	}
}

// standingsPass is a job's reads of a standings kind: one per dirty group.
type standingsPass struct {
	s      *standings
	groups []groupRead
}

type groupRead struct {
	g    *group
	n    int // entries to read
	keys []keyRead
	ok   bool // the read succeeded
	page rank.Page
	ts   int64
}

type keyRead struct {
	key  *topKey
	prev *topFrame // key.cur when the job began
	next *topFrame // set when the read succeeded
}

func (s *standings) snapshot(j *job) pass {
	var p *standingsPass
	for _, g := range s.marked {
		if !g.dirty || s.groups[g.id] != g {
			continue
		}
		g.dirty = false
		r := groupRead{g: g, n: g.maxN, keys: make([]keyRead, 0, len(g.keys))}
		for _, key := range g.keys {
			r.keys = append(r.keys, keyRead{key: key, prev: key.cur})
		}
		if p == nil {
			p = &standingsPass{s: s}
		}
		p.groups = append(p.groups, r)
	}
	clear(s.marked)
	s.marked = s.marked[:0]
	if p == nil {
		return nil
	}
	return p
}

// read reads the pass's groups, up to Parallel at once.
func (p *standingsPass) read(ctx context.Context, j *job) error {
	if len(p.groups) == 1 {
		return p.readGroup(ctx, j, &p.groups[0])
	}
	var g errgroup.Group
	g.SetLimit(j.e.cfg.Parallel)
	for i := range p.groups {
		g.Go(func() error { return p.readGroup(ctx, j, &p.groups[i]) })
	}
	return g.Wait()
}

func (p *standingsPass) readGroup(ctx context.Context, j *job, r *groupRead) error {
	e, src := j.e, p.s.src
	page, err := e.readTop(ctx, src, j.b.id, j.final.sel, r.g.id, r.n)
	if err != nil {
		return err
	}
	e.decorate(ctx, page.Entries)
	r.page, r.ts = page, e.now().UnixMilli()
	for i := range r.keys {
		kr := &r.keys[i]
		f := newTopFrame(page, kr.key.k, j.final, src, r.g.id)
		if kr.prev == nil || !sameTop(kr.prev, f) {
			f.bytes = e.encodeTop(j.b.id, f, r.ts)
		}
		kr.next = f
	}
	r.ok = true
	return nil
}

func (p *standingsPass) install(j *job, out []delivery) []delivery {
	s, b := p.s, j.b
	for i := range p.groups {
		r := &p.groups[i]
		g := r.g
		switch {
		case s.groups[g.id] != g:
			continue // left meanwhile
		case !r.ok:
			s.mark(g, 0) // again next tick
			continue
		case !j.final.is && (b.past(r.page.Period) || finalOf(b).is):
			// Read before its period's final, or the board's, went out:
			// the next read is of the current period, or the final one.
			s.mark(g, 0)
			continue
		}
		if j.stale(&g.stamp, r.page.Seq, r.page.Period) {
			s.mark(g, 0)
		}
		// Each key's frame becomes current when it is newer and different
		// (subscribers.settle).
		for _, kr := range r.keys {
			key, f := kr.key, kr.next
			if g.keys[key.k] != key {
				continue
			}
			var ok bool
			out, ok = key.subs.settle(out, slotKey{b.id, topSlot}, j.at, held(key.cur), &f.frame,
				key.cur != nil && sameTop(key.cur, f), func() { f.bytes = j.e.encodeTop(b.id, f, r.ts) })
			if ok {
				key.cur = f
			}
		}
	}
	return out
}

// finalGroup is one group's part of a finalJob: its subscribers by key.
type finalGroup struct {
	s    *standings
	src  source
	id   string
	n    int
	keys map[int][]target
}

// finals lists each group's subscribers for a period or board that became
// final (R19). When the board did (board), its final frame is to be each
// key's current frame (finalGroup.hold): until then a key holds none, so a
// subscriber joining meanwhile waits for the next read, which is final;
// those owed a read now are sent the final frame, and owed nothing more.
// Lock held.
func (s *standings) finals(board bool) []finalGroup {
	var out []finalGroup
	for id, g := range s.groups {
		fg := finalGroup{s: s, src: s.src, id: id, n: g.maxN, keys: make(map[int][]target, len(g.keys))}
		for k, key := range g.keys {
			fg.keys[k] = key.subs.targets()
			if board {
				key.cur, key.subs.owed = nil, nil
			}
		}
		out = append(out, fg)
	}
	return out
}

// hold makes f, the final frame of a final board read at seq f.seq, the
// current frame of the group's key k, unless a later read's is: later
// subscribers get it, a resume from before it too. Lock held.
func (fg *finalGroup) hold(k int, f *topFrame) {
	g := fg.s.groups[fg.id]
	if g == nil || g.keys[k] == nil {
		return
	}
	if key := g.keys[k]; key.cur == nil || key.cur.seq <= f.seq {
		key.cur = f
		g.read = max(g.read, f.seq)
	}
}

// retry has the group read again: its final frame's read failed, and the
// next read, of the final board, brings it to every subscriber. Lock held.
func (fg *finalGroup) retry() {
	if g := fg.s.groups[fg.id]; g != nil {
		fg.s.mark(g, 0)
	}
}

// ended forgets the held frames of period p or older (not a final
// board's), and has the groups read: a later subscriber gets the current
// period's (b.ended), as do the others (a key held nothing).
func (s *standings) ended(p int64) {
	for _, g := range s.groups {
		for _, key := range g.keys {
			if key.cur != nil && key.cur.period <= p && !key.cur.final.is {
				key.cur = nil
				s.mark(g, 0)
			}
		}
	}
}

func newTopFrame(page rank.Page, k int, final finalRead, src source, group string) *topFrame {
	return &topFrame{
		frame:   frame{seq: page.Seq},
		entries: page.Entries[:min(topCount(k), len(page.Entries))], total: page.Total,
		decimals: page.Decimals, final: final, period: page.Period, meta: topMeta(k), src: src, group: group,
	}
}

func sameTop(a, b *topFrame) bool {
	return a.total == b.total && slices.Equal(a.entries, b.entries)
}

// encodeTop is the exact JSON of a proto.Top frame.
func (e *Engine) encodeTop(board string, f *topFrame, ts int64) []byte {
	e.encoded.Add(1)
	t := proto.Top{
		Type: proto.TypeTop, Board: board, Seq: f.seq,
		Entries: frameEntries(f.entries, f.meta), Total: f.total, TS: ts,
		Final: f.final.is, Period: f.final.period,
	}
	f.src.label(&t, f.group)
	b, _ := json.Marshal(t) // cannot fail for these plain types
	return proto.Decimalize(b, f.decimals)
}

// metaTop offsets the key of a "meta": true top subscription: such
// subscribers get other bytes than the others of the same N, so they are
// another key. topCount gives back N, topMeta the flag.
const metaTop = 1 << 20

func keyOf(n int, meta bool) int {
	if meta && n > 0 {
		return n + metaTop
	}
	return n
}

func topCount(k int) int { return k % metaTop }
func topMeta(k int) bool { return k >= metaTop }

// shows reports whether entries show a member of set.
func shows(set map[string]struct{}, entries []rank.Entry) bool {
	return slices.ContainsFunc(entries, func(x rank.Entry) bool { _, ok := set[x.Member]; return ok })
}
