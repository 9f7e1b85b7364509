package live

import (
	"context"
	"errors"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// Region top frames (docs/protocol.md §17, R37): a subscription whose
// Group is a region gets that region's top-N (RegionTop) in its top slot,
// as a standings source (standings.go): on the board's read schedule,
// encoded once per (board, region, N), read only for regions someone
// watches. A change names its region and its rank there, so it marks only
// its own region's frames; a move marks every watched region (it left one).

// Region is the Group kind of a region's standings.
const Region = "region"

// regionReader is the store read region frames make.
type regionReader interface {
	RegionTop(ctx context.Context, board string, period rank.PeriodSel, region string, offset, limit int) (rank.Page, error)
}

type regions struct{ st regionReader }

func newRegions(st Store) (source, error) {
	rs, ok := st.(regionReader)
	if !ok {
		return nil, errors.New("live: Config.Store has no RegionTop")
	}
	return regions{rs}, nil
}

func (regions) name() string { return Region }

func (regions) check(cfg rank.Board, id string) error {
	if !cfg.Regions {
		return rank.NoRegions(cfg.ID)
	}
	return rank.CheckRegion(id)
}

// place: the change carries its region rank but not the one before, which
// the board's ranks bound: a member whose board rank did not worsen passed
// nobody downwards in its region either (same order), so its region rank
// before was no better than now; otherwise it may have left the region's
// top, and counts as having been first.
func (regions) place(c rank.Change) (string, int64, int64, bool) {
	if c.Region == "" || c.RegionFrom != "" {
		return "", 0, 0, false
	}
	prev := int64(1)
	if c.PrevRank > 0 && c.Rank <= c.PrevRank {
		prev = c.RegionRank
	}
	return c.Region, c.RegionRank, prev, true
}

func (rs regions) top(ctx context.Context, board string, sel rank.PeriodSel, id string, n int) (rank.Page, error) {
	return rs.st.RegionTop(ctx, board, sel, id, 0, n)
}

func (regions) label(t *proto.Top, id string) { t.Region = id }

// Region views (scope "region", §17) are views.go's, read with RegionRanks:
// a view's window is within its member's region. A change marks them by
// the same score span as the board's views (a change in another region
// that crosses the span costs a read, never a stale frame); a member that
// moved counts as coming from the worst in both regions.

// regionRanker is the store read region views make.
type regionRanker interface {
	RegionRanks(ctx context.Context, board string, period rank.PeriodSel, members []string, around int) (rank.Ranks, error)
}

func (e *Engine) readRegionRanks(ctx context.Context, id string, sel rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	rr, ok := e.cfg.Store.(regionRanker)
	if !ok {
		return rank.Ranks{}, errors.New("live: Config.Store has no RegionRanks")
	}
	return e.ranksWith(ctx, rr.RegionRanks, id, sel, members, around)
}
