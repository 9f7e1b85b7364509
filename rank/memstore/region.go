package memstore

// Region boards (docs/protocol.md §17, R37). A region board's period keeps
// one group (group.go) per region: the apply that writes a member's entry
// places it in the region its event names, moving it there from the one it
// was in, under the board's lock, so the region rank it answers is the
// rank right after its own step.

import (
	"context"
	"fmt"

	"github.com/wsgateway/wsgateway/rank"
)

// regionMove takes member e.Member's node n (nil: new to the period) out of
// its region's tree, before its key changes, and places the member in the
// event's region; it returns that region's tree, which n enters once keyed,
// and notes the region (and the one left) in r. b.mu held for writing.
func (b *board) regionMove(z *zset, n *node, e rank.Event, r *rank.Result) *tree {
	to := rank.RegionOf(e.Region)
	from, placed := z.rg.of[e.Member]
	if n != nil && placed {
		t := z.rg.sets[from]
		t.remove(n)
		if t.length == 0 && from != to {
			delete(z.rg.sets, from)
		}
	}
	if placed && from != to {
		r.RegionFrom = from
	}
	z.rg.of[e.Member] = to
	r.Region = to
	return z.rg.tree(to)
}

// regionRecord keeps a region and a region rank in a record's group field:
// the region's two letters in tier, the rank in n.
func regionRecord(region string, rk int64) cohortKey {
	if len(region) != 2 {
		return cohortKey{}
	}
	return cohortKey{tier: int(region[0])<<8 | int(region[1]), n: rk}
}

// region is what regionRecord kept.
func (c cohortKey) region() (string, int64) {
	return string([]byte{byte(c.tier >> 8), byte(c.tier)}), c.n
}

// regionRank fills mr, member node n's read in z, with its region and
// region rank. b.mu held.
func (b *board) regionRank(z *zset, n *node, mr *rank.MemberRank) {
	if z.rg == nil {
		return
	}
	if g, ok := z.rg.of[n.m]; ok {
		t := z.rg.sets[g]
		mr.Region, mr.RegionRank = g, b.rankInTree(t, n, t.rankOf(&n.key))
	}
}

// regionRead resolves a region read's board and period under the read
// lock, which it leaves held when err is nil; z is nil for a period
// without data.
func (s *Store) regionRead(ctx context.Context, op, id string, sel rank.PeriodSel) (b *board, z *zset, idx int64, err error) {
	if b, err = s.lookup(ctx, id); err != nil {
		return nil, nil, 0, fmt.Errorf("memstore: %s %s: %w", op, id, err)
	}
	now := s.rlock(b)
	switch {
	case b.deleted:
		err = rank.ErrUnknownBoard
	case !b.cfg.Regions:
		err = rank.NoRegions(id)
	default:
		idx, err = sel.Resolve(b.cfg, now)
	}
	if err != nil {
		b.mu.RUnlock()
		return nil, nil, 0, fmt.Errorf("memstore: %s %s: %w", op, id, err)
	}
	return b, b.readable(idx, now), idx, nil
}

// RegionTop reads entries [offset, offset+limit) of one region of a period.
func (s *Store) RegionTop(ctx context.Context, id string, sel rank.PeriodSel, region string, offset, limit int) (rank.Page, error) {
	if offset < 0 || limit < 0 {
		return rank.Page{}, fmt.Errorf("memstore: region top %s: %w: offset %d and limit %d must not be negative", id, rank.ErrBadRequest, offset, limit)
	}
	b, z, idx, err := s.regionRead(ctx, "region top", id, sel)
	if err != nil {
		return rank.Page{}, err
	}
	defer b.mu.RUnlock()
	if err := rank.CheckRegion(region); err != nil {
		return rank.Page{}, fmt.Errorf("memstore: region top %s: %w", id, err)
	}
	pg := rank.Page{Board: id, Period: idx, Offset: offset, Seq: b.seq, Decimals: b.cfg.Decimals(), Entries: []rank.Entry{}}
	if z != nil {
		b.groupPage(&pg, z, z.rg.sets[region], offset, limit)
	}
	return pg, nil
}

// Regions lists a period's regions that hold entries, most first.
func (s *Store) Regions(ctx context.Context, id string, sel rank.PeriodSel) ([]rank.RegionCount, error) {
	b, z, _, err := s.regionRead(ctx, "regions", id, sel)
	if err != nil {
		return nil, err
	}
	defer b.mu.RUnlock()
	out := []rank.RegionCount{}
	if z != nil {
		for g, t := range z.rg.sets {
			out = append(out, rank.RegionCount{Region: g, Members: int64(t.length)})
		}
	}
	return rank.SortRegions(out), nil
}

// RegionRanks reads several members, each ranked with its neighbours
// within its own region, in one snapshot.
func (s *Store) RegionRanks(ctx context.Context, id string, sel rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	if around < 0 {
		return rank.Ranks{}, fmt.Errorf("memstore: region ranks %s: %w: around %d is negative", id, rank.ErrBadRequest, around)
	}
	b, z, idx, err := s.regionRead(ctx, "region ranks", id, sel)
	if err != nil {
		return rank.Ranks{}, err
	}
	defer b.mu.RUnlock()
	out := rank.Ranks{Board: id, Period: idx, Seq: b.seq, Members: make([]rank.MemberRank, len(members)), Decimals: b.cfg.Decimals()}
	if z != nil {
		out.Total = int64(z.tr.len())
	}
	for i, m := range members {
		var n *node
		if z != nil {
			n = z.members[m]
		}
		if n == nil && !rank.ValidMemberID(m) {
			return rank.Ranks{}, fmt.Errorf("memstore: region ranks %s: %w: %q", id, rank.ErrInvalidMember, m)
		}
		out.Members[i] = rank.MemberRank{Member: m}
		g, ok := "", false
		if n != nil {
			g, ok = z.rg.of[m]
		}
		if !ok {
			continue
		}
		mr := b.groupRank(z, z.rg.sets[g], n, around)
		mr.Region, mr.RegionRank = g, mr.Rank
		out.Members[i] = mr
	}
	return out, nil
}
