package redisstore

// Region boards (docs/protocol.md §17, R37). apply.lua places a member in
// the region its event names in the step that writes its entry, keeping per
// period a hash member → region (g:<i>), each region's sorted set next to it
// (g:<i>/<region>, the board's own entries, so ties order as on the board)
// and the set of regions placed in (g:<i>/r). The reads here are one script
// each over those keys; member reads share groupranks.lua with cohorts.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/lua"
)

var regionsScript = newScript(lua.Regions)

// gkey is a region board's period hash of members' regions; the regions'
// sorted sets are named after it.
func (s *Store) gkey(b *rank.Board, idx int64) string {
	return s.key(b, "g:"+strconv.FormatInt(idx, 10))
}

// regioned reports whether board has regions.
func (s *Store) regioned(ctx context.Context, board string) bool {
	c, err := s.board(ctx, board)
	return err == nil && c.b.Regions
}

// regionBoard refuses a board without regions, within a read's build.
func regionBoard(c cachedBoard) error {
	if !c.b.Regions {
		return rank.NoRegions(c.b.ID)
	}
	return nil
}

// RegionTop reads entries [offset, offset+limit) of one region of a period
// (top.lua over the region's sorted set).
func (s *Store) RegionTop(ctx context.Context, board string, period rank.PeriodSel, region string, offset, limit int) (rank.Page, error) {
	return s.groupTop(ctx, "region top", board, period, offset, limit, func(c cachedBoard, sl slots) (a, b string, err error) {
		if err := regionBoard(c); err != nil {
			return "", "", err
		}
		if err := rank.CheckRegion(region); err != nil {
			return "", "", err
		}
		return s.gkey(&c.b, sl.a) + "/" + region, s.gkey(&c.b, sl.b) + "/" + region, nil
	})
}

// Regions lists a period's regions that hold entries, most first
// (regions.lua).
func (s *Store) Regions(ctx context.Context, board string, period rank.PeriodSel) ([]rank.RegionCount, error) {
	const op = "regions"
	if !rank.ValidBoardID(board) {
		return nil, fmt.Errorf("redisstore: %s %q: %w", op, board, rank.ErrInvalidBoard)
	}
	_, _, v, err := s.readWith(ctx, op, board, period, regionsScript, func(c cachedBoard, sl slots, nowArg string) ([]string, []any, error) {
		if err := regionBoard(c); err != nil {
			return nil, nil, err
		}
		keys := []string{c.keys.cfg, c.keys.seq, c.keys.n, s.gkey(&c.b, sl.a) + "/r", s.gkey(&c.b, sl.b) + "/r"}
		return keys, []any{c.ver, nowArg, sl.start, sl.bound, sl.end}, nil
	})
	if err != nil {
		return nil, err
	}
	a, _ := v.([]any)
	if len(a) < 1 || (len(a)-1)%2 != 0 {
		return nil, fmt.Errorf("redisstore: %s %s: unexpected reply %v", op, board, v)
	}
	out := make([]rank.RegionCount, 0, (len(a)-1)/2)
	for i := 1; i+1 < len(a); i += 2 {
		r, _ := a[i].(string)
		if !rank.ValidRegion(r) {
			return nil, fmt.Errorf("redisstore: %s %s: unexpected region %v", op, board, a[i])
		}
		out = append(out, rank.RegionCount{Region: r, Members: num(a[i+1])})
	}
	return rank.SortRegions(out), nil
}

// RegionRanks reads members each within its own region (groupranks.lua in
// scope group over the regions' hash).
func (s *Store) RegionRanks(ctx context.Context, board string, period rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	const op = "region ranks"
	if err := checkRanksArgs(op, board, members, around); err != nil {
		return rank.Ranks{}, err
	}
	if !s.regioned(ctx, board) {
		if _, err := s.board(ctx, board); err != nil {
			return rank.Ranks{}, s.fail(op, board, err)
		}
		return rank.Ranks{}, fmt.Errorf("redisstore: %s %s: %w", op, board, rank.NoRegions(board))
	}
	g, err := s.groupRanks(ctx, op, board, period, members, around, inGroup, s.gkey)
	if err != nil {
		return rank.Ranks{}, err
	}
	for i := range g.r.Members {
		if mr := &g.r.Members[i]; mr.Found {
			mr.Region, mr.RegionRank = g.groups[i], mr.Rank
		}
	}
	return g.r, nil
}

// regionBoardRanks is Ranks on a region board: ranks and neighbours on the
// board, and each member's region and rank there (groupranks.lua in scope
// board, or selfOnBoard for SelfRanks). Arguments are checked by the
// caller.
func (s *Store) regionBoardRanks(ctx context.Context, board string, period rank.PeriodSel, members []string, around int, scope string) (rank.Ranks, error) {
	g, err := s.groupRanks(ctx, "ranks", board, period, members, around, scope, s.gkey)
	if err != nil {
		return rank.Ranks{}, err
	}
	for i := range g.r.Members {
		if mr := &g.r.Members[i]; mr.Found && g.groups[i] != "" {
			mr.Region, mr.RegionRank = g.groups[i], g.groupRanks[i]
		}
	}
	return g.r, nil
}

// regionsArg is apply_region.lua's RG: the events' regions, two letters
// each.
func regionsArg(calls []*call) string {
	rg := make([]byte, 0, 2*len(calls))
	for _, c := range calls {
		rg = append(rg, rank.RegionOf(c.e.Region)...)
	}
	return string(rg)
}

// regionOfRecord sets r's region fields from a region board's record field
// "<region>.<rank>" and the region the reply says the member left.
func regionOfRecord(r *rank.Result, field, from string) error {
	region, rk, _ := strings.Cut(field, ".")
	n, err := strconv.ParseInt(rk, 10, 64)
	if err != nil || n < 1 || !rank.ValidRegion(region) || (from != "" && !rank.ValidRegion(from)) {
		return fmt.Errorf("unexpected region %q (left %q)", field, from)
	}
	r.Region, r.RegionRank, r.RegionFrom = region, n, from
	return nil
}

// checkRanksArgs checks a ranks read's arguments as Ranks does.
func checkRanksArgs(op, board string, members []string, around int) error {
	if !rank.ValidBoardID(board) {
		return fmt.Errorf("redisstore: %s %q: %w", op, board, rank.ErrInvalidBoard)
	}
	if around < 0 {
		return fmt.Errorf("redisstore: %s %s: %w: around must not be negative", op, board, rank.ErrBadRequest)
	}
	for _, m := range members {
		if !rank.ValidMemberID(m) {
			return fmt.Errorf("redisstore: %s %s: %w", op, board, rank.ErrInvalidMember)
		}
	}
	return nil
}
