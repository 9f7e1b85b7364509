package redisstore

// Member reads of boards whose entries are also ranked in groups: cohorts
// (§12, cohort.go) and regions (§17, region.go). Both keep, per period, a
// hash member → group and a sorted set per group named after that hash
// (apply.lua), so one script (groupranks.lua) reads either kind.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/lua"
)

var groupRanksScript = newScript(lua.GroupRanks)

// Scopes of groupranks.lua.
const (
	inGroup = "group" // ranks and neighbours within each member's group
	onBoard = "board" // on the whole board, plus the rank in the group
	// selfOnBoard is onBoard as each member sees itself (SelfRanks): a
	// held member is found where it would be, on the board and in its
	// group (§16).
	selfOnBoard = "self"
)

// groupRead is what groupRanks read: the ranks and each member's group
// ("" when not found) and, in scope onBoard, its rank there.
type groupRead struct {
	c          cachedBoard
	r          rank.Ranks
	groups     []string
	groupRanks []int64
}

// groupRanks reads members of board with groupranks.lua in scope, the
// groups' hash of a period being hkey's. Arguments are checked by the
// caller.
func (s *Store) groupRanks(ctx context.Context, op, board string, period rank.PeriodSel, members []string, around int,
	scope string, hkey func(b *rank.Board, idx int64) string) (groupRead, error) {
	c, sl, v, err := s.readWith(ctx, op, board, period, groupRanksScript, func(c cachedBoard, sl slots, nowArg string) ([]string, []any, error) {
		keys := []string{c.keys.cfg, c.keys.seq, c.keys.n,
			s.zkey(&c.b, sl.a), s.mkey(&c.b, sl.a), s.zkey(&c.b, sl.b), s.mkey(&c.b, sl.b), c.keys.ban,
			s.metaKey(&c.b, sl.a), s.metaKey(&c.b, sl.b), hkey(&c.b, sl.a), hkey(&c.b, sl.b)}
		arg := scope
		if scope == selfOnBoard {
			arg = onBoard
			keys = append(keys, s.key(&c.b, "q:"+strconv.FormatInt(sl.a, 10)), s.key(&c.b, "q:"+strconv.FormatInt(sl.b, 10)))
		}
		args := make([]any, 0, 8+len(members))
		args = append(args, c.ver, nowArg, sl.start, sl.bound, sl.end, string(c.b.Tiebreak), around, arg)
		for _, m := range members {
			args = append(args, m)
		}
		return keys, args, nil
	})
	if err != nil {
		return groupRead{}, err
	}
	n := len(members)
	head := 3 + n
	if scope != inGroup {
		head += n
	}
	a, _ := v.([]any)
	if len(a) < head {
		return groupRead{}, fmt.Errorf("redisstore: %s %s: unexpected reply %v", op, board, v)
	}
	out := groupRead{c: c, groups: make([]string, n)}
	for i := range n {
		out.groups[i], _ = a[3+i].(string)
	}
	if scope != inGroup {
		out.groupRanks = make([]int64, n)
		for i := range n {
			out.groupRanks[i] = num(a[3+n+i])
		}
	}
	rest := append(append(make([]any, 0, len(a)-head+3), a[:3]...), a[head:]...)
	if out.r, err = parseRanks(rest, members, around, c.b); err != nil {
		return groupRead{}, fmt.Errorf("redisstore: %s %s: %w", op, board, err)
	}
	out.r.Board, out.r.Period, out.r.Decimals = board, sl.pick(out.r.Period), c.b.Decimals()
	return out, nil
}
