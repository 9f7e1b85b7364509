package memstore

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/rank"
)

// board is one leaderboard's config and data.
type board struct {
	// view is cfg and deleted as of the last change, for GetBoard: every
	// score reads its board's config, and an RLock of mu there would queue
	// behind the applies holding it (each apply takes mu).
	view atomic.Pointer[boardView]

	mu      sync.RWMutex // guards every field below; reads take RLock
	cfg     rank.Board
	deleted bool // set by DeleteBoard: a holder of a stale pointer sees ErrUnknownBoard
	seq     int64
	periods map[int64]*zset    // by period index; 0 for a board without periods
	names   map[string]string  // display names, per board (not per period)
	idem    map[idemKey]record // by member and request id (R4 v1.1)
	queue   expiryQueue        // the keys of idem in insertion order, for sweeping
	cur     rank.Period        // the period apply last wrote to (see period)
	// Bans (moderation.go): the board's own and its copies of the global
	// ones, by member; banExp is the earliest Until among them (zero: none),
	// mirrored in banExpNs for reads, which hold only the read lock.
	bans, gbans map[string]rank.Ban
	banExp      time.Time
	banExpNs    atomic.Int64
	// hot holds a hot board's bucket sums (hot.go); nil on other boards.
	hot *hotData
	// deps are the derived boards over this one (derived.go), changed
	// under Store.mu and b.mu both.
	deps []dep
	// league holds a league board's tiers (cohort.go); nil on others.
	league *leagueState
	// stream is the board's epoch and recorded transitions (stream.go).
	stream stream
	// A per-day cap's counts (§18, caps.go): the UTC day they are of.
	capDay    int64
	capDayMap map[string]int64
	// imports are the marks of imports (§18, scan.go), by import id.
	imports map[string]importMark
	// Score integrity (integrity.go): claims, rejects and kept verdicts by
	// the records' key (nil on boards without a hook), the last claim's
	// number, and each member's recent gains on a board with flags.gain.
	claims   map[idemKey]*claim
	claimSeq int64
	gains    map[string]*gains
}

// zset is one period's ranking.
type zset struct {
	tr       *forest // one tree per shard (shard.go)
	members  map[string]*node
	counts   map[string]int // events applied per member, kept while max_submissions > 0 (R18)
	expireAt time.Time      // zero: never
	// hidden holds the nodes of banned members, out of tr, keys intact.
	hidden map[string]*node
	// held holds the members held in this period (§16; integrity.go),
	// their nodes out of tr as hidden ones are.
	held map[string]*hold
	// meta is each member's meta (§11), made by the first event that
	// carries one: a board whose events carry none spends nothing on it.
	meta map[string]meta.Meta
	// history holds each member's last applied events, oldest first, on a
	// board with history (§11); nil on others.
	history map[string][]rank.HistoryEvent
	// co holds a cohort board's cohorts (cohort.go), rg a region board's
	// regions (region.go); nil on others.
	co *cohorts
	// capped holds each member's points counted by a per-period cap
	// (§18, caps.go); nil until the first.
	capped map[string]int64
	rg     *groups[string]
}

// idemKey is what a request id is unique within on a board (R4 v1.1): the
// member's own ids, so one member can neither block nor collide with
// another's.
type idemKey struct{ member, id string }

// record is an applied event's result, kept for retries within the window.
// Board and member are not stored: the board holds it, the key names the
// member.
type record struct {
	hash      uint64
	expires   int64 // unix nanoseconds on the store's clock
	score     int64
	rank      int64
	prevRank  int64
	prevScore int64
	had       bool
	seq       int64
	period    int64
	// group is the member's cohort on a cohort board, and on a region
	// board its region and region rank (regionRecord): one field for the
	// two, as a board has at most one of them.
	group   cohortKey
	capped  bool // on a capped board (§18): the delta was cut to applied
	applied int64
	held    bool // the member was held after it (§16)
}

// boardView is what GetBoard reads of a board, published whole.
type boardView struct {
	cfg     rank.Board
	deleted bool
}

// publish makes cfg and deleted GetBoard's view. b.mu held for writing.
func (b *board) publish() { b.view.Store(&boardView{cfg: b.cfg, deleted: b.deleted}) }

func newBoard(cfg rank.Board) *board {
	b := &board{
		cfg:     cfg,
		periods: map[int64]*zset{},
		names:   map[string]string{},
		idem:    map[idemKey]record{},
		bans:    map[string]rank.Ban{},
		gbans:   map[string]rank.Ban{},
		stream:  stream{epoch: rank.NewEpoch()},
	}
	if cfg.Hot() {
		b.hot = newHot()
	}
	if cfg.Leagued() {
		b.league = &leagueState{tier: map[string]int{}}
	}
	b.publish()
	return b
}

// clear drops all data of a deleted board.
func (b *board) clear() {
	b.deleted = true
	b.publish()
	b.periods, b.names, b.idem = nil, nil, nil
	b.queue = expiryQueue{}
}

// tie is the tie key of a member that reached its score at seq (DESIGN.md
// "The score path" §4): earlier first, later first, or none (member id).
func (b *board) tie(seq int64) int64 {
	switch b.cfg.Tiebreak {
	case rank.Last:
		return -seq
	case rank.Shared:
		return 0
	}
	return seq
}

// setKey sets n's score, the seq at which it reached it, and its key. n must
// not be in a tree.
func (b *board) setKey(n *node, score, reached int64) {
	n.score, n.reached = score, reached
	n.s = score
	if b.cfg.Order == rank.Desc {
		n.s = -score
	}
	n.t = b.tie(reached)
}

// rankIn is the rank of n, at 1-based position pos of z: the position, or on
// a shared board 1 + the number of members strictly better.
func (b *board) rankIn(z *zset, n *node, pos int) int64 {
	if b.cfg.Tiebreak == rank.Shared {
		return 1 + int64(z.tr.countLess(n.s))
	}
	return int64(pos)
}

// reconfigure installs a new config; data is re-keyed when the order or
// tiebreak changed, so later events and reads follow the new rules.
func (b *board) reconfigure(cfg rank.Board) {
	defer b.publish() // once the data follows the new rules
	old := b.cfg
	b.cfg, b.cur = cfg, rank.Period{}
	if old.Order == cfg.Order && old.Tiebreak == cfg.Tiebreak {
		return
	}
	for _, z := range b.periods {
		var co map[cohortKey][]*node
		var rg map[string][]*node
		if z.co != nil {
			co = z.co.nodes()
		}
		if z.rg != nil {
			rg = z.rg.nodes()
		}
		nodes := make([]*node, 0, z.tr.len())
		for c := z.tr.at(1); c.ok(); c.next() {
			nodes = append(nodes, c.node())
		}
		z.tr = newForest(cfg.ShardCount())
		for _, n := range nodes {
			b.setKey(n, n.score, n.reached)
			z.tr.insert(n)
		}
		for _, n := range z.hidden {
			b.setKey(n, n.score, n.reached)
		}
		for _, h := range z.held {
			b.setKey(h.n, h.n.score, h.n.reached)
		}
		if z.co != nil {
			z.co.rekey(co)
		}
		if z.rg != nil {
			z.rg.rekey(rg)
		}
	}
}

// readable is period idx if it holds data that has not expired, else nil.
func (b *board) readable(idx int64, now time.Time) *zset {
	z := b.periods[idx]
	if z == nil || (!z.expireAt.IsZero() && !now.Before(z.expireAt)) {
		return nil
	}
	return z
}

// apply is the score path (R3–R6): validate, idempotency, combine, seq,
// write, rank, then record the result.
func (b *board) apply(e rank.Event, now time.Time) (rank.Result, error) {
	if err := e.Check(b.cfg); err != nil {
		return rank.Result{}, err
	}
	nowNs := now.UnixNano()
	b.rebase(now)
	b.sweepIdem(now, sweepPerApply)
	hash := e.PayloadHash()
	key := idemKey{e.Member, e.ID}
	if rec, ok := b.idem[key]; ok && rec.expires > nowNs {
		if rec.hash != hash {
			return rank.Result{}, rank.ErrIdempotencyConflict
		}
		r := rank.Result{
			Board: e.Board, Member: e.Member, Score: rec.score, Rank: rec.rank, PrevRank: rec.prevRank,
			PrevScore: rec.prevScore, Had: rec.had, Duplicate: true, Seq: rec.seq, Period: rec.period,
			Decimals: b.cfg.Decimals(), Capped: rec.capped, Applied: rec.applied, Held: rec.held,
		}
		if b.cfg.Cohorted() {
			r.Cohort, r.Tier = b.cohortName(rec.group), b.tierName(rec.group.tier)
		}
		if b.cfg.Regions {
			r.Region, r.RegionRank = rec.group.region()
		}
		return r, nil
	}
	// R35: a claim for the hook, its reject or its kept verdict
	// (integrity.go), by the same key, after the applied record.
	if c := b.liveClaim(key, nowNs); c != nil {
		if err := admitClaim(c, &e, hash, nowNs); err != nil {
			return rank.Result{}, err
		}
	}

	// R21: after the duplicate check, so a retry of an event applied
	// before the ban still gets its first result; nothing else passes.
	b.expire(now)
	if b.banned(e.Member, now) {
		return rank.Result{}, rank.ErrBanned
	}

	// R17: the event's time, its period, the schedule and grace, all on
	// the store's clock, under the board's lock.
	t := now
	if !e.At.IsZero() {
		t = e.At
	}
	var p rank.Period
	var err error
	if e.Into != 0 {
		p, t, err = b.cfg.Restore(e.Into, now) // an import into a past period (§18)
	} else {
		p, err = b.cfg.Admit(t, now, b.period(now))
	}
	if err != nil {
		return rank.Result{}, err
	}
	z := b.readable(p.Index, now)
	// R18: duplicates were answered above and never count.
	if max := b.cfg.MaxSubmissions; max > 0 && z != nil && z.counts[e.Member] >= max {
		return rank.Result{}, fmt.Errorf("%w: %d events per member per period", rank.ErrLimitReached, max)
	}
	// §18: the part of a delta the member's cap leaves (caps.go).
	var capped bool
	if b.cfg.Capped() {
		if e.Amount, capped, err = b.cfg.Cap.ApplyCap(e.Amount, b.capUsed(z, e.Member, now)); err != nil {
			return rank.Result{}, err
		}
	}
	var n, hn *node // hn: the member's entry while it is held (§16)
	if z != nil {
		if n = z.members[e.Member]; n == nil {
			hn = z.heldNode(e.Member)
		}
	}
	var old int64
	switch {
	case n != nil:
		old = n.score
	case hn != nil:
		old = hn.score
	}
	var score, bucket int64
	if b.hot != nil {
		// R22: the event lands in its bucket; the score is the decayed sum.
		if bucket, err = b.cfg.Decay.HotBucket(t, now); err == nil {
			score, err = b.hotScore(e.Member, bucket, b.hot.at, e.Amount)
		}
	} else {
		score, err = rank.Combine(b.cfg, n != nil || hn != nil, old, e)
	}
	if err != nil {
		return rank.Result{}, err
	}
	// §16: an event the hook must see is claimed for it, not applied.
	if b.cfg.Validated() && e.Verdict == rank.VerdictNone && b.contender(z, n != nil || hn != nil, old, score) {
		return rank.Result{}, b.claimEvent(key, hash, now, p.Index, z, n, hn)
	}

	// Nothing fails from here on.
	if z == nil {
		z = b.newPeriod(p, now)
	}
	if b.hot != nil {
		b.hotAdd(e.Member, bucket, e.Amount)
	}
	b.seq++
	r := rank.Result{Board: e.Board, Member: e.Member, Score: score, Seq: b.seq, Period: p.Index, Decimals: b.cfg.Decimals()}
	if capped {
		r.Capped, r.Applied = true, e.Amount
	}
	if b.cfg.Capped() {
		b.capUse(z, e.Member, e.Amount, now)
	}
	// On a cohort board (cohort.go) the member's cohort tree moves with
	// the period's, and the ranks answered are within the cohort.
	var ck cohortKey
	var ct *tree
	if z.co != nil {
		ck, ct = b.cohortJoin(z, p, e.Member)
		r.Cohort, r.Tier = b.cohortName(ck), b.tierName(ck.tier)
	}
	// On a region board (region.go) the entry leaves its region's tree
	// before its key changes, and enters the event's region's after.
	var rt *tree
	if z.rg != nil {
		rt = b.regionMove(z, n, e, &r)
	}
	switch {
	case hn != nil:
		// Held: out of the tree, ranked where it would be (integrity.go).
		r.PrevRank, r.PrevScore = b.wouldRank(z, hn), old
		if score != old {
			b.setKey(hn, score, b.seq)
		}
		r.Rank, n = b.wouldRank(z, hn), hn
	case n == nil:
		n = &node{}
		n.m = e.Member
		b.setKey(n, score, b.seq)
		pos := z.tr.insert(n)
		z.members[e.Member] = n
		r.Rank = b.rankIn(z, n, pos)
		if ct != nil {
			r.Rank = b.rankInTree(ct, n, ct.insert(n))
		}
	case score == old:
		// The member keeps its place among equal scores.
		if ct != nil {
			r.Rank = b.rankInTree(ct, n, ct.rankOf(&n.key))
		} else {
			r.Rank = b.rankIn(z, n, z.tr.rankOf(&n.key))
		}
		r.PrevRank, r.PrevScore = r.Rank, old
	default:
		pos := z.tr.remove(n)
		r.PrevRank, r.PrevScore = b.rankIn(z, n, pos), old
		if ct != nil {
			r.PrevRank = b.rankInTree(ct, n, ct.remove(n))
		}
		b.setKey(n, score, b.seq)
		r.Rank = b.rankIn(z, n, z.tr.insert(n))
		if ct != nil {
			r.Rank = b.rankInTree(ct, n, ct.insert(n))
		}
	}
	if rt != nil {
		if hn != nil {
			r.RegionRank = b.wouldRankIn(rt, n) // held: out of its region's tree too
		} else {
			r.RegionRank = b.rankInTree(rt, n, rt.insert(n))
		}
		ck = regionRecord(r.Region, r.RegionRank)
	}
	if e.Name != "" {
		b.names[e.Member] = e.Name
	}
	// The meta is the event's whose score the member now holds: a best
	// board's event that did not improve it leaves the one that did (R26).
	if b.cfg.Mode != rank.Best || r.PrevRank == 0 || score != old {
		b.setMeta(z, e.Member, e.Meta)
	}
	if b.cfg.MaxSubmissions > 0 {
		z.counts[e.Member]++
	}
	if b.cfg.History > 0 {
		b.keepHistory(z, e, score, t)
	}
	if b.cfg.Holds() {
		b.afterApply(z, n, e, &r, old, score, now) // the hook's flag, the board's flags
	}
	r.Had = r.PrevRank > 0
	if !b.cfg.RanksInAck() {
		// R24: a sharded board's ack carries no ranks unless it asks for
		// them (the Redis engine reads none; this one has them at hand).
		r.Rank, r.PrevRank = 0, 0
	}
	// The record is written last, as in the Lua script; it replaces any
	// claim of the event.
	exp := nowNs + int64(time.Duration(b.cfg.IdempotencyWindow))
	b.idem[key] = record{
		hash: hash, expires: exp, score: r.Score, rank: r.Rank, prevRank: r.PrevRank,
		prevScore: r.PrevScore, had: r.Had, seq: r.Seq, period: r.Period, group: ck,
		capped: r.Capped, applied: r.Applied, held: r.Held,
	}
	b.queue.push(key, exp)
	if b.claims != nil {
		delete(b.claims, key)
	}
	return r, nil
}

// setMeta keeps m as member's meta in z ("" drops it). b.mu held for writing.
func (b *board) setMeta(z *zset, member string, m meta.Meta) {
	switch {
	case m != "":
		if z.meta == nil {
			z.meta = map[string]meta.Meta{}
		}
		z.meta[member] = m
	case z.meta != nil:
		delete(z.meta, member)
	}
}

// keepHistory notes the applied event e, which left the member at score,
// in its history, dropping the oldest past the board's history. b.mu held
// for writing.
func (b *board) keepHistory(z *zset, e rank.Event, score int64, t time.Time) {
	if z.history == nil {
		z.history = map[string][]rank.HistoryEvent{}
	}
	h := z.history[e.Member]
	if n := len(h) - b.cfg.History + 1; n > 0 {
		h = h[:copy(h, h[n:])]
	}
	z.history[e.Member] = append(h, rank.HistoryEvent{
		ID: e.ID, Op: e.Op, Amount: e.Amount, Score: score, At: t.UnixMilli(), Meta: e.Meta,
	})
}

// period is the period at now, reusing the last one while now is inside
// it: PeriodAt loads the time zone on every call for a board outside UTC,
// which would cost apply several times its own work. b.mu is held for writing.
func (b *board) period(now time.Time) rank.Period {
	if b.cur.End.IsZero() || now.Before(b.cur.Start) || !now.Before(b.cur.End) {
		b.cur = rank.PeriodAt(b.cfg, now)
	}
	return b.cur
}

// newPeriod creates the zset of period p, dropping expired ones first.
func (b *board) newPeriod(p rank.Period, now time.Time) *zset {
	b.dropExpiredPeriods(now)
	z := &zset{
		tr:       newForest(b.cfg.ShardCount()),
		members:  map[string]*node{},
		counts:   map[string]int{},
		expireAt: p.ExpireAt(b.cfg.Retained()),
	}
	if b.cfg.Cohorted() {
		z.co = newCohorts()
	}
	if b.cfg.Regions {
		rg := newGroups[string]()
		z.rg = &rg
	}
	b.periods[p.Index] = z
	return z
}

// dropExpiredPeriods removes periods past their retention and the names of
// members left in no period; it returns how many periods it removed.
func (b *board) dropExpiredPeriods(now time.Time) int {
	dropped := 0
	for idx, z := range b.periods {
		if z.expireAt.IsZero() || now.Before(z.expireAt) {
			continue
		}
		delete(b.periods, idx)
		dropped++
		for m := range z.members {
			if !b.inAnyPeriod(m) {
				delete(b.names, m)
			}
		}
	}
	return dropped
}

func (b *board) inAnyPeriod(m string) bool {
	for _, z := range b.periods {
		if z.members[m] != nil || z.hidden[m] != nil || z.held[m] != nil {
			return true
		}
	}
	return false
}

// sweepIdem removes up to max expired records from the front of the queue
// and returns how many queue entries it consumed.
func (b *board) sweepIdem(now time.Time, max int) int {
	nowNs := now.UnixNano()
	n := 0
	for ; n < max; n++ {
		q, ok := b.queue.front()
		if !ok || q.expires > nowNs {
			break
		}
		b.queue.pop()
		// The id may have been recorded again after it expired.
		if rec, ok := b.idem[q.key]; ok && rec.expires <= nowNs {
			delete(b.idem, q.key)
		}
		if c := b.claims[q.key]; c != nil && c.expires <= nowNs {
			delete(b.claims, q.key)
		}
	}
	return n
}

// entries lists up to limit entries from 1-based position start of z.
func (b *board) entries(z *zset, start, limit int) []rank.Entry {
	if limit <= 0 || start > z.tr.len() {
		return []rank.Entry{}
	}
	out := make([]rank.Entry, 0, min(limit, z.tr.len()-start+1))
	shared := b.cfg.Tiebreak == rank.Shared
	var rk int64
	var prev *node
	for c := z.tr.at(start); c.ok() && len(out) < limit; c.next() {
		n := c.node()
		pos := int64(start + len(out))
		switch {
		case !shared:
			rk = pos
		case prev == nil:
			rk = 1 + int64(z.tr.countLess(n.s))
		case n.s != prev.s:
			rk = pos
		}
		out = append(out, rank.Entry{Rank: rk, Member: n.m, Score: n.score, Name: b.names[n.m], Meta: z.meta[n.m]})
		prev = n
	}
	return out
}

type queued struct {
	key     idemKey
	expires int64
}

// expiryQueue is a FIFO of idempotency keys in fixed blocks, so its
// memory follows the number of live records and a push never copies what
// is queued: a window holds millions of records at a high event rate, and
// one slice, grown by append and compacted, would copy every queued record
// into fresh memory at each growth. One emptied block is kept for the next
// push, so a queue in steady state (as many records expiring as written)
// allocates nothing.
type expiryQueue struct {
	head, tail *queueBlock // nil when nothing was ever queued or all was popped
	hi, ti     int         // the front's index in head; the next free index in tail
	n          int
	popped     int // items popped so far: the front's position counted from the first push
	spare      *queueBlock
}

// queueBlockLen records per block: 40 KB.
const queueBlockLen = 1024

type queueBlock struct {
	items [queueBlockLen]queued
	next  *queueBlock
}

func (q *expiryQueue) push(key idemKey, expires int64) {
	switch {
	case q.tail == nil:
		q.head = q.block()
		q.tail, q.hi, q.ti = q.head, 0, 0
	case q.ti == queueBlockLen:
		b := q.block()
		q.tail.next = b
		q.tail, q.ti = b, 0
	}
	q.tail.items[q.ti] = queued{key, expires}
	q.ti++
	q.n++
}

// block is the spare block, or a new one.
func (q *expiryQueue) block() *queueBlock {
	if b := q.spare; b != nil {
		q.spare = nil
		return b
	}
	return new(queueBlock)
}

func (q *expiryQueue) len() int { return q.n }

func (q *expiryQueue) front() (queued, bool) {
	if q.n == 0 {
		return queued{}, false
	}
	return q.head.items[q.hi], true
}

func (q *expiryQueue) pop() {
	q.head.items[q.hi] = queued{} // the keys go with the record
	q.hi++
	q.n--
	q.popped++
	switch {
	case q.n == 0:
		// Empty: keep one block (as the spare) and start again at its
		// front.
		q.spare = q.head
		q.spare.next = nil
		q.head, q.tail, q.hi, q.ti = nil, nil, 0, 0
	case q.hi == queueBlockLen:
		b := q.head
		q.head, q.hi = b.next, 0
		b.next = nil
		q.spare = b
	}
}

// blocks is how many blocks the queue holds, the spare included.
func (q *expiryQueue) blocks() int {
	n := 0
	for b := q.head; b != nil; b = b.next {
		n++
	}
	if q.spare != nil {
		n++
	}
	return n
}
