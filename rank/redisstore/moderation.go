package redisstore

// Bans and removal (docs/protocol.md §7, R21): every change runs ban.lua on the
// board's slot; apply.lua reads the same ban hash in its atomic step.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

var _ rank.Moderation = (*Store)(nil)

// globalField is a global ban's field in a board's ban hash.
func globalField(member string) string { return "g|" + member }

// nowArg is the clock argument of a moderation script: the injected clock,
// else "" (the script reads TIME).
func (s *Store) nowArg() string {
	if s.cfg.Now != nil {
		return strconv.FormatInt(s.cfg.Now().UnixMilli(), 10)
	}
	return ""
}

// moderate runs ban.lua's op on board over every period the board keeps
// (periods: rank.KeptPeriods at the store's clock), again after a stale
// config. For remove, pick chooses the period (its index; the reply is 0
// when the index is not kept). It returns the script's 0 or 1.
func (s *Store) moderate(ctx context.Context, name, op, board, member, field, value string, remove *rank.PeriodSel) (int64, error) {
	if !rank.ValidBoardID(board) {
		return 0, fmt.Errorf("redisstore: %s %q: %w", name, board, rank.ErrInvalidBoard)
	}
	if s.closed.Load() {
		return 0, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		c, err := s.board(ctx, board)
		if err != nil {
			return 0, s.fail(name, board, err)
		}
		now := s.clock.now(ctx, s.client)
		kept := keptPeriods(c.b, now) // a window's upcoming views too (derived.go)
		arg := value
		if remove != nil {
			idx, err := remove.Resolve(c.b, now)
			if err != nil {
				return 0, fmt.Errorf("redisstore: %s %s: %w", name, board, err)
			}
			k := slices.Index(kept, idx)
			if k < 0 {
				return 0, nil // past retain: nothing readable to remove
			}
			arg = strconv.Itoa(k)
		}
		// A sharded board's member lives on one shard; an expiry
		// sweeps every shard (shard.go).
		var total int64
		stale := false
		for _, t := range s.moderated(c, member) {
			keys := make([]string, 0, 4+3*len(kept))
			keys = append(keys, t.keys.cfg, t.keys.seq, t.keys.n, t.keys.ban)
			for _, idx := range kept {
				keys = append(keys, s.zkey(&t.b, idx), s.mkey(&t.b, idx), s.xkey(&t.b, idx))
			}
			v, err := s.ban.run(ctx, s.client, keys, c.ver, s.nowArg(), 0, 0, 0, op, member, field, arg)
			if err != nil {
				if attempt < staleRetries && scriptError(err) == "stale" {
					s.forget(board)
					stale = true
					break
				}
				return 0, s.fail(name, board, err)
			}
			n, _ := v.(int64)
			total += n
		}
		if stale {
			continue
		}
		return total, nil
	}
}

// expireBans lifts the board's bans whose until has passed (a script
// answered "expired").
func (s *Store) expireBans(ctx context.Context, board string) error {
	_, err := s.moderate(ctx, "expire bans", "expire", board, "", "", "", nil)
	return err
}

// checked validates member and ban against the store's clock and stamps At.
func (s *Store) checked(ctx context.Context, op string, b rank.Ban) (rank.Ban, error) {
	if s.closed.Load() {
		return rank.Ban{}, ErrClosed
	}
	now, err := s.Now(ctx)
	if err != nil {
		return rank.Ban{}, err
	}
	if err := rank.CheckBan(b, now); err != nil {
		return rank.Ban{}, fmt.Errorf("redisstore: %s: %w", op, err)
	}
	b.At = now.Truncate(time.Millisecond).UTC()
	return b, nil
}

// BanMember implements rank.Moderation.
func (s *Store) BanMember(ctx context.Context, board string, b rank.Ban) (rank.Ban, error) {
	b, err := s.checked(ctx, "ban "+board, b)
	if err != nil {
		return rank.Ban{}, err
	}
	if _, err := s.moderate(ctx, "ban", "ban", board, b.Member, b.Member, rank.EncodeBan(b), nil); err != nil {
		return rank.Ban{}, err
	}
	return b, nil
}

// LiftBan implements rank.Moderation.
func (s *Store) LiftBan(ctx context.Context, board, member string) error {
	if !rank.ValidMemberID(member) {
		return fmt.Errorf("redisstore: lift ban %s: %w", board, rank.ErrInvalidMember)
	}
	n, err := s.moderate(ctx, "lift ban", "lift", board, member, member, "", nil)
	if err == nil && n == 0 {
		err = fmt.Errorf("redisstore: lift ban %s %s: %w", board, member, rank.ErrNoBan)
	}
	return err
}

// RemoveMember implements rank.Moderation.
func (s *Store) RemoveMember(ctx context.Context, board, member string, period rank.PeriodSel) error {
	if !rank.ValidMemberID(member) {
		return fmt.Errorf("redisstore: remove member %s: %w", board, rank.ErrInvalidMember)
	}
	if err := s.checkNoDeps(ctx, "remove member", board); err != nil {
		return err
	}
	n, err := s.moderate(ctx, "remove member", "remove", board, member, "", "", &period)
	if err == nil && n == 1 {
		// A hot board's member also leaves its sums and next view.
		if err = s.hotRemove(ctx, board, member); err != nil {
			err = s.fail("remove member", board, err)
		}
	}
	if err == nil && n == 0 {
		err = fmt.Errorf("redisstore: remove member %s %s: %w", board, member, rank.ErrNoEntry)
	}
	return err
}

// Bans implements rank.Moderation: the board's own live bans.
func (s *Store) Bans(ctx context.Context, board string) ([]rank.Ban, error) {
	if !rank.ValidBoardID(board) {
		return nil, fmt.Errorf("redisstore: bans %q: %w", board, rank.ErrInvalidBoard)
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if _, err := s.board(ctx, board); err != nil {
		return nil, s.fail("bans", board, err)
	}
	all, err := s.banHashes(ctx, board)
	if err != nil {
		return nil, s.fail("bans", board, err)
	}
	return s.liveBans(ctx, "bans "+board, all, func(f string) bool { return !strings.Contains(f, "|") })
}

// liveBans decodes the records of fields keep accepts, drops those past
// their until, and sorts them by member.
func (s *Store) liveBans(ctx context.Context, op string, all map[string]string, keep func(string) bool) ([]rank.Ban, error) {
	now, err := s.Now(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]rank.Ban, 0, len(all))
	for f, v := range all {
		if !keep(f) {
			continue
		}
		b, err := rank.DecodeBan(f, v)
		if err != nil {
			return nil, fmt.Errorf("redisstore: %s: %w", op, err)
		}
		if b.Live(now) {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(x, y rank.Ban) int { return strings.Compare(x.Member, y.Member) })
	return out, nil
}

// PutGlobalBan implements rank.Moderation. The record is written before
// the board list is read and PutBoard reads records after it lists a new
// board, so a board created meanwhile gets the ban either way.
func (s *Store) PutGlobalBan(ctx context.Context, b rank.Ban) (rank.Ban, error) {
	b, err := s.checked(ctx, "global ban", b)
	if err != nil {
		return rank.Ban{}, err
	}
	rec := rank.EncodeBan(b)
	if err := s.client.HSet(ctx, s.gbansKey(), b.Member, rec).Err(); err != nil {
		return rank.Ban{}, s.fail("global ban", "", err)
	}
	err = s.eachBoard(ctx, "global ban", func(board string) error {
		_, err := s.moderate(ctx, "global ban", "ban", board, b.Member, globalField(b.Member), rec, nil)
		return err
	})
	return b, err
}

// LiftGlobalBan implements rank.Moderation.
func (s *Store) LiftGlobalBan(ctx context.Context, member string) error {
	if !rank.ValidMemberID(member) {
		return fmt.Errorf("redisstore: lift global ban: %w", rank.ErrInvalidMember)
	}
	if s.closed.Load() {
		return ErrClosed
	}
	rec, err := s.client.HGet(ctx, s.gbansKey(), member).Result()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("redisstore: lift global ban %s: %w", member, rank.ErrNoBan)
	}
	if err != nil {
		return s.fail("lift global ban", "", err)
	}
	if err := s.client.HDel(ctx, s.gbansKey(), member).Err(); err != nil {
		return s.fail("lift global ban", "", err)
	}
	err = s.eachBoard(ctx, "lift global ban", func(board string) error {
		_, err := s.moderate(ctx, "lift global ban", "lift", board, member, globalField(member), "", nil)
		return err
	})
	if err != nil {
		return err
	}
	if b, derr := rank.DecodeBan(member, rec); derr == nil {
		if now, nerr := s.Now(ctx); nerr == nil && !b.Live(now) {
			return fmt.Errorf("redisstore: lift global ban %s: %w", member, rank.ErrNoBan)
		}
	}
	return nil
}

// GlobalBans implements rank.Moderation.
func (s *Store) GlobalBans(ctx context.Context) ([]rank.Ban, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	all, err := s.client.HGetAll(ctx, s.gbansKey()).Result()
	if err != nil {
		return nil, s.fail("global bans", "", err)
	}
	return s.liveBans(ctx, "global bans", all, func(string) bool { return true })
}

// eachBoard runs f on every listed board; a board deleted meanwhile is
// skipped.
func (s *Store) eachBoard(ctx context.Context, op string, f func(board string) error) error {
	ids, err := s.client.SMembers(ctx, s.boardsKey()).Result()
	if err != nil {
		return s.fail(op, "", err)
	}
	for _, id := range ids {
		if err := f(id); err != nil && !errors.Is(err, rank.ErrUnknownBoard) {
			return err
		}
	}
	return nil
}

// inheritGlobalBans writes every live global ban to a board just created.
func (s *Store) inheritGlobalBans(ctx context.Context, board string) error {
	all, err := s.client.HGetAll(ctx, s.gbansKey()).Result()
	if err != nil {
		return s.fail("put board", board, err)
	}
	bans, err := s.liveBans(ctx, "put board "+board, all, func(string) bool { return true })
	if err != nil {
		return err
	}
	for _, b := range bans {
		if _, err := s.moderate(ctx, "put board", "ban", board, b.Member, globalField(b.Member), all[b.Member], nil); err != nil {
			return err
		}
	}
	return nil
}
