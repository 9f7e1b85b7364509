package live

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// job is one refresh of one board: what to read, the state it was read
// against, and what the reads gave. A tick makes one per due board; a
// Subscribe makes one for its own first frames (sub).
type job struct {
	b *board
	// sub: a Subscribe's read for o. It did not take the board's dirty
	// marks and is off the board's schedule, so its frames go to o alone
	// (Subscribe offers them); what it installs for other subscribers is
	// left unsent, for the next scheduled read.
	sub     bool
	o       *Outbox
	at      time.Time // the schedule point of a scheduled read (schedule.go)
	cfg     bool      // re-read the board config first
	final   finalRead // the board was final when the job began
	topN    int       // entries to read; 0: no top read
	ns      []int
	prevTop map[int]*topFrame      // frames per N when the job started
	groups  map[int][]viewJob      // around → views to read
	logPos  int64                  // the board's change log position at the start
	profGen uint64                 // the board's profGen at the start (profiles.go)
	newTop  map[int]*topFrame      // set when the top read succeeded
	cohorts map[string]*cohortRead // cohort top frames to read (cohort.go)
	ml      *listsJob              // members frames to read (members.go)
	viewErr map[int]error          // per around group
}

type viewJob struct {
	v    *view
	prev *viewResult // v.res when the job started
	next *viewResult // set when the read succeeded
}

// delivery is one frame for the slots of its targets, offered after
// unlocking.
type delivery struct {
	key   slotKey
	seq   int64
	frame []byte
	to    []target  // immutable (subscribers.targets)
	at    time.Time // the read's schedule point; zero: a Subscribe's own frame
}

// countFrames adds ds's frames to b's count. Lock held.
func countFrames(b *board, ds []delivery) {
	for _, d := range ds {
		b.framesOut += uint64(len(d.to))
	}
}

// deliverChunk is the fewest targets a delivery goroutine is started for.
const deliverChunk = 256

// deliver offers each delivery's frame to its targets. An offer may write
// the frame to the socket itself (Outbox.offerAt's direct path), a
// syscall per target: to 10,000 targets in one goroutine that can take a
// whole interval, during which the board's next read waits and
// the last targets' frames age. So a large target list is split across up
// to GOMAXPROCS goroutines, chunks of at least deliverChunk; deliver
// returns once every offer is made, so one outbox's frames are still
// offered in order.
func deliver(ds []delivery) {
	for _, d := range ds {
		n := len(d.to)
		parts := min(runtime.GOMAXPROCS(0), n/deliverChunk)
		if parts <= 1 {
			d.offer(d.to)
			continue
		}
		var wg sync.WaitGroup
		per := (n + parts - 1) / parts
		for lo := per; lo < n; lo += per {
			wg.Go(func() { d.offer(d.to[lo:min(lo+per, n)]) })
		}
		d.offer(d.to[:per])
		wg.Wait()
	}
}

// offer offers d's frame to each of to.
func (d *delivery) offer(to []target) {
	for _, t := range to {
		t.o.offerAt(d.key, t.gen, d.seq, d.frame, d.at)
	}
}

// snapshot takes b's dirty marks into a job read at schedule point at.
// Lock held.
func (e *Engine) snapshot(b *board, now, at time.Time) *job {
	j := &job{b: b, at: at, final: finalOf(b)}
	b.lastRead, b.lastPoint = now, at
	j.cfg = !b.cfgOK || now.Sub(b.cfgAt) >= cfgTTL
	if (b.topDirty && b.maxN > 0) || b.probe {
		j.topN = max(b.maxN, 1) // a probe with no top subscribers only wants the seq
		j.prevTop = make(map[int]*topFrame, len(b.topSubs))
		for n := range b.topSubs {
			j.ns = append(j.ns, n)
			j.prevTop[n] = b.frames[n]
		}
		b.topDirty, b.probe = false, false
	}
	for _, v := range b.dirty {
		if v.removed || !v.dirty {
			continue
		}
		v.dirty = false
		if j.groups == nil {
			j.groups = make(map[int][]viewJob)
		}
		j.groups[v.key.around] = append(j.groups[v.key.around], viewJob{v: v, prev: v.res})
	}
	clear(b.dirty)
	b.dirty = b.dirty[:0]
	j.ml = b.ml.snapshot()
	e.snapshotCohorts(b, j)
	e.startJob(b, j)
	return j
}

// startJob registers j's reads as in flight, so changes are logged for its
// replay. Lock held.
func (e *Engine) startJob(b *board, j *job) {
	b.inflight++
	j.logPos = b.logStart + int64(len(b.log))
	j.profGen = b.profGen
}

// runJob reads what j asks for with no lock held, encodes changed frames,
// installs them and hands them to the subscribers. On a failed read the
// affected part is marked dirty again, to be retried next tick.
func (e *Engine) runJob(ctx context.Context, j *job) error {
	b := j.b
	var cfg rank.Board
	var cfgErr, topErr, firstErr error
	if j.cfg {
		cfg, cfgErr = e.getBoard(ctx, b.id)
		firstErr = cfgErr
	}
	var page rank.Page
	var topTS int64
	if j.topN > 0 && cfgErr == nil {
		page, topErr = e.readTop(ctx, b.id, j.final.sel, j.topN)
		if topErr == nil {
			e.decorate(ctx, page.Entries)
		}
		topTS = e.now().UnixMilli()
		if topErr == nil {
			j.newTop = make(map[int]*topFrame, len(j.ns))
			for _, n := range j.ns {
				f := &topFrame{entries: page.Entries[:min(topCount(n), len(page.Entries))], total: page.Total, seq: page.Seq, decimals: page.Decimals, final: j.final, meta: topMeta(n)}
				if p := j.prevTop[n]; j.sub || p == nil || !sameTop(p, f) {
					f.bytes = e.encodeTop(b.id, f, topTS)
				}
				j.newTop[n] = f
			}
		} else if firstErr == nil {
			firstErr = topErr
		}
	}
	if err := e.readCohorts(ctx, j, cfgErr); firstErr == nil {
		firstErr = err
	}
	var seqs []int64
	var ranksPeriod []int64
	for around, vjs := range j.groups {
		err := cfgErr
		if err == nil {
			members := make([]string, len(vjs))
			for i, vj := range vjs {
				members[i] = vj.v.key.member
			}
			var r rank.Ranks
			r, err = e.readRanks(ctx, b.id, j.final.sel, members, around)
			if err == nil {
				e.decorateRanks(ctx, r.Members)
				ts := e.now().UnixMilli()
				seqs = append(seqs, r.Seq)
				ranksPeriod = append(ranksPeriod, r.Period)
				for i := range vjs {
					next := &viewResult{mr: r.Members[i], seq: r.Seq, decimals: r.Decimals}
					if p := vjs[i].prev; j.sub || p == nil || !sameView(p.mr, next.mr) {
						next.bytes = e.encodeView(b.id, vjs[i].v.key, next, ts)
					}
					vjs[i].next = next
				}
			}
		}
		if err != nil {
			if j.viewErr == nil {
				j.viewErr = make(map[int]error)
			}
			j.viewErr[around] = err
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if err := e.readLists(ctx, j, cfgErr); firstErr == nil {
		firstErr = err
	}

	now := e.now()
	var out []delivery
	e.mu.Lock()
	b.inflight--
	if j.cfg && cfgErr == nil {
		if shape := b.setCfg(cfg, now); shape {
			e.markAll(b)
		}
	}
	if j.topN > 0 {
		if j.newTop == nil {
			e.markTop(b)
		} else {
			out = e.installTop(b, j, page, topTS, out)
		}
	}
	out = e.installCohorts(b, j, out)
	minSeq := int64(-1)
	for _, s := range seqs {
		if minSeq < 0 || s < minSeq {
			minSeq = s
		}
		b.seenSeq = max(b.seenSeq, s)
	}
	stale := false
	for _, p := range ranksPeriod {
		stale = stale || (b.cfgOK && !j.final.is && p < b.period)
	}
	var installed []*view
	for around, vjs := range j.groups {
		if j.viewErr[around] != nil {
			for _, vj := range vjs {
				e.markView(b, vj.v)
			}
			continue
		}
		for _, vj := range vjs {
			if stale {
				e.markView(b, vj.v) // the store has not rolled over yet: read again
			}
			v := vj.v
			switch {
			case e.installView(b, vj):
				installed = append(installed, v)
				if j.sub {
					// Off the schedule: the subscriber gets it from
					// Subscribe, the others from the next scheduled read.
					if v.unsent = !onlyWatcher(v.watchers, j.o); v.unsent {
						e.markView(b, v)
					}
					continue
				}
			case j.sub || v.removed || !v.unsent || v.res == nil:
				continue
			}
			v.unsent = false
			r := v.res
			out = append(out, delivery{slotKey{b.id, true}, r.seq, r.bytes, v.watchers.targets(), j.at})
		}
	}
	out = e.installLists(b, j, out)
	if minSeq >= 0 {
		e.replay(b, j, minSeq, installed)
	}
	if j.profGen != b.profGen {
		e.markAll(b) // a profile changed while this job read: its entries may be stale
	}
	if b.inflight == 0 {
		b.logStart += int64(len(b.log))
		clear(b.log)
		b.log = b.log[:0]
		b.logOver = false
	}
	countFrames(b, out)
	e.unlock()
	deliver(out)
	return firstErr
}

// installTop makes j's top frames the board's current ones where they are
// newer and different, and appends their deliveries. Lock held.
func (e *Engine) installTop(b *board, j *job, page rank.Page, ts int64, out []delivery) []delivery {
	b.seenSeq = max(b.seenSeq, page.Seq)
	if b.cfgOK && !j.final.is && page.Period < b.period {
		e.markTop(b) // the store has not rolled over yet: read again
	}
	for _, n := range j.ns {
		subs := b.topSubs[n]
		f := j.newTop[n]
		cur := b.frames[n]
		if subs == nil {
			continue
		}
		if cur != nil && (cur.seq > f.seq || sameTop(cur, f)) {
			// Nothing newer; a frame a Subscribe installed still goes
			// to the others, now that the schedule has come round.
			if !j.sub && cur.unsent {
				cur.unsent = false
				out = append(out, delivery{slotKey{b.id, false}, cur.seq, cur.bytes, subs.targets(), j.at})
			}
			continue
		}
		if f.bytes == nil {
			f.bytes = e.encodeTop(b.id, f, ts)
		}
		b.frames[n] = f
		if j.sub {
			// Off the schedule: see job.sub.
			if f.unsent = !onlyWatcher(subs, j.o); f.unsent {
				e.markTop(b)
			}
			continue
		}
		out = append(out, delivery{slotKey{b.id, false}, f.seq, f.bytes, subs.targets(), j.at})
	}
	return out
}

// installView makes vj's result the view's current one if it is newer and
// different, re-indexing the view's window. Lock held.
func (e *Engine) installView(b *board, vj viewJob) bool {
	v, next := vj.v, vj.next
	if v.removed {
		return false
	}
	if cur := v.res; cur != nil && (cur.seq > next.seq || sameView(cur.mr, next.mr)) {
		return false
	}
	if next.bytes == nil {
		next.bytes = e.encodeView(b.id, v.key, next, e.now().UnixMilli())
	}
	v.res = next
	b.setRange(v)
	return true
}

// replay re-tests the changes logged since j started whose seq is above what
// j read (minSeq) against the windows now installed: they were tested
// against the windows the read replaced. Lock held.
func (e *Engine) replay(b *board, j *job, minSeq int64, installed []*view) {
	if len(installed) == 0 {
		return
	}
	if b.logOver {
		for _, v := range installed {
			e.markView(b, v)
		}
		return
	}
	for _, l := range b.log[j.logPos-b.logStart:] {
		if l.seq > minSeq {
			e.touchViews(b, l)
		}
	}
}

// onlyWatcher reports whether o is the only outbox in s.
func onlyWatcher(s *subscribers, o *Outbox) bool {
	_, ok := s.m[o]
	return ok && s.len() == 1
}

func sameTop(a, b *topFrame) bool {
	return a.total == b.total && slices.Equal(a.entries, b.entries)
}

func sameView(a, b rank.MemberRank) bool {
	return a.Found == b.Found && a.Rank == b.Rank && a.Score == b.Score && slices.Equal(a.Around, b.Around)
}

// encodeTop is the exact JSON of a proto.Top frame.
func (e *Engine) encodeTop(board string, f *topFrame, ts int64) []byte {
	e.encoded.Add(1)
	// Marshal cannot fail for these plain types.
	b, _ := json.Marshal(proto.Top{
		Type: proto.TypeTop, Board: board, Seq: f.seq,
		Entries: frameEntries(f.entries, f.meta), Total: f.total, TS: ts,
		Final: f.final.is, Period: f.final.period, Cohort: f.cohort,
	})
	return proto.Decimalize(b, f.decimals)
}

// encodeView is the exact JSON of a proto.View frame; an absent member has
// rank and score null and around [].
func (e *Engine) encodeView(board string, k viewKey, r *viewResult, ts int64) []byte {
	e.encoded.Add(1)
	f := proto.View{
		Type: proto.TypeView, Board: board, Member: k.member,
		Around: frameEntries(r.mr.Around, k.meta), Seq: r.seq, TS: ts,
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
