package redisstore

import (
	"context"
	"fmt"

	"github.com/wsgateway/wsgateway/rank"
)

// Score integrity (docs/protocol.md §16) needs apply.lua to claim events,
// keep verdicts and hold members; until it does, this engine refuses a
// board that asks for it rather than apply its events unchecked, and so
// has no claims and no held members to answer for.

var _ rank.Integrity = (*Store)(nil)

func checkIntegrity(b rank.Board) error {
	if b.Holds() {
		return fmt.Errorf("%w: fields validate and flags: not on the Redis engine yet", rank.ErrInvalidConfig)
	}
	return nil
}

// Reject implements rank.Integrity: no event is ever claimed here.
func (s *Store) Reject(ctx context.Context, e rank.Event, token, reason string) (bool, error) {
	return false, nil
}

// Held implements rank.Integrity: nobody is held here.
func (s *Store) Held(ctx context.Context, board string, period rank.PeriodSel) ([]rank.Held, error) {
	if _, err := s.Board(ctx, board); err != nil {
		return nil, err
	}
	return []rank.Held{}, nil
}

// ClearHold implements rank.Integrity: nobody is held here.
func (s *Store) ClearHold(ctx context.Context, board, member string, period rank.PeriodSel) error {
	if _, err := s.Board(ctx, board); err != nil {
		return err
	}
	return rank.ErrNotHeld
}

// SelfRanks implements rank.Integrity: nobody is held, so everyone sees
// what Ranks reads.
func (s *Store) SelfRanks(ctx context.Context, board string, period rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	return s.Ranks(ctx, board, period, members, around)
}
