package memstore

// Cohorts and leagues (docs/protocol.md §12, R27). A cohort board's period
// keeps, besides its ranking, one tree per cohort holding the same nodes
// (a node's key changes only while it is out of every tree), so a rank
// within a cohort is a plain position, as a ZREVRANK on Redis. Placement
// happens under the board's lock, in the apply that first writes the
// member in the period: one counter per tier, so a cohort never holds more
// than Size members.

import (
	"context"
	"fmt"

	"github.com/wsgateway/wsgateway/rank"
)

// cohortKey names a cohort within a period: its tier's index (0 without a
// league) and its number from 1.
type cohortKey struct {
	tier int
	n    int64
}

// cohorts is one period's cohorts (group.go): the groups and how many
// members each tier has had placed.
type cohorts struct {
	groups[cohortKey]
	placed map[int]int64 // members placed per tier
}

func newCohorts() *cohorts {
	return &cohorts{groups: newGroups[cohortKey](), placed: map[int]int64{}}
}

// leagueState is a league board's tiers across periods. The moves of a
// period are folded into tier once, when the first member is placed in a
// later period: open names the last period placed in, and openZ keeps its
// data until then even when retention has dropped it from the board.
type leagueState struct {
	// tier is each member's tier for its next placement; absent = the
	// lowest. A member not placed in a period keeps the tier it had: the
	// contract moves only those "with an entry".
	tier  map[string]int
	open  int64
	openZ *zset
}

// cohortName is the public id of cohort c (rank.CohortID).
func (b *board) cohortName(c cohortKey) string {
	if !b.cfg.Leagued() {
		return rank.CohortID("", c.n)
	}
	return rank.CohortID(b.cfg.League.Tiers.At(c.tier), c.n)
}

// tierName is the name of tier t, "" on a board without a league.
func (b *board) tierName(t int) string {
	if !b.cfg.Leagued() {
		return ""
	}
	return b.cfg.League.Tiers.At(t)
}

// cohortJoin is member's cohort in period p (data z), placing it when it
// has none: the next place of its tier. b.mu held for writing.
func (b *board) cohortJoin(z *zset, p rank.Period, member string) (cohortKey, *tree) {
	if c, ok := z.co.of[member]; ok {
		return c, z.co.sets[c]
	}
	t := 0
	if b.cfg.Leagued() {
		b.leagueOpen(p.Index, z)
		t = b.league.tier[member]
	}
	c := cohortKey{t, b.cfg.CohortOf(z.co.placed[t])}
	z.co.placed[t]++
	z.co.of[member] = c
	return c, z.co.tree(c)
}

// leagueOpen folds the moves of the last period placed in into the
// members' tiers when period idx (data z) is placed in for the first time
// (R27): in each of that period's cohorts the best Promote move one tier
// up and the worst Demote one down. Periods nobody played have no moves,
// so however many passed, one fold is enough. b.mu held for writing.
func (b *board) leagueOpen(idx int64, z *zset) {
	l := b.league
	if l.open >= idx {
		return
	}
	if l.openZ != nil {
		lg := b.cfg.League
		for c, ct := range l.openZ.co.sets {
			pos, count := 0, ct.length
			for cur := ct.at(1); cur.node() != nil; cur.next() {
				pos++
				if t := lg.MoveTier(c.tier, lg.Step(pos, count)); t != c.tier {
					l.tier[cur.node().m] = t
				}
			}
		}
	}
	l.open, l.openZ = idx, z
}

// rankInTree is n's rank within tree t (a cohort): its position, or on a
// shared board 1 + the number of members strictly better.
func (b *board) rankInTree(t *tree, n *node, pos int) int64 {
	if b.cfg.Tiebreak == rank.Shared {
		return 1 + int64(t.countLess(n.s))
	}
	return int64(pos)
}

// treeEntries lists up to limit entries of cohort tree t from 1-based
// position start, as entries does for a period.
func (b *board) treeEntries(z *zset, t *tree, start, limit int) []rank.Entry {
	if limit <= 0 || start > t.length {
		return []rank.Entry{}
	}
	out := make([]rank.Entry, 0, min(limit, t.length-start+1))
	shared := b.cfg.Tiebreak == rank.Shared
	var rk int64
	var prev *node
	for c := t.at(start); c.node() != nil && len(out) < limit; c.next() {
		n := c.node()
		pos := int64(start + len(out))
		switch {
		case !shared:
			rk = pos
		case prev == nil:
			rk = 1 + int64(t.countLess(n.s))
		case n.s != prev.s:
			rk = pos
		}
		out = append(out, rank.Entry{Rank: rk, Member: n.m, Score: n.score, Name: b.names[n.m], Meta: z.meta[n.m]})
		prev = n
	}
	return out
}

// cohortRank is member node n's rank and neighbours within its cohort.
// b.mu held.
func (b *board) cohortRank(z *zset, n *node, around int) rank.MemberRank {
	c := z.co.of[n.m]
	mr := b.groupRank(z, z.co.sets[c], n, around)
	mr.Cohort, mr.Tier = b.cohortName(c), b.tierName(c.tier)
	return mr
}

// CohortTop reads entries [offset, offset+limit) of one cohort of a period.
func (s *Store) CohortTop(ctx context.Context, id string, sel rank.PeriodSel, cohort string, offset, limit int) (rank.Page, error) {
	b, err := s.lookup(ctx, id)
	if err != nil {
		return rank.Page{}, fmt.Errorf("memstore: cohort top %s: %w", id, err)
	}
	if offset < 0 || limit < 0 {
		return rank.Page{}, fmt.Errorf("memstore: cohort top %s: %w: offset %d and limit %d must not be negative", id, rank.ErrBadRequest, offset, limit)
	}
	now := s.rlock(b)
	defer b.mu.RUnlock()
	if b.deleted {
		return rank.Page{}, fmt.Errorf("memstore: cohort top %s: %w", id, rank.ErrUnknownBoard)
	}
	tier, n, err := b.cfg.ParseCohortID(cohort)
	if err != nil {
		return rank.Page{}, fmt.Errorf("memstore: cohort top %s: %w", id, err)
	}
	idx, err := sel.Resolve(b.cfg, now)
	if err != nil {
		return rank.Page{}, fmt.Errorf("memstore: cohort top %s: %w", id, err)
	}
	pg := rank.Page{Board: id, Period: idx, Offset: offset, Seq: b.seq, Decimals: b.cfg.Decimals(), Entries: []rank.Entry{}}
	z := b.readable(idx, now)
	if z == nil || z.co == nil {
		return pg, nil
	}
	c := cohortKey{0, n}
	if tier != "" {
		c.tier = b.cfg.League.Tiers.Index(tier)
	}
	b.groupPage(&pg, z, z.co.sets[c], offset, limit)
	return pg, nil
}

// MemberTier is the member's tier in a period of a league board: that of
// its cohort when it has an entry there, else the tier its next placement
// would have (rank.Store).
func (s *Store) MemberTier(ctx context.Context, id string, sel rank.PeriodSel, member string) (string, error) {
	b, err := s.lookup(ctx, id)
	if err != nil {
		return "", fmt.Errorf("memstore: member tier %s: %w", id, err)
	}
	if err := rank.CheckMemberID(member); err != nil {
		return "", fmt.Errorf("memstore: member tier %s: %w", id, err)
	}
	now := s.rlock(b)
	defer b.mu.RUnlock()
	if b.deleted {
		return "", fmt.Errorf("memstore: member tier %s: %w", id, rank.ErrUnknownBoard)
	}
	idx, err := sel.Resolve(b.cfg, now)
	if err != nil {
		return "", fmt.Errorf("memstore: member tier %s: %w", id, err)
	}
	if !b.cfg.Leagued() {
		return "", nil
	}
	if z := b.readable(idx, now); z != nil && z.co != nil {
		if c, ok := z.co.of[member]; ok {
			return b.tierName(c.tier), nil
		}
	}
	return b.tierName(b.nextTier(member, rank.PeriodAt(b.cfg, now).Index)), nil
}

// nextTier is the tier member would be placed in in period cur: its tier,
// moved by the last period placed in when cur would fold its moves.
// b.mu held.
func (b *board) nextTier(member string, cur int64) int {
	l := b.league
	t := l.tier[member]
	if l.openZ == nil || l.open >= cur {
		return t
	}
	c, ok := l.openZ.co.of[member]
	if !ok {
		return t
	}
	n := l.openZ.members[member]
	if n == nil {
		n = l.openZ.hidden[member]
	}
	ct := l.openZ.co.sets[c]
	if n == nil || ct == nil {
		return t
	}
	pos := ct.rankOf(&n.key)
	if pos == 0 {
		return t // hidden by a ban: not in the standings the moves follow
	}
	lg := b.cfg.League
	return lg.MoveTier(c.tier, lg.Step(pos, ct.length))
}

// Cohorts lists a period's cohorts from its placement counters
// (rank.Store).
func (s *Store) Cohorts(ctx context.Context, id string, sel rank.PeriodSel) ([]string, error) {
	b, err := s.lookup(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("memstore: cohorts %s: %w", id, err)
	}
	now := s.rlock(b)
	defer b.mu.RUnlock()
	if b.deleted {
		return nil, fmt.Errorf("memstore: cohorts %s: %w", id, rank.ErrUnknownBoard)
	}
	idx, err := sel.Resolve(b.cfg, now)
	if err != nil {
		return nil, fmt.Errorf("memstore: cohorts %s: %w", id, err)
	}
	var placed map[int]int64
	if z := b.readable(idx, now); z != nil && z.co != nil {
		placed = z.co.placed
	}
	return b.cfg.CohortIDs(placed), nil
}
