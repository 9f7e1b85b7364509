package redisstore

// Errors: script codes and Redis failures mapped to the contract.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

// scriptError is the code of an "LB <code>" error reply, or "".
func scriptError(err error) string {
	var re redis.Error
	if errors.As(err, &re) {
		if code, ok := strings.CutPrefix(re.Error(), "LB "); ok {
			return code
		}
	}
	return ""
}

var scriptErrors = map[string]error{
	"unknown_board":   rank.ErrUnknownBoard,
	"bad_request":     rank.ErrBadRequest,
	"invalid_score":   rank.ErrInvalidScore,
	"out_of_range":    rank.ErrOutOfRange,
	"invalid_member":  rank.ErrInvalidMember,
	"delta_too_large": rank.ErrDeltaTooLarge,
	"board_closed":    rank.ErrBoardClosed,
	"limit_reached":   rank.ErrLimitReached,
	"at_ahead":        rank.ErrAtAhead,
	"banned":          rank.ErrBanned,
	// apply_hold.lua (§16): a claim, reject or verdict under another payload
	"idempotency_conflict": rank.ErrIdempotencyConflict,
}

// unavailablePrefixes are Redis error replies that mean "not now".
var unavailablePrefixes = []string{"LOADING", "BUSY", "TRYAGAIN", "MOVED ", "ASK ", "CLUSTERDOWN", "MASTERDOWN",
	"READONLY", "NOREPLICAS", "NOSCRIPT", "ERR max number of clients", "MISCONF"}

// fail wraps err once with the operation, mapping it to the contract:
// script codes to their sentinels, transport failures and timeouts to
// rank.ErrUnavailable, a cancelled caller to its context error.
func (s *Store) fail(op, board string, err error) error {
	where := "redisstore: " + op
	if board != "" {
		where += " " + board
	}
	if code := scriptError(err); code != "" {
		if sentinel, ok := scriptErrors[code]; ok {
			return fmt.Errorf("%s: %w", where, sentinel)
		}
		return fmt.Errorf("%s: script error %q", where, code)
	}
	var asRank *rank.Error
	switch {
	case errors.As(err, &asRank), errors.Is(err, ErrClosed):
		return fmt.Errorf("%s: %w", where, err)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", where, err)
	case errors.Is(err, redis.ErrClosed):
		return fmt.Errorf("%s: %w", where, ErrClosed)
	}
	var re redis.Error
	if errors.As(err, &re) {
		for _, p := range unavailablePrefixes {
			if strings.HasPrefix(re.Error(), p) {
				return fmt.Errorf("%s: %w: %v", where, rank.ErrUnavailable, err)
			}
		}
		return fmt.Errorf("%s: %w", where, err)
	}
	// Network errors, dial failures, pool and deadline timeouts.
	return fmt.Errorf("%s: %w: %v", where, rank.ErrUnavailable, err)
}

// retryable reports whether a script failed because the caller's view of
// the config or the clock was stale, after refreshing that view.
func (s *Store) retryable(ctx context.Context, board string, err error, attempt int) bool {
	if attempt >= staleRetries {
		return false
	}
	switch scriptError(err) {
	case "stale":
		s.forget(board)
		return true
	case "nospec":
		// A config stored by an earlier version (spec.go).
		return s.writeSpecs(ctx, board) == nil
	case "clock":
		s.clock.invalidate()
		return true
	case "expired":
		// A ban's until has passed: lift it (moderation.go), then again.
		return s.expireBans(ctx, board) == nil
	case "hot":
		// A hot board's bucket ended: its boundary's steps (hot.go), then again.
		return s.catchUp(ctx, board) == nil
	}
	return false
}
