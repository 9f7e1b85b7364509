package redisstore

// Score integrity (docs/protocol.md §16, R35): apply.lua's block
// apply_hold.lua claims events for a board's hook, keeps verdicts with the
// idempotency records and holds members; hold.lua records a reject, lists
// and clears held members; ranks.lua reads a held member as it sees
// itself.

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

// holdSpec is the apply config's tokens of b's hook and flags
// (apply_hold.lua's header), "" for a board without either.
func holdSpec(b rank.Board) string {
	if !b.Holds() {
		return ""
	}
	var s strings.Builder
	s.WriteString(" hold")
	if b.Validated() {
		fmt.Fprintf(&s, " hook=%d claim=%d", b.Hook.Top, b.ClaimFor().Milliseconds())
	}
	if b.Flags.Jump > 0 {
		fmt.Fprintf(&s, " jump=%d", b.Flags.Jump)
	}
	if g := b.Flags.Gain; !g.IsZero() {
		fmt.Fprintf(&s, " gain=%d/%d", g.Points, time.Duration(g.Per).Milliseconds())
	}
	return s.String()
}

// verdictArg is event e's verdict as apply_hold.lua reads it.
func verdictArg(e *rank.Event) string {
	claim := e.Claim
	if claim == "" {
		claim = "-"
	}
	switch e.Verdict {
	case rank.VerdictAccept:
		return "a " + claim
	case rank.VerdictFlag:
		return "f " + claim + " " + e.Reason
	}
	return ""
}

// holdResult decodes the refusals apply_hold.lua answers with (after the
// "!"), false for another code.
func holdResult(code string) (error, bool) {
	kind, rest, _ := strings.Cut(code, ":")
	switch kind {
	case "pending":
		ms, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			return nil, false
		}
		return &rank.PendingError{Retry: time.Duration(ms) * time.Millisecond}, true
	case "rejected":
		return &rank.RejectedError{Reason: rest}, true
	case "validate":
		f := strings.Split(rest, ":")
		if len(f) != 5 {
			return nil, false
		}
		var n [3]int64
		for i := range n {
			x, err := strconv.ParseInt(f[2+i], 10, 64)
			if err != nil {
				return nil, false
			}
			n[i] = x
		}
		period, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, false
		}
		return &rank.ValidateError{Token: f[0], Period: period, Found: n[0] == 1, Score: n[1], Rank: n[2]}, true
	}
	return nil, false
}

// holdKeys are hold.lua's keys for period idx of board c.
func (s *Store) holdKeys(c cachedBoard, idx int64) []string {
	b := &c.b
	i := strconv.FormatInt(idx, 10)
	return []string{c.keys.cfg, c.keys.seq, c.keys.ban, s.zkey(b, idx), s.mkey(b, idx), s.xkey(b, idx),
		s.key(b, "q:"+i), s.key(b, "hd:"+i), s.key(b, "g")}
}

// hold runs hold.lua's op on period sel of board (the current one for
// ""), again after a stale config; args follow op.
func (s *Store) hold(ctx context.Context, name, board string, sel rank.PeriodSel, op string, args ...any) (any, cachedBoard, error) {
	if !rank.ValidBoardID(board) {
		return nil, cachedBoard{}, fmt.Errorf("redisstore: %s %q: %w", name, board, rank.ErrInvalidBoard)
	}
	if s.closed.Load() {
		return nil, cachedBoard{}, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		c, err := s.board(ctx, board)
		if err != nil {
			return nil, cachedBoard{}, s.fail(name, board, err)
		}
		now := s.clock.now(ctx, s.client)
		idx, err := sel.Resolve(c.b, now)
		if err != nil {
			return nil, cachedBoard{}, fmt.Errorf("redisstore: %s %s: %w", name, board, err)
		}
		v, err := s.holdScript.run(ctx, s.client, s.holdKeys(c, idx), append([]any{c.ver, s.nowArg(), op}, args...)...)
		if err != nil {
			if s.retryable(ctx, board, err, attempt) {
				continue
			}
			return nil, cachedBoard{}, s.fail(name, board, err)
		}
		return v, c, nil
	}
}

// Reject implements rank.Integrity.
func (s *Store) Reject(ctx context.Context, e rank.Event, token, reason string) (bool, error) {
	if !rank.ValidMemberID(e.Member) {
		return false, fmt.Errorf("redisstore: reject %s: %w", e.Board, rank.ErrInvalidMember)
	}
	hash := strconv.FormatUint(e.PayloadHash(), 36)
	v, _, err := s.hold(ctx, "reject", e.Board, "", "reject", e.Member, token, reason, hash, "", "", e.ID)
	if err != nil {
		return false, err
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// Held implements rank.Integrity.
func (s *Store) Held(ctx context.Context, board string, period rank.PeriodSel) ([]rank.Held, error) {
	v, c, err := s.hold(ctx, "held", board, period, "list")
	if err != nil {
		return nil, err
	}
	a, _ := v.([]any)
	if len(a)%3 != 0 {
		return nil, fmt.Errorf("redisstore: held %s: unexpected reply %v", board, v)
	}
	out := make([]rank.Held, 0, len(a)/3)
	for i := 0; i < len(a); i += 3 {
		member, _ := a[i].(string)
		rec, _ := a[i+1].(string)
		sc, _ := a[i+2].(string)
		f := strings.SplitN(rec, "\t", 3)
		at, err1 := strconv.ParseInt(f[0], 10, 64)
		score, err2 := strconv.ParseInt(sc, 10, 64)
		if len(f) != 3 || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("redisstore: held %s: bad record %q (score %q)", board, rec, sc)
		}
		if c.b.Order == rank.Asc {
			score = -score
		}
		out = append(out, rank.Held{Member: member, Reason: f[1], At: time.UnixMilli(at).UTC(), Score: score, Events: strings.Fields(f[2])})
	}
	slices.SortFunc(out, func(x, y rank.Held) int { return strings.Compare(x.Member, y.Member) })
	return out, nil
}

// ClearHold implements rank.Integrity.
func (s *Store) ClearHold(ctx context.Context, board, member string, period rank.PeriodSel) error {
	if !rank.ValidMemberID(member) {
		return fmt.Errorf("redisstore: clear hold %s: %w", board, rank.ErrInvalidMember)
	}
	v, _, err := s.hold(ctx, "clear hold", board, period, "clear", member)
	if err != nil {
		return err
	}
	if n, _ := v.(int64); n != 1 {
		return fmt.Errorf("redisstore: clear hold %s %s: %w", board, member, rank.ErrNotHeld)
	}
	return nil
}

// SelfRanks implements rank.Integrity: ranks.lua (groupranks.lua on a
// region board), told the period's held entries, reads each held member
// listed as it sees itself.
func (s *Store) SelfRanks(ctx context.Context, board string, period rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	if !rank.ValidBoardID(board) {
		return rank.Ranks{}, fmt.Errorf("redisstore: self ranks %q: %w", board, rank.ErrInvalidBoard)
	}
	c, err := s.board(ctx, board)
	if err != nil || !c.b.Holds() || around == rank.BoardRanks {
		return s.Ranks(ctx, board, period, members, around)
	}
	if around < 0 {
		return rank.Ranks{}, fmt.Errorf("redisstore: self ranks %s: %w: around must not be negative", board, rank.ErrBadRequest)
	}
	extra := make([]any, 0, 1+len(members))
	extra = append(extra, around)
	for _, m := range members {
		if !rank.ValidMemberID(m) {
			return rank.Ranks{}, fmt.Errorf("redisstore: self ranks %s: %w", board, rank.ErrInvalidMember)
		}
		extra = append(extra, m)
	}
	if c.b.Regions { // fixed at creation
		return s.regionBoardRanks(ctx, board, period, members, around, selfOnBoard) // with its region rank (region.go)
	}
	c, sl, v, err := s.readWith(ctx, "self ranks", board, period, s.ranks, func(c cachedBoard, sl slots, nowArg string) ([]string, []any, error) {
		b := &c.b
		keys := []string{c.keys.cfg, c.keys.seq, c.keys.n, s.zkey(b, sl.a), s.mkey(b, sl.a), s.zkey(b, sl.b), s.mkey(b, sl.b), c.keys.ban,
			s.metaKey(b, sl.a), s.metaKey(b, sl.b),
			s.key(b, "q:"+strconv.FormatInt(sl.a, 10)), s.key(b, "q:"+strconv.FormatInt(sl.b, 10))}
		return keys, append([]any{c.ver, nowArg, sl.start, sl.bound, sl.end, string(b.Tiebreak)}, extra...), nil
	})
	if err != nil {
		return rank.Ranks{}, err
	}
	r, err := parseRanks(v, members, around, c.b)
	if err != nil {
		return rank.Ranks{}, fmt.Errorf("redisstore: self ranks %s: %w", board, err)
	}
	r.Board, r.Period, r.Decimals = board, sl.pick(r.Period), c.b.Decimals()
	return r, nil
}
