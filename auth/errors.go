package auth

import "fmt"

// Error is a verification failure that maps to one of the wire contract's
// error codes (docs/protocol.md §4). Compare with errors.Is against the
// sentinels; Verify wraps them with a reason, never with the token itself.
// Its text is what a client reads (R30: a 401 names the fault); the reason
// after it is for the log.
type Error struct {
	code  string
	msg   string
	fault *Error // the sentinel this one details (invalidClaims), or nil
}

func (e *Error) Error() string { return e.msg }

// Code is the contract's error code: "unauthorized" or "token_expired".
func (e *Error) Code() string { return e.code }

// Is makes every fault below an ErrUnauthorized, so that callers that only
// care whether a token was refused need not list them.
func (e *Error) Is(target error) bool {
	return target == ErrUnauthorized && e.code == ErrUnauthorized.code ||
		e.fault != nil && target == e.fault
}

// invalidClaims is ErrInvalidClaims saying which claim: the token is
// signed by then, so the detail is the operator's own and safe to show.
func invalidClaims(format string, args ...any) *Error {
	return &Error{ErrInvalidClaims.code, ErrInvalidClaims.msg + ": " + fmt.Sprintf(format, args...), ErrInvalidClaims}
}

var (
	// ErrUnauthorized is any refused token but an expired one: each fault
	// below is one (errors.Is). The HTTP answer is 401 (R1).
	ErrUnauthorized = &Error{code: "unauthorized", msg: "unauthorized"}
	// ErrTokenExpired is a token that is otherwise valid but whose exp has
	// passed by more than the leeway. On a live connection it closes with
	// 4001 (R1).
	ErrTokenExpired = &Error{code: "token_expired", msg: "token expired"}
)

// The faults of an unauthorized token (R30), worded for the client.
var (
	// ErrMissingToken: the request carries no token.
	ErrMissingToken = &Error{code: "unauthorized", msg: "missing token"}
	// ErrMalformed: not three base64url parts of JSON, a duplicate or
	// unknown field, a token over the size bound.
	ErrMalformed = &Error{code: "unauthorized", msg: "malformed token"}
	// ErrBadSignature: the signature does not verify, or the algorithm is
	// not the pinned one ("none" included).
	ErrBadSignature = &Error{code: "unauthorized", msg: "bad signature"}
	// ErrNotYetValid: nbf or iat lies ahead of the clock by more than the
	// leeway.
	ErrNotYetValid = &Error{code: "unauthorized", msg: "token not valid yet"}
	// ErrIssuer: iss is not the configured --jwt-issuer.
	ErrIssuer = &Error{code: "unauthorized", msg: "wrong issuer"}
	// ErrAudience: aud does not hold the configured --jwt-audience.
	ErrAudience = &Error{code: "unauthorized", msg: "wrong audience"}
	// ErrUnknownKey: no key of the JWKS fits the token (no kid, a kid the
	// set does not hold, a key of another algorithm or use).
	ErrUnknownKey = &Error{code: "unauthorized", msg: "unknown signing key"}
	// ErrInvalidClaims: a signed token whose claims break §3 (no exp, a
	// bad sub, role or name).
	ErrInvalidClaims = &Error{code: "unauthorized", msg: "invalid claims"}
)
