package live

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/wsgateway/wsgateway/rank"
)

// Cohort top frames (docs/protocol.md §12): a subscription that names a
// cohort gets that cohort's top-N (Store.CohortTop) in its top slot instead
// of the board's. They ride the board's read schedule and each
// subscriber's throttle exactly as the board's top frames do (R7), and each
// distinct frame is encoded once per (board, cohort, N) for all its
// subscribers. A change marks only its own cohort's frames: Change.Cohort
// names it and its ranks are within it.

// cohortTops are the top subscriptions of one cohort of a board. Guarded
// by Engine.mu.
type cohortTops struct {
	id     string
	subs   map[int]*subscribers // by N
	maxN   int
	dirty  bool
	frames map[int]*topFrame // latest frame per N that has subscribers
}

// cohortRead is one cohort's read within a job.
type cohortRead struct {
	ct   *cohortTops
	n    int // entries to read
	ns   []int
	prev map[int]*topFrame // the cohort's frames per N when the job started
	page rank.Page
	ts   int64
	next map[int]*topFrame // set when the read succeeded
}

// subscribeCohort registers s, o's subscription to a cohort's top frames,
// and either appends o's first frame from the cohort's current one or has
// j read it. Lock held.
func (e *Engine) subscribeCohort(b *board, o *Outbox, s *sub, j *job, out []delivery) []delivery {
	ct := b.cohorts[s.cohort]
	if ct == nil {
		ct = &cohortTops{id: s.cohort, subs: make(map[int]*subscribers), frames: make(map[int]*topFrame)}
		if b.cohorts == nil {
			b.cohorts = make(map[string]*cohortTops)
		}
		b.cohorts[s.cohort] = ct
	}
	n := ct.subs[s.top]
	if n == nil {
		n = newSubscribers()
		ct.subs[s.top] = n
	}
	n.set(o, s.topGen)
	ct.maxN = max(ct.maxN, topCount(s.top))
	tk := slotKey{b.id, false}
	if f := ct.frames[s.top]; f != nil && !ct.dirty && f.seq >= o.floor(tk) {
		return append(out, delivery{tk, f.seq, f.bytes, []target{{o, s.topGen}}, time.Time{}})
	}
	j.cohorts = map[string]*cohortRead{s.cohort: {
		ct: ct, n: topCount(s.top), ns: []int{s.top}, prev: map[int]*topFrame{s.top: ct.frames[s.top]},
	}}
	return out
}

// firstCohortFrame appends o's first cohort frame after j, a Subscribe's
// read, ran: the cohort's newest unless it is older than what o already
// had, else the read's own. Lock held.
func (e *Engine) firstCohortFrame(b *board, o *Outbox, s *sub, j *job, out []delivery) []delivery {
	r := j.cohorts[s.cohort]
	if r == nil || r.next == nil {
		return out
	}
	tk := slotKey{b.id, false}
	var f *topFrame
	if ct := b.cohorts[s.cohort]; ct != nil {
		f = ct.frames[s.top]
	}
	if f == nil || f.seq < o.floor(tk) {
		f = r.next[s.top]
	}
	if f != nil {
		out = append(out, delivery{tk, f.seq, f.bytes, []target{{o, s.topGen}}, time.Time{}})
	}
	return out
}

// unregisterCohort removes o's cohort top subscription s from b. Lock held.
func (e *Engine) unregisterCohort(o *Outbox, b *board, s *sub) {
	ct := b.cohorts[s.cohort]
	if ct == nil {
		return
	}
	if n := ct.subs[s.top]; n != nil {
		n.del(o)
		if n.len() == 0 {
			delete(ct.subs, s.top)
			delete(ct.frames, s.top)
			ct.maxN = 0
			for k := range ct.subs {
				ct.maxN = max(ct.maxN, topCount(k))
			}
		}
	}
	if len(ct.subs) == 0 {
		ct.dirty = false // a pending mark in b.dirtyCohorts is then skipped
		delete(b.cohorts, s.cohort)
	}
}

// markCohort marks a cohort's top frames dirty. Lock held.
func (e *Engine) markCohort(b *board, ct *cohortTops) {
	if !ct.dirty && ct.maxN > 0 {
		ct.dirty = true
		b.dirtyCohorts = append(b.dirtyCohorts, ct)
		e.kick = true
	}
}

// cohortChanged marks the cohort frames c may change: its own cohort's,
// when it touches the first maxN ranks there or adds a member. A change
// that names no cohort cannot be placed, so it marks them all. Lock held.
func (e *Engine) cohortChanged(b *board, c *rank.Change) {
	if len(b.cohorts) == 0 {
		return
	}
	if c.Cohort == "" {
		for _, ct := range b.cohorts {
			e.markCohort(b, ct)
		}
		return
	}
	ct := b.cohorts[c.Cohort]
	if ct == nil {
		return
	}
	if n := int64(ct.maxN); c.Old == nil || c.Rank <= n || (c.PrevRank > 0 && c.PrevRank <= n) {
		e.markCohort(b, ct)
	}
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

// snapshotCohorts takes b's dirty cohort marks into j. Lock held.
func (e *Engine) snapshotCohorts(b *board, j *job) {
	for _, ct := range b.dirtyCohorts {
		if !ct.dirty || b.cohorts[ct.id] != ct {
			continue
		}
		ct.dirty = false
		r := &cohortRead{ct: ct, n: ct.maxN, prev: make(map[int]*topFrame, len(ct.subs))}
		for n := range ct.subs {
			r.ns = append(r.ns, n)
			r.prev[n] = ct.frames[n]
		}
		if j.cohorts == nil {
			j.cohorts = make(map[string]*cohortRead)
		}
		j.cohorts[ct.id] = r
	}
	clear(b.dirtyCohorts)
	b.dirtyCohorts = b.dirtyCohorts[:0]
}

// readCohorts reads j's cohorts, up to Parallel at once, with no lock
// held, and encodes the frames that changed. It returns the first failure
// (cfgErr, when the board's config read failed: nothing is read).
func (e *Engine) readCohorts(ctx context.Context, j *job, cfgErr error) error {
	if len(j.cohorts) == 0 || cfgErr != nil {
		return cfgErr
	}
	var g errgroup.Group
	g.SetLimit(e.parallel)
	for id, r := range j.cohorts {
		g.Go(func() error {
			page, err := e.readCohortTop(ctx, j.b.id, j.final.sel, id, r.n)
			if err != nil {
				return err
			}
			e.decorate(ctx, page.Entries)
			r.page, r.ts = page, e.now().UnixMilli()
			next := make(map[int]*topFrame, len(r.ns))
			for _, n := range r.ns {
				f := &topFrame{
					entries: page.Entries[:min(topCount(n), len(page.Entries))], total: page.Total, seq: page.Seq,
					decimals: page.Decimals, final: j.final, cohort: id, meta: topMeta(n),
				}
				if p := r.prev[n]; j.sub || p == nil || !sameTop(p, f) {
					f.bytes = e.encodeTop(j.b.id, f, r.ts)
				}
				next[n] = f
			}
			r.next = next
			return nil
		})
	}
	return g.Wait()
}

func (e *Engine) readCohortTop(parent context.Context, id string, sel rank.PeriodSel, cohort string, n int) (rank.Page, error) {
	ctx, cancel := context.WithTimeout(parent, e.readTimeout)
	defer cancel()
	e.reads.Add(1)
	p, err := e.store.CohortTop(ctx, id, sel, cohort, 0, n)
	if err != nil {
		e.readFailed(parent, "cohort top", id, err)
		return rank.Page{}, fmt.Errorf("live: cohort top %s/%s: %w", id, cohort, err)
	}
	return p, nil
}

// installCohorts makes j's cohort frames the cohorts' current ones where
// they are newer and different, and appends their deliveries; a failed
// read is marked to be retried. As installTop. Lock held.
func (e *Engine) installCohorts(b *board, j *job, out []delivery) []delivery {
	tk := slotKey{b.id, false}
	for id, r := range j.cohorts {
		ct := b.cohorts[id]
		if ct != r.ct {
			continue // unsubscribed meanwhile
		}
		if r.next == nil {
			e.markCohort(b, ct)
			continue
		}
		b.seenSeq = max(b.seenSeq, r.page.Seq)
		if b.cfgOK && !j.final.is && r.page.Period < b.period {
			e.markCohort(b, ct) // the store has not rolled over yet: read again
		}
		for _, n := range r.ns {
			subs, f, cur := ct.subs[n], r.next[n], ct.frames[n]
			if subs == nil {
				continue
			}
			if cur != nil && (cur.seq > f.seq || sameTop(cur, f)) {
				if !j.sub && cur.unsent {
					cur.unsent = false
					out = append(out, delivery{tk, cur.seq, cur.bytes, subs.targets(), j.at})
				}
				continue
			}
			if f.bytes == nil {
				f.bytes = e.encodeTop(b.id, f, r.ts)
			}
			ct.frames[n] = f
			if j.sub {
				if f.unsent = !onlyWatcher(subs, j.o); f.unsent {
					e.markCohort(b, ct)
				}
				continue
			}
			out = append(out, delivery{tk, f.seq, f.bytes, subs.targets(), j.at})
		}
	}
	return out
}

// finalCohort is one cohort's part of a finalJob: its subscribers by N.
type finalCohort struct {
	ns   map[int][]target
	maxN int
}

// finalCohorts adds b's cohort top subscriptions to j, a period or the
// board becoming final. Lock held.
func finalCohorts(b *board, j *finalJob) {
	for id, ct := range b.cohorts {
		fc := &finalCohort{ns: make(map[int][]target, len(ct.subs)), maxN: ct.maxN}
		for n, s := range ct.subs {
			fc.ns[n] = s.targets()
		}
		if j.cohorts == nil {
			j.cohorts = make(map[string]*finalCohort)
		}
		j.cohorts[id] = fc
	}
}

// runFinalCohorts sends each cohort top subscriber of j its cohort's final
// standings, as runFinal does the board's (R19): an event frame, with
// "final" and the period, superseding a pending frame of the period that
// ended. A cohort's id names another group in the next period, so this is
// the last frame of the group the subscriber watched.
func (e *Engine) runFinalCohorts(ctx context.Context, j *finalJob, ts time.Time) {
	key := slotKey{j.board, false}
	for id, fc := range j.cohorts {
		page, err := e.readCohortTop(ctx, j.board, j.read.sel, id, fc.maxN)
		if err != nil {
			continue // logged; the live frames go on
		}
		e.decorate(ctx, page.Entries)
		for n, to := range fc.ns {
			frame := e.encodeTop(j.board, &topFrame{
				entries: page.Entries[:min(topCount(n), len(page.Entries))], total: page.Total, seq: page.Seq,
				decimals: page.Decimals, final: j.read, cohort: id, meta: topMeta(n),
			}, ts.UnixMilli())
			for _, t := range to {
				t.o.event(frame, &key)
			}
		}
	}
}
