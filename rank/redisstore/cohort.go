package redisstore

// Cohort boards (docs/protocol.md §12, R27). apply.lua places a member in
// its cohort in the step that writes its first entry of a period and keeps
// each cohort in a sorted set of its own next to the period's (its keys are
// in the script's "cohorts" section); league moves are made by the same
// script when a period is first placed in. The reads here are one script
// each over those keys.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/lua"
)

var (
	cohortTierScript = newScript(lua.CohortTier)
	cohortsScript    = newScript(lua.Cohorts)
)

// cohortSpec is a cohort board's config as apply.lua reads it from the cfg
// hash's field co: "<size>.<tiers>.<promote>.<demote>", tiers 0 without a
// league; "" for a board without cohorts.
func cohortSpec(b rank.Board) string {
	if !b.Cohorted() {
		return ""
	}
	l := b.League
	return fmt.Sprintf("%d.%d.%d.%d", b.Cohort.Size, l.Tiers.Len(), l.Promote, l.Demote)
}

// cohortName turns a script's cohort ("<tier index>.<n>") into the
// cohort's id and its tier's name ("" without a league).
func cohortName(b rank.Board, c string) (id, tier string, err error) {
	ts, ns, ok := strings.Cut(c, ".")
	t, terr := strconv.Atoi(ts)
	n, nerr := strconv.ParseInt(ns, 10, 64)
	if !ok || terr != nil || nerr != nil || t < 0 || n < 1 || (t > 0 && t >= b.League.Tiers.Len()) {
		return "", "", fmt.Errorf("unexpected cohort %q", c)
	}
	if b.Leagued() {
		tier = b.League.Tiers.At(t)
	}
	return rank.CohortID(tier, n), tier, nil
}

// cohortSuffix is the script's name ("<tier index>.<n>") of cohort id on
// board b: rank.ErrBadRequest for a malformed id or a board without cohorts.
func cohortSuffix(b rank.Board, id string) (string, error) {
	tier, n, err := b.ParseCohortID(id)
	if err != nil {
		return "", err
	}
	t := 0
	if tier != "" {
		t = b.League.Tiers.Index(tier)
	}
	return strconv.Itoa(t) + "." + strconv.FormatInt(n, 10), nil
}

// kkey is a cohort board's period hash of members' cohorts; its cohorts'
// sorted sets are named after it (apply.lua).
func (s *Store) kkey(b *rank.Board, idx int64) string {
	return s.key(b, "k:"+strconv.FormatInt(idx, 10))
}

// CohortTop reads entries [offset, offset+limit) of one cohort of a period
// (top.lua over the cohort's sorted set).
func (s *Store) CohortTop(ctx context.Context, board string, period rank.PeriodSel, cohort string, offset, limit int) (rank.Page, error) {
	return s.groupTop(ctx, "cohort top", board, period, offset, limit, func(c cachedBoard, sl slots) (a, b string, err error) {
		suffix, err := cohortSuffix(c.b, cohort)
		if err != nil {
			return "", "", err
		}
		return s.kkey(&c.b, sl.a) + "/" + suffix, s.kkey(&c.b, sl.b) + "/" + suffix, nil
	})
}

// groupTop reads entries [offset, offset+limit) of one group of a period
// (a cohort's or a region's: top.lua over the group's sorted set, whose
// keys in the period's two slots sets gives, or refuses).
func (s *Store) groupTop(ctx context.Context, op, board string, period rank.PeriodSel, offset, limit int,
	sets func(c cachedBoard, sl slots) (a, b string, err error)) (rank.Page, error) {
	if !rank.ValidBoardID(board) {
		return rank.Page{}, fmt.Errorf("redisstore: %s %q: %w", op, board, rank.ErrInvalidBoard)
	}
	if offset < 0 || limit < 0 {
		return rank.Page{}, fmt.Errorf("redisstore: %s %s: %w: offset and limit must not be negative", op, board, rank.ErrBadRequest)
	}
	c, sl, v, err := s.readWith(ctx, op, board, period, s.top, func(c cachedBoard, sl slots, nowArg string) ([]string, []any, error) {
		a, b, err := sets(c, sl)
		if err != nil {
			return nil, nil, err
		}
		keys := []string{c.keys.cfg, c.keys.seq, c.keys.n, a, b, c.keys.ban, s.metaKey(&c.b, sl.a), s.metaKey(&c.b, sl.b)}
		return keys, []any{c.ver, nowArg, sl.start, sl.bound, sl.end, string(c.b.Tiebreak), offset, limit}, nil
	})
	if err != nil {
		return rank.Page{}, err
	}
	a, _ := v.([]any)
	if len(a) < 4 || (len(a)-4)%4 != 0 {
		return rank.Page{}, fmt.Errorf("redisstore: %s %s: unexpected reply %v", op, board, v)
	}
	p := rank.Page{Board: board, Period: sl.pick(num(a[0])), Offset: offset, Total: num(a[1]), Seq: num(a[2]), Decimals: c.b.Decimals()}
	if p.Entries, err = entries(a[4:], int64(offset), num(a[3]), c.b); err != nil {
		return rank.Page{}, fmt.Errorf("redisstore: %s %s: %w", op, board, err)
	}
	return p, nil
}

// cohorted reports whether board competes in cohorts.
func (s *Store) cohorted(ctx context.Context, board string) bool {
	c, err := s.board(ctx, board)
	return err == nil && c.b.Cohorted()
}

// cohortRanks is Ranks on a cohort board: each member within its cohort
// (groupranks.lua over the cohorts' hash). Arguments are checked by Ranks.
func (s *Store) cohortRanks(ctx context.Context, board string, period rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	g, err := s.groupRanks(ctx, "ranks", board, period, members, around, inGroup, s.kkey)
	if err != nil {
		return rank.Ranks{}, err
	}
	for i := range g.r.Members {
		if co := g.groups[i]; co != "" && g.r.Members[i].Found {
			if g.r.Members[i].Cohort, g.r.Members[i].Tier, err = cohortName(g.c.b, co); err != nil {
				return rank.Ranks{}, fmt.Errorf("redisstore: ranks %s: %w", board, err)
			}
		}
	}
	return g.r, nil
}

// MemberTier is a member's tier in a period of a league board
// (cohorttier.lua): its cohort's there, else that of its next placement.
func (s *Store) MemberTier(ctx context.Context, board string, period rank.PeriodSel, member string) (string, error) {
	const op = "member tier"
	if !rank.ValidBoardID(board) {
		return "", fmt.Errorf("redisstore: %s %q: %w", op, board, rank.ErrInvalidBoard)
	}
	if err := rank.CheckMemberID(member); err != nil {
		return "", fmt.Errorf("redisstore: %s %s: %w", op, board, err)
	}
	c, _, v, err := s.readWith(ctx, op, board, "", cohortTierScript, func(c cachedBoard, cur slots, nowArg string) ([]string, []any, error) {
		now, _ := s.now(ctx, c.b)
		idx, err := period.Resolve(c.b, now)
		if err != nil || !c.b.Leagued() {
			return nil, nil, err
		}
		sel := ""
		switch {
		case period == "previous":
			sel = "p"
		case period != "" && period != "current" && !c.b.Retains(idx, now):
			sel = "-1" // past retain: no period's keys, as the other reads
		case period != "" && period != "current":
			sel = strconv.FormatInt(idx, 10)
		}
		return []string{c.keys.cfg}, []any{c.ver, nowArg, cur.start, cur.bound, cur.end, cur.a, cur.b, sel, cur.p, member}, nil
	})
	if err != nil || v == nil {
		return "", err
	}
	t, ok := v.(int64)
	if !ok || t < 0 || int(t) >= c.b.League.Tiers.Len() {
		return "", fmt.Errorf("redisstore: %s %s: unexpected reply %v", op, board, v)
	}
	return c.b.League.Tiers.At(int(t)), nil
}

// Cohorts lists a period's cohorts from apply.lua's placement counters
// (cohorts.lua): a tier that has had n members placed has
// ceil(n / size) cohorts.
func (s *Store) Cohorts(ctx context.Context, board string, period rank.PeriodSel) ([]string, error) {
	const op = "cohorts"
	if !rank.ValidBoardID(board) {
		return nil, fmt.Errorf("redisstore: %s %q: %w", op, board, rank.ErrInvalidBoard)
	}
	c, _, v, err := s.readWith(ctx, op, board, period, cohortsScript, func(c cachedBoard, sl slots, nowArg string) ([]string, []any, error) {
		if !c.b.Cohorted() {
			return nil, nil, nil
		}
		keys := []string{c.keys.cfg, c.keys.seq, c.keys.n, s.kkey(&c.b, sl.a) + "/n", s.kkey(&c.b, sl.b) + "/n"}
		return keys, []any{c.ver, nowArg, sl.start, sl.bound, sl.end}, nil
	})
	if err != nil {
		return nil, err
	}
	a, _ := v.([]any)
	if v != nil && (len(a) < 1 || (len(a)-1)%2 != 0) {
		return nil, fmt.Errorf("redisstore: %s %s: unexpected reply %v", op, board, v)
	}
	placed := map[int]int64{}
	for i := 1; i+1 < len(a); i += 2 {
		ts, _ := a[i].(string)
		t, terr := strconv.Atoi(ts)
		n, nerr := strconv.ParseInt(fmt.Sprint(a[i+1]), 10, 64)
		if terr != nil || nerr != nil || t < 0 || (t > 0 && t >= c.b.League.Tiers.Len()) {
			return nil, fmt.Errorf("redisstore: %s %s: unexpected counter %v = %v", op, board, a[i], a[i+1])
		}
		placed[t] = n
	}
	return c.b.CohortIDs(placed), nil
}
