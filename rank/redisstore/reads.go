package redisstore

// Reads: Top, Count and Ranks of unsharded boards (shard_read.go for
// sharded ones), each one script over the period's keys.

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/rank"
)

// Top reads entries [offset, offset+limit) of a period (see top.lua).
func (s *Store) Top(ctx context.Context, board string, period rank.PeriodSel, offset, limit int) (rank.Page, error) {
	return s.page(ctx, "top", board, period, offset, limit)
}

// Count is the number of members in the current period.
func (s *Store) Count(ctx context.Context, board string) (int64, error) {
	p, err := s.page(ctx, "count", board, "", 0, 0)
	return p.Total, err
}

func (s *Store) page(ctx context.Context, op, board string, period rank.PeriodSel, offset, limit int) (rank.Page, error) {
	if !rank.ValidBoardID(board) {
		return rank.Page{}, fmt.Errorf("redisstore: %s %q: %w", op, board, rank.ErrInvalidBoard)
	}
	if offset < 0 || limit < 0 {
		return rank.Page{}, fmt.Errorf("redisstore: %s %s: %w: offset and limit must not be negative", op, board, rank.ErrBadRequest)
	}
	if s.sharded(ctx, board) {
		return s.shardPage(ctx, op, board, period, offset, limit)
	}
	c, sl, v, err := s.read(ctx, op, board, period, s.top, false, offset, limit)
	if err != nil {
		return rank.Page{}, err
	}
	a, _ := v.([]any)
	if len(a) < 4 || (len(a)-4)%4 != 0 {
		return rank.Page{}, fmt.Errorf("redisstore: %s %s: unexpected reply %v", op, board, v)
	}
	p := rank.Page{Board: board, Period: sl.pick(num(a[0])), Offset: offset, Total: num(a[1]), Seq: num(a[2]), Decimals: c.b.Decimals()}
	p.Entries, err = entries(a[4:], int64(offset), num(a[3]), c.b)
	if err != nil {
		return rank.Page{}, fmt.Errorf("redisstore: %s %s: %w", op, board, err)
	}
	return p, nil
}

// Ranks reads several members with their neighbours in one snapshot (see
// ranks.lua).
func (s *Store) Ranks(ctx context.Context, board string, period rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	if !rank.ValidBoardID(board) {
		return rank.Ranks{}, fmt.Errorf("redisstore: ranks %q: %w", board, rank.ErrInvalidBoard)
	}
	whole := around == rank.BoardRanks
	if whole {
		around = 0
	}
	if around < 0 {
		return rank.Ranks{}, fmt.Errorf("redisstore: ranks %s: %w: around must not be negative", board, rank.ErrBadRequest)
	}
	for _, m := range members {
		if !rank.ValidMemberID(m) {
			return rank.Ranks{}, fmt.Errorf("redisstore: ranks %s: %w", board, rank.ErrInvalidMember)
		}
	}
	if s.sharded(ctx, board) {
		return s.shardRanks(ctx, board, period, members, around)
	}
	if !whole && s.cohorted(ctx, board) {
		return s.cohortRanks(ctx, board, period, members, around) // within cohorts (cohort.go)
	}
	if !whole && s.regioned(ctx, board) {
		return s.regionBoardRanks(ctx, board, period, members, around, onBoard) // region.go
	}
	extra := make([]any, 0, 1+len(members))
	extra = append(extra, around)
	for _, m := range members {
		extra = append(extra, m)
	}
	c, sl, v, err := s.read(ctx, "ranks", board, period, s.ranks, true, extra...)
	if err != nil {
		return rank.Ranks{}, err
	}
	r, err := parseRanks(v, members, around, c.b)
	if err != nil {
		return rank.Ranks{}, fmt.Errorf("redisstore: ranks %s: %w", board, err)
	}
	r.Board, r.Period, r.Decimals = board, sl.pick(r.Period), c.b.Decimals()
	return r, nil
}

// read runs a read script (top.lua, ranks.lua) on the period slots of sel
// (readWith). Its keys are the board's cfg, seq and names, then each slot's
// sorted set (and member hash when withMembers); its arguments the config
// version, clock, slot bounds and tiebreak, then extra.
func (s *Store) read(ctx context.Context, op, board string, sel rank.PeriodSel, sc *script, withMembers bool, extra ...any) (cachedBoard, slots, any, error) {
	return s.readWith(ctx, op, board, sel, sc, func(c cachedBoard, sl slots, nowArg string) ([]string, []any, error) {
		var keys []string
		if withMembers {
			keys = []string{c.keys.cfg, c.keys.seq, c.keys.n,
				s.zkey(&c.b, sl.a), s.mkey(&c.b, sl.a), s.zkey(&c.b, sl.b), s.mkey(&c.b, sl.b), c.keys.ban}
		} else {
			keys = []string{c.keys.cfg, c.keys.seq, c.keys.n, s.zkey(&c.b, sl.a), s.zkey(&c.b, sl.b), c.keys.ban}
		}
		keys = append(keys, s.metaKey(&c.b, sl.a), s.metaKey(&c.b, sl.b))
		return keys, append([]any{c.ver, nowArg, sl.start, sl.bound, sl.end, string(c.b.Tiebreak)}, extra...), nil
	})
}

// readWith runs a read script on board, again after a stale config, clock
// or expired ban: build gives its keys and arguments for the config and
// the slots of sel (a hot board's current view's), nil keys for nothing to
// read. Errors are wrapped.
func (s *Store) readWith(ctx context.Context, op, board string, sel rank.PeriodSel, sc *script,
	build func(c cachedBoard, sl slots, nowArg string) ([]string, []any, error)) (cachedBoard, slots, any, error) {
	if s.closed.Load() {
		return cachedBoard{}, slots{}, nil, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		c, err := s.board(ctx, board)
		if err != nil {
			return cachedBoard{}, slots{}, nil, s.fail(op, board, err)
		}
		now, nowArg := s.now(ctx, c.b)
		sl, err := slotsFor(c.b, sel, now)
		if err != nil {
			return cachedBoard{}, slots{}, nil, fmt.Errorf("redisstore: %s %s: %w", op, board, err)
		}
		if c.b.Hot() {
			now, nowArg = s.hotNow(ctx)
			if sl, err = s.hotSlots(ctx, c, now); err != nil {
				return cachedBoard{}, slots{}, nil, s.fail(op, board, err)
			}
		}
		keys, args, err := build(c, sl, nowArg)
		if err != nil {
			return cachedBoard{}, slots{}, nil, fmt.Errorf("redisstore: %s %s: %w", op, board, err)
		}
		if keys == nil {
			return c, sl, nil, nil // nothing to read
		}
		v, err := sc.run(ctx, s.client, keys, args...)
		if err != nil {
			if s.retryable(ctx, board, err, attempt) {
				continue
			}
			return cachedBoard{}, slots{}, nil, s.fail(op, board, err)
		}
		return c, sl, v, nil
	}
}

// parseRanks decodes ranks.lua's reply to a call with around; Period holds
// the slot number.
func parseRanks(v any, members []string, around int, b rank.Board) (rank.Ranks, error) {
	a, _ := v.([]any)
	bad := fmt.Errorf("unexpected reply %v", v)
	if len(a) < 3 {
		return rank.Ranks{}, bad
	}
	r := rank.Ranks{Period: num(a[0]), Total: num(a[1]), Seq: num(a[2]), Members: make([]rank.MemberRank, len(members))}
	a = a[3:]
	for i, m := range members {
		mr := rank.MemberRank{Member: m}
		if around == 0 {
			// The rank, then the member's own entry when it has one.
			if len(a) < 1 {
				return rank.Ranks{}, bad
			}
			rk := num(a[0])
			if rk == 0 {
				a = a[1:]
				r.Members[i] = mr
				continue
			}
			if len(a) < 4 {
				return rank.Ranks{}, bad
			}
			e, err := entry(m, a[1], a[2], a[3], rk, b)
			if err != nil {
				return rank.Ranks{}, err
			}
			a = a[4:]
			mr.Found, mr.Rank, mr.Score, mr.Name, mr.Around = true, rk, e.Score, e.Name, []rank.Entry{e}
			r.Members[i] = mr
			continue
		}
		if len(a) < 5 {
			return rank.Ranks{}, bad
		}
		found, rk, start, first, n := num(a[0]), num(a[1]), num(a[2]), num(a[3]), int(num(a[4]))
		a = a[5:]
		if found == 1 {
			if n < 0 || len(a) < 4*n {
				return rank.Ranks{}, bad
			}
			es, err := entries(a[:4*n], start, first, b)
			if err != nil {
				return rank.Ranks{}, err
			}
			a = a[4*n:]
			mr.Found, mr.Rank, mr.Around = true, rk, es
			for _, e := range es {
				if e.Member == m {
					mr.Score, mr.Name = e.Score, e.Name
				}
			}
		}
		r.Members[i] = mr
	}
	return r, nil
}

// entries decodes id, stored score, name, meta quadruples listed from 0-based
// position start, the first of which has rank first.
func entries(a []any, start, first int64, b rank.Board) ([]rank.Entry, error) {
	if len(a) == 0 {
		return []rank.Entry{}, nil
	}
	out := make([]rank.Entry, 0, len(a)/4)
	for i := 0; i+3 < len(a); i += 4 {
		k := int64(len(out))
		id, _ := a[i].(string)
		e, err := entry(id, a[i+1], a[i+2], a[i+3], first+k, b)
		if err != nil {
			return nil, err
		}
		if b.Tiebreak == rank.Shared && k > 0 {
			// Equal scores share the rank; a new score's rank is its position.
			if prev := out[k-1]; prev.Score == e.Score {
				e.Rank = prev.Rank
			} else {
				e.Rank = start + k + 1
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// entry decodes one id, stored score, name, meta quadruple at rank rk.
func entry(id string, raw, name, mt any, rk int64, b rank.Board) (rank.Entry, error) {
	raws, _ := raw.(string)
	names, _ := name.(string)
	mts, _ := mt.(string)
	sc, err := parseScore(raws)
	if err != nil {
		return rank.Entry{}, err
	}
	if b.Order == rank.Asc {
		sc = -sc
	}
	return rank.Entry{Rank: rk, Member: id, Score: sc, Name: names, Meta: meta.Meta(mts)}, nil
}

// parseScore reads a sorted-set score reply. Scores are integers within
// ±(2^53-1), exact in a double; the float path covers a server that
// formats them with an exponent.
func parseScore(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != float64(int64(f)) {
		return 0, errors.Join(fmt.Errorf("bad score %q", s), err)
	}
	return int64(f), nil
}

func num(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}
