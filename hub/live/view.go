package live

import (
	"cmp"
	"context"
	"encoding/json"
	"math"
	"slices"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// Member views (docs/protocol.md §4 R8): `view` frames of one member and
// its neighbours. Watchers of one (board, member, around) share one view.
// Each view keeps the score range of its window (in goodness space, in
// rangeIndex); a change marks it only when the change's old-to-new span
// touches that range, or the change is the viewed member's own. Dirty
// views are read in one Ranks call per around per tick.

// views is a board's member views. Guarded by Engine.mu.
type views struct {
	b        *board
	byKey    map[viewKey]*view
	byMember map[string][]*view
	marked   []*view // views marked dirty, in marking order (may hold removed views)
	index    rangeIndex
	nextID   uint64
	// While a job reads, changes are logged so that a view installed from a
	// read at seq S can be checked against the changes after S that were
	// tested against its previous window (replay).
	log     []logged
	logOver bool // the log was full: replay must assume the worst
}

type logged struct {
	seq    int64
	member string
	cohort string // the change's cohort on a cohort board (§12)
	lo, hi int64  // the change's span in goodness space
}

type viewKey struct {
	member string
	around int
	meta   bool // the subscription said "meta": true
	region bool // the window is within the member's region (scope "region", §17)
}

// view is one (board, member, around) watched by one or more connections.
type view struct {
	id       uint64
	key      viewKey
	watchers *subscribers
	dirty    bool
	removed  bool
	res      *viewResult // nil until the first read; replaced, never mutated
	stamp

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
	frame
	mr       rank.MemberRank
	decimals int // as topFrame's
}

func newViews(b *board) *views {
	return &views{b: b, byKey: make(map[viewKey]*view), byMember: make(map[string][]*view)}
}

type viewPart struct {
	vs *views
	v  *view
}

func (vs *views) join(sp *Spec, st *start) part {
	if sp.Around == 0 {
		return nil
	}
	k := viewKey{sp.Member, sp.Around, sp.Meta, sp.RegionView}
	v := vs.byKey[k]
	if v == nil {
		vs.nextID++
		v = &view{id: vs.nextID, key: k, watchers: newSubscribers()}
		vs.byKey[k] = v
		vs.byMember[k.member] = append(vs.byMember[k.member], v)
	}
	if v.watchers.join(st, viewSlot, held(v.res), v.stamp, v.dirty) {
		vs.mark(v, 0)
	}
	return &viewPart{vs, v}
}

func (p *viewPart) leave(o *Outbox) {
	vs, v := p.vs, p.v
	if !v.watchers.leave(o) {
		return
	}
	v.removed = true
	vs.index.remove(v)
	delete(vs.byKey, v.key)
	m := slices.DeleteFunc(vs.byMember[v.key.member], func(x *view) bool { return x == v })
	if len(m) == 0 {
		delete(vs.byMember, v.key.member)
	} else {
		vs.byMember[v.key.member] = m
	}
	if len(vs.byKey) == 0 {
		vs.marked = nil
	}
}

// mark marks v for a read; seq is the change behind it (stamp).
func (vs *views) mark(v *view, seq int64) {
	v.touch(seq)
	if !v.dirty && !v.removed {
		v.dirty = true
		vs.marked = append(vs.marked, v)
		vs.b.kick()
	}
}

func (vs *views) changed(c rank.Change) {
	if len(vs.byKey) == 0 {
		return
	}
	b := vs.b
	if !b.cfgOK {
		vs.markAll(c.Seq) // no order known: cannot place the change
		return
	}
	l := logged{seq: c.Seq, member: c.Member, cohort: c.Cohort, lo: math.MinInt64, hi: b.goodness(c.New)}
	if c.Old != nil { // else: a new member comes from "worst possible"
		o := b.goodness(*c.Old)
		l.lo, l.hi = min(o, l.hi), max(o, l.hi)
	}
	if c.RegionFrom != "" { // it left a region and arrived in another, each as from the worst
		l.lo = math.MinInt64
	}
	vs.touch(l)
	if b.reading {
		if len(vs.log) < maxLog {
			vs.log = append(vs.log, l)
		} else {
			vs.logOver = true
		}
	}
}

// touch marks the views a change may affect: the changed member's own,
// and every found view whose window range intersects the change's span
// (the span crosses or enters the window, so a rank, score or neighbour
// moves). On a cohort board a view's window is within its member's cohort,
// which a change in another cohort cannot move (sameCohort).
func (vs *views) touch(l logged) {
	for _, v := range vs.byMember[l.member] {
		vs.mark(v, l.seq)
	}
	vs.index.stab(l.lo, l.hi, func(v *view) {
		if sameCohort(v, l) {
			vs.mark(v, l.seq)
		}
	})
}

// sameCohort reports whether a change may move view v as far as cohorts
// go: a view's window is within its member's cohort, and the change's
// ranks within the change's. A view or change whose cohort is unknown may.
// Both name cohorts of the period they were read or made in; a change in
// another period than the view's cannot move it anyway.
func sameCohort(v *view, l logged) bool {
	if l.cohort == "" || v.res == nil || v.res.mr.Cohort == "" {
		return true
	}
	return v.res.mr.Cohort == l.cohort
}

func (vs *views) markAll(seq int64) {
	for _, v := range vs.byKey {
		vs.mark(v, seq)
	}
}

func (vs *views) profiles(changed map[string]struct{}) {
	for _, v := range vs.byKey {
		if v.res != nil && shows(changed, v.res.mr.Around) {
			vs.mark(v, vs.b.unseq())
		}
	}
}

func (vs *views) dirty() bool { return len(vs.marked) > 0 }

func (vs *views) each(fn func(*subscribers)) {
	for _, v := range vs.byKey {
		fn(v.watchers)
	}
}

// viewPass is a job's view reads: one Ranks call per around.
type viewPass struct {
	vs     *views
	groups []aroundRead
}

type aroundRead struct {
	around int
	region bool // RegionRanks, not Ranks
	vjs    []viewJob
	ok     bool
	seq    int64
	period int64
}

type viewJob struct {
	v    *view
	prev *viewResult // v.res when the job started
	next *viewResult // set when the read succeeded
}

func (vs *views) snapshot(j *job) pass {
	// The previous job's log is spent: log this one's.
	clear(vs.log)
	vs.log, vs.logOver = vs.log[:0], false
	var p *viewPass
	for _, v := range vs.marked {
		if v.removed || !v.dirty {
			continue
		}
		v.dirty = false
		if p == nil {
			p = &viewPass{vs: vs}
		}
		i := slices.IndexFunc(p.groups, func(g aroundRead) bool { return g.around == v.key.around && g.region == v.key.region })
		if i < 0 {
			i = len(p.groups)
			p.groups = append(p.groups, aroundRead{around: v.key.around, region: v.key.region})
		}
		p.groups[i].vjs = append(p.groups[i].vjs, viewJob{v: v, prev: v.res})
	}
	clear(vs.marked)
	vs.marked = vs.marked[:0]
	if p == nil {
		return nil
	}
	return p
}

func (p *viewPass) read(ctx context.Context, j *job) (first error) {
	for i := range p.groups {
		first = cmp.Or(first, p.readAround(ctx, j, &p.groups[i]))
	}
	return first
}

func (p *viewPass) readAround(ctx context.Context, j *job, g *aroundRead) error {
	e := j.e
	members := make([]string, len(g.vjs))
	for i, vj := range g.vjs {
		members[i] = vj.v.key.member
	}
	read := e.readRanks
	if g.region {
		read = e.readRegionRanks // region.go
	}
	r, err := read(ctx, j.b.id, j.final.sel, members, g.around)
	if err != nil {
		return err
	}
	e.decorateRanks(ctx, r.Members)
	ts := e.now().UnixMilli()
	for i := range g.vjs {
		vj := &g.vjs[i]
		next := &viewResult{frame: frame{seq: r.Seq}, mr: r.Members[i], decimals: r.Decimals}
		if vj.prev == nil || !sameView(vj.prev.mr, next.mr) {
			next.bytes = e.encodeView(j.b.id, vj.v.key, next, ts)
		}
		vj.next = next
	}
	g.ok, g.seq, g.period = true, r.Seq, r.Period
	return nil
}

func (p *viewPass) install(j *job, out []delivery) []delivery {
	vs, b := p.vs, j.b
	var installed []*view
	minSeq := int64(-1)
	for _, g := range p.groups {
		if !g.ok {
			for _, vj := range g.vjs {
				vs.mark(vj.v, 0) // again next tick
			}
			continue
		}
		if minSeq < 0 || g.seq < minSeq {
			minSeq = g.seq
		}
		for _, vj := range g.vjs {
			v := vj.v
			if j.stale(&v.stamp, g.seq, g.period) {
				vs.mark(v, 0)
			}
			if v.removed {
				continue
			}
			// next becomes current when it is newer and different, and the
			// view's window is indexed again (subscribers.settle).
			next := vj.next
			var ok bool
			out, ok = v.watchers.settle(out, slotKey{b.id, viewSlot}, j.at, held(v.res), &next.frame,
				v.res != nil && sameView(v.res.mr, next.mr), func() { next.bytes = j.e.encodeView(b.id, v.key, next, j.e.now().UnixMilli()) })
			if ok {
				v.res = next
				vs.setRange(v)
				installed = append(installed, v)
			}
		}
	}
	if minSeq >= 0 {
		vs.replay(minSeq, installed)
	}
	return out
}

// replay re-tests the changes logged since the job began whose seq is
// above what it read (minSeq) against the windows now installed: they were
// tested against the windows the read replaced.
func (vs *views) replay(minSeq int64, installed []*view) {
	if len(installed) == 0 {
		return
	}
	if vs.logOver {
		for _, v := range installed {
			vs.mark(v, 0)
		}
		return
	}
	for _, l := range vs.log {
		if l.seq > minSeq {
			vs.touch(l)
		}
	}
}

// setRange recomputes v's window range from its result and re-indexes it.
func (vs *views) setRange(v *view) {
	vs.index.remove(v)
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
		b := vs.b
		v.lo, v.hi = b.goodness(around[len(around)-1].Score), b.goodness(around[0].Score)
		if i < v.key.around { // fewer neighbours above than asked: rank 1 is in the window
			v.hi = math.MaxInt64
		}
		if len(around)-1-i < v.key.around { // the window reaches the last rank
			v.lo = math.MinInt64
		}
	}
	vs.index.insert(v)
}

func sameView(a, b rank.MemberRank) bool {
	return a.Found == b.Found && a.Rank == b.Rank && a.Score == b.Score && slices.Equal(a.Around, b.Around)
}

// encodeView is the exact JSON of a proto.View frame; an absent member has
// rank and score null and around [].
func (e *Engine) encodeView(board string, k viewKey, r *viewResult, ts int64) []byte {
	e.encoded.Add(1)
	f := proto.View{
		Type: proto.TypeView, Board: board, Member: k.member,
		Around: frameEntries(r.mr.Around, k.meta), Seq: r.seq, TS: ts,
	}
	if k.region {
		f.Region = r.mr.Region
	}
	if r.mr.Found {
		rk, sc := r.mr.Rank, r.mr.Score
		f.Rank, f.Score = &rk, &sc
	} else {
		f.Around = []proto.Entry{}
	}
	b, _ := json.Marshal(f)
	return proto.Decimalize(b, r.decimals)
}
