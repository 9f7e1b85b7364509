package memstore

// Score integrity (docs/protocol.md §16, R35): claims on events for a
// board's hook, the verdicts kept with the idempotency records, held
// members and the flags that hold them. A held member's node leaves its
// period's tree for the period's held map, as a banned one's leaves for
// hidden, and its events move it there; only its own reads (SelfRanks)
// place it among the others.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

var _ rank.Integrity = (*Store)(nil)

// claimState is what a claim record says of its event.
type claimState uint8

const (
	claimPending  claimState = iota + 1 // the hook is being called
	claimRejected                       // the hook rejected it
	claimJudged                         // the hook's verdict, kept when the event was then refused
)

// claim is an event's record before (or instead of) its applied record,
// by the same key: a claim for the hook, a reject, or a verdict.
type claim struct {
	state   claimState
	hash    uint64
	expires int64 // unix ns on the store's clock
	token   string
	verdict rank.Verdict
	reason  string
}

// hold is a held member's entry of a period and why it is held.
type hold struct {
	n      *node // out of the period's tree
	reason string
	at     time.Time
	events []string
}

// gains are a member's recent rises on a board with flags.gain, summed in
// buckets of a sixteenth of per: the list stays short whatever the rate.
type gains struct {
	idx []int64 // bucket index (unix ms / width), ascending
	sum []int64
}

// gainBuckets is how many buckets per spans: a rise counts for per and up
// to a sixteenth more.
const gainBuckets = 16

// liveClaim is key's claim record at nowNs, nil when none. b.mu is held.
func (b *board) liveClaim(key idemKey, nowNs int64) *claim {
	c := b.claims[key]
	if c == nil || c.expires <= nowNs {
		return nil
	}
	return c
}

// admitClaim checks event e against its claim record c (R35): another
// payload conflicts; a pending claim answers PendingError unless e is the
// claimer's verdict; a reject answers its RejectedError; a kept verdict
// is e's own. b.mu is held.
func admitClaim(c *claim, e *rank.Event, hash uint64, nowNs int64) error {
	if c.hash != hash {
		return rank.ErrIdempotencyConflict
	}
	switch c.state {
	case claimPending:
		if e.Verdict == rank.VerdictNone || e.Claim != c.token {
			return &rank.PendingError{Retry: time.Duration(c.expires - nowNs)}
		}
	case claimRejected:
		return &rank.RejectedError{Reason: c.reason}
	case claimJudged:
		e.Verdict, e.Reason = c.verdict, c.reason
	}
	return nil
}

// contender reports whether an event taking a member from old (had) to
// score must pass the board's hook: every event when its top is 0, else
// one that changes the score to one at least as good as the K-th shown
// entry's (or while fewer than K are shown). b.mu is held.
func (b *board) contender(z *zset, had bool, old, score int64) bool {
	if had && score == old {
		return false // nothing changes
	}
	k := b.cfg.Hook.Top
	if k == 0 || z == nil || z.tr.len() < k {
		return true
	}
	c := z.tr.at(k)
	return !b.cfg.Better(c.node().score, score)
}

// claimEvent records a claim on key for the hook and answers the
// ValidateError that carries it, with the member's entry before the
// event: n in the tree, or hn held. b.mu is held for writing.
func (b *board) claimEvent(key idemKey, hash uint64, now time.Time, period int64, z *zset, n, hn *node) error {
	b.claimSeq++
	c := &claim{state: claimPending, hash: hash, expires: now.Add(b.cfg.ClaimFor()).UnixNano(),
		token: strconv.FormatInt(b.claimSeq, 36)}
	b.putClaim(key, c)
	ve := &rank.ValidateError{Token: c.token, Period: period}
	switch {
	case n != nil:
		ve.Found, ve.Score, ve.Rank = true, n.score, b.rankIn(z, n, z.tr.rankOf(&n.key))
	case hn != nil:
		ve.Found, ve.Score, ve.Rank = true, hn.score, b.wouldRank(z, hn)
	}
	return ve
}

// putClaim stores c under key and queues its expiry. b.mu is held for
// writing.
func (b *board) putClaim(key idemKey, c *claim) {
	if b.claims == nil {
		b.claims = map[idemKey]*claim{}
	}
	b.claims[key] = c
	b.queue.push(key, c.expires)
}

// keepVerdict is told that e, carrying its hook's verdict, was refused
// with err: the verdict is kept in place of its claim for the window, so
// a re-send is judged by it without a second call (R35). A failure that
// is not a refusal (the store going away) keeps nothing. b.mu is held for
// writing.
func (b *board) keepVerdict(e rank.Event, now time.Time, err error) {
	if e.Verdict == rank.VerdictNone || !rank.IsRefusal(err) {
		return
	}
	key := idemKey{e.Member, e.ID}
	if c := b.liveClaim(key, now.UnixNano()); c != nil && c.state == claimPending && c.token != e.Claim {
		return // another's claim: its verdict will decide
	}
	b.putClaim(key, &claim{state: claimJudged, hash: e.PayloadHash(), verdict: e.Verdict, reason: e.Reason,
		expires: now.Add(time.Duration(b.cfg.IdempotencyWindow)).UnixNano()})
}

// wouldRank is the rank of n, out of z's tree, were it in it. b.mu is held.
func (b *board) wouldRank(z *zset, n *node) int64 {
	if b.cfg.Tiebreak == rank.Shared {
		return 1 + int64(z.tr.countLess(n.s))
	}
	return 1 + int64(z.tr.before(&n.key, nil))
}

// wouldRankIn is the rank of n, out of group tree t (nil: a group nobody
// is in), were it in it. b.mu is held.
func (b *board) wouldRankIn(t *tree, n *node) int64 {
	switch {
	case t == nil:
		return 1
	case b.cfg.Tiebreak == rank.Shared:
		return 1 + int64(t.countLess(n.s))
	}
	var path [maxDepth]step
	_, pos, base := t.find(&n.key, &path)
	return 1 + int64(base+pos)
}

// heldNode is member's held entry in z, nil when it is not held.
func (z *zset) heldNode(member string) *node {
	if h := z.held[member]; h != nil {
		return h.n
	}
	return nil
}

// afterApply holds the member of e after its event (r, from old when had
// to score, applied at now) when the hook flagged it or it rose too fast,
// and lists the event in a held member's queue entry. n is its node, in
// the tree unless held. b.mu is held for writing.
func (b *board) afterApply(z *zset, n *node, e rank.Event, r *rank.Result, old, score int64, now time.Time) {
	rise := score - old // old is 0 when the member had no entry
	if b.cfg.Order == rank.Asc {
		rise = -rise
	}
	reason := ""
	switch f := b.cfg.Flags; {
	case e.Verdict == rank.VerdictFlag:
		reason = e.Reason
		if reason == "" {
			reason = "flag"
		}
	case f.Jump > 0 && rise > f.Jump:
		reason = rank.HoldJump
	case !f.Gain.IsZero() && b.gain(e.Member, rise, now) > f.Gain.Points:
		reason = rank.HoldGain
	}
	if h := z.held[e.Member]; h != nil {
		if len(h.events) < rank.MaxHeldEvents {
			h.events = append(h.events, e.ID)
		}
		r.Held = true
		return
	}
	if reason == "" {
		return
	}
	z.tr.remove(n)
	z.leaveGroups(n) // its region's standings hide it too; its placement stays
	delete(z.members, e.Member)
	if z.held == nil {
		z.held = map[string]*hold{}
	}
	z.held[e.Member] = &hold{n: n, reason: reason, at: now, events: []string{e.ID}}
	r.Held, r.Hold = true, reason
}

// gain adds rise (when positive) to member's recent gains and returns
// their sum within the board's flags.gain.per. Zero on a board without it.
// b.mu is held for writing.
func (b *board) gain(member string, rise int64, now time.Time) int64 {
	per := time.Duration(b.cfg.Flags.Gain.Per).Milliseconds()
	w := max(per/gainBuckets, 1)
	ms := now.UnixMilli()
	g := b.gains[member]
	if g == nil {
		if rise <= 0 {
			return 0
		}
		if b.gains == nil {
			b.gains = map[string]*gains{}
		}
		g = &gains{}
		b.gains[member] = g
	}
	g.trim((ms-per)/w - 1)
	if rise > 0 {
		idx := ms / w
		if n := len(g.idx); n > 0 && g.idx[n-1] == idx {
			g.sum[n-1] = min(g.sum[n-1]+rise, rank.MaxScore)
		} else {
			g.idx, g.sum = append(g.idx, idx), append(g.sum, rise)
		}
	}
	var total int64
	for _, s := range g.sum {
		total = min(total+s, rank.MaxScore)
	}
	if len(g.idx) == 0 {
		delete(b.gains, member)
	}
	return total
}

// trim drops the buckets at or before index upto.
func (g *gains) trim(upto int64) {
	i := 0
	for i < len(g.idx) && g.idx[i] <= upto {
		i++
	}
	g.idx, g.sum = g.idx[i:], g.sum[i:]
}

// sweepGains drops the members whose gains have all left the window.
// b.mu is held for writing.
func (b *board) sweepGains(now time.Time) {
	if len(b.gains) == 0 {
		return
	}
	per := time.Duration(b.cfg.Flags.Gain.Per).Milliseconds()
	upto := (now.UnixMilli()-per)/max(per/gainBuckets, 1) - 1
	for m, g := range b.gains {
		if g.trim(upto); len(g.idx) == 0 || per == 0 {
			delete(b.gains, m)
		}
	}
}

// Reject implements rank.Integrity.
func (s *Store) Reject(ctx context.Context, e rank.Event, token, reason string) (bool, error) {
	ok := false
	err := s.locked(ctx, "reject", e.Board, func(b *board, now time.Time) error {
		if !rank.ValidMemberID(e.Member) {
			return rank.ErrInvalidMember
		}
		key, nowNs := idemKey{e.Member, e.ID}, now.UnixNano()
		if rec, had := b.idem[key]; had && rec.expires > nowNs {
			return nil // applied meanwhile (its claim had lapsed)
		}
		if c := b.liveClaim(key, nowNs); c != nil && (c.state != claimPending || c.token != token) {
			return nil
		}
		b.putClaim(key, &claim{state: claimRejected, hash: e.PayloadHash(), reason: reason,
			expires: now.Add(time.Duration(b.cfg.IdempotencyWindow)).UnixNano()})
		ok = true
		return nil
	})
	return ok, err
}

// Held implements rank.Integrity.
func (s *Store) Held(ctx context.Context, id string, sel rank.PeriodSel) ([]rank.Held, error) {
	out := []rank.Held{}
	err := s.locked(ctx, "held", id, func(b *board, now time.Time) error {
		idx, err := sel.Resolve(b.cfg, now)
		if err != nil {
			return err
		}
		z := b.readable(idx, now)
		if z == nil {
			return nil
		}
		for m, h := range z.held {
			out = append(out, rank.Held{Member: m, Reason: h.reason, At: h.at, Score: h.n.score, Events: slices.Clone(h.events)})
		}
		return nil
	})
	slices.SortFunc(out, func(x, y rank.Held) int { return strings.Compare(x.Member, y.Member) })
	return out, err
}

// ClearHold implements rank.Integrity.
func (s *Store) ClearHold(ctx context.Context, id, member string, sel rank.PeriodSel) error {
	return s.locked(ctx, "clear hold", id, func(b *board, now time.Time) error {
		if !rank.ValidMemberID(member) {
			return rank.ErrInvalidMember
		}
		idx, err := sel.Resolve(b.cfg, now)
		if err != nil {
			return err
		}
		b.expire(now)
		z := b.readable(idx, now)
		if z == nil || z.held[member] == nil {
			return rank.ErrNotHeld
		}
		n := z.held[member].n
		delete(z.held, member)
		delete(b.gains, member)
		if b.banned(member, now) {
			if z.hidden == nil {
				z.hidden = map[string]*node{}
			}
			z.hidden[member] = n
		} else {
			z.tr.insert(n)
			z.enterGroups(n) // in the region its last event placed it in
			z.members[member] = n
		}
		b.seq++
		return nil
	})
}

// SelfRanks implements rank.Integrity.
func (s *Store) SelfRanks(ctx context.Context, id string, sel rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	rs, err := s.Ranks(ctx, id, sel, members, around)
	if err != nil {
		return rs, err
	}
	b, err := s.lookup(ctx, id)
	if err != nil {
		return rank.Ranks{}, fmt.Errorf("memstore: self ranks %s: %w", id, err)
	}
	now := s.rlock(b)
	defer b.mu.RUnlock()
	z := b.readable(rs.Period, now)
	if b.deleted || z == nil || len(z.held) == 0 {
		return rs, nil
	}
	// The read lock was let go between the two: the shown members are read
	// again with the held ones, in one snapshot.
	rs.Seq = b.seq
	for i, m := range members {
		if n := z.members[m]; n != nil {
			rs.Members[i] = b.memberRank(z, n, max(around, 0))
			b.regionRank(z, n, &rs.Members[i])
			continue
		}
		// A banned member is in no read, its own included (R21).
		if n := z.heldNode(m); n != nil && !b.banned(m, now) {
			rs.Members[i] = b.selfRank(z, n, max(around, 0))
			if z.rg != nil {
				if g, ok := z.rg.of[m]; ok {
					rs.Members[i].Region, rs.Members[i].RegionRank = g, b.wouldRankIn(z.rg.sets[g], n)
				}
			}
		}
	}
	return rs, nil
}

// memberRank is shown member n with around neighbours. b.mu is held.
func (b *board) memberRank(z *zset, n *node, around int) rank.MemberRank {
	pos := z.tr.rankOf(&n.key)
	lo := max(1, pos-around)
	hi := min(z.tr.len(), pos+around)
	return rank.MemberRank{Member: n.m, Found: true, Rank: b.rankIn(z, n, pos), Score: n.score,
		Name: b.names[n.m], Around: b.entries(z, lo, hi-lo+1)}
}

// selfRank is held member n as it sees itself: at the place its key has
// among the shown entries, those below it one rank lower. b.mu is held.
func (b *board) selfRank(z *zset, n *node, around int) rank.MemberRank {
	pos := 1 + z.tr.before(&n.key, nil) // its position among the shown ones and itself
	rk := b.wouldRank(z, n)
	lo := max(1, pos-around)
	above := b.entries(z, lo, pos-lo)
	below := b.entries(z, pos, around)
	own := rank.Entry{Rank: rk, Member: n.m, Score: n.score, Name: b.names[n.m], Meta: z.meta[n.m]}
	out := make([]rank.Entry, 0, len(above)+1+len(below))
	out = append(append(out, above...), own)
	for _, e := range below {
		if b.cfg.Tiebreak != rank.Shared || e.Score != n.score {
			e.Rank++
		}
		out = append(out, e)
	}
	return rank.MemberRank{Member: n.m, Found: true, Rank: rk, Score: n.score, Name: b.names[n.m], Around: out}
}
