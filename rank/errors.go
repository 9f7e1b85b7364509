package rank

import "fmt"

// Error is a rank failure that maps to one of the wire contract's error codes.
// Sentinels below are compared with errors.Is; a wrapped sentinel keeps its code,
// so callers add detail with fmt.Errorf("%w: field order: ...", ErrInvalidConfig).
type Error struct {
	code string
	msg  string
}

func (e *Error) Error() string { return e.msg }

// Code is the contract's error code (docs/protocol.md §4), e.g. "unknown_board".
func (e *Error) Code() string { return e.code }

// The documented failures of a Store. Anything else returned by a Store is an
// internal error.
var (
	ErrUnknownBoard        = &Error{"unknown_board", "unknown board"}
	ErrInvalidBoard        = &Error{"invalid_board", "invalid board id"}
	ErrInvalidMember       = &Error{"invalid_member", "invalid member id"}
	ErrInvalidScore        = &Error{"invalid_score", "invalid score"}
	ErrOutOfRange          = &Error{"out_of_range", "score would leave the range ±(2^53-1)"}
	ErrDeltaTooLarge       = &Error{"delta_too_large", "delta or value above the board's max_delta"}
	ErrIdempotencyConflict = &Error{"idempotency_conflict", "request id already used with a different payload"}
	ErrBoardClosed         = &Error{"board_closed", "board is closed"}
	// ErrLimitReached is a write past a limit: a member's max_submissions
	// in a period (R18), or the boards --dev creates on first use.
	ErrLimitReached = &Error{"limit_reached", "limit reached"}
	// ErrBadRequest covers an event whose shape does not fit the board:
	// a delta on a best/set board, a value on an incr board, a bad period.
	ErrBadRequest = &Error{"bad_request", "bad request"}
	// ErrInvalidConfig is a board config that fails validation; the wrapping
	// message names the field.
	ErrInvalidConfig = &Error{"bad_request", "invalid board config"}
	// ErrReadOnly is a write to a derived board (R22): its scores come
	// from its sources.
	ErrReadOnly = &Error{"read_only", "board is read-only: its scores derive from its sources"}
	// ErrUnavailable means the backing store did not answer; retrying later helps.
	ErrUnavailable = &Error{"unavailable", "rank store unavailable"}
)

// ErrAtAhead is an event whose `at` is more than MaxAhead ahead of the
// store's clock: a bad request.
var ErrAtAhead = fmt.Errorf("%w: at is more than 5 s ahead of the store's clock", ErrBadRequest)

// Why an event was refused with board_closed (R30).
const (
	ClosedNotStarted    = "not_started"    // before starts_at
	ClosedEnded         = "ended"          // after ends_at (or past its grace)
	ClosedPeriodOver    = "period_over"    // the event's period is past its grace
	ClosedOutsideWindow = "outside_window" // a hot board's bucket that has left the window
)

// Closed is why an event was refused with board_closed and the times that
// explain it (R30), as the wire shows it: times are unix ms, zero (and left
// out) when they do not apply to the reason.
type Closed struct {
	Reason   string `json:"reason,omitempty"`    // one of the Closed* constants
	StartsAt int64  `json:"starts_at,omitempty"` // not_started: when the board opens
	FinalAt  int64  `json:"final_at,omitempty"`  // ended: ends_at + grace
	Period   int64  `json:"period,omitempty"`    // period_over: the event's period
	GraceEnd int64  `json:"grace_end,omitempty"` // period_over: when that period's grace ended
}

// ClosedError is ErrBoardClosed with its Closed; errors.Is(err,
// ErrBoardClosed) holds.
type ClosedError Closed

func (e *ClosedError) Error() string {
	switch e.Reason {
	case ClosedNotStarted:
		return "board is closed: not started yet"
	case ClosedEnded:
		return "board is closed: it has ended"
	case ClosedPeriodOver:
		return fmt.Sprintf("board is closed: period %d is past its grace", e.Period)
	case ClosedOutsideWindow:
		return "board is closed: the event's bucket has left the hot window"
	}
	return ErrBoardClosed.msg
}

// Unwrap makes a ClosedError an ErrBoardClosed for errors.Is.
func (e *ClosedError) Unwrap() error { return ErrBoardClosed }

// Code is board_closed.
func (e *ClosedError) Code() string { return ErrBoardClosed.code }
