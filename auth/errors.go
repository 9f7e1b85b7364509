package auth

// Error is a verification failure that maps to one of the wire contract's
// error codes (docs/protocol.md §4). Compare with errors.Is against the sentinels;
// Verify wraps them with a reason, never with the token itself.
type Error struct {
	code string
	msg  string
}

func (e *Error) Error() string { return e.msg }

// Code is the contract's error code: "unauthorized" or "token_expired".
func (e *Error) Code() string { return e.code }

var (
	// ErrUnauthorized covers a missing, malformed, badly signed, wrongly
	// signed (algorithm not pinned), not-yet-valid token or one whose claims
	// break §3. The HTTP answer is 401 (R1).
	ErrUnauthorized = &Error{"unauthorized", "unauthorized"}
	// ErrTokenExpired is a token that is otherwise valid but whose exp has
	// passed by more than the leeway. On a live connection it closes with
	// 4001 (R1).
	ErrTokenExpired = &Error{"token_expired", "token expired"}
)
