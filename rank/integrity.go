package rank

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"
	"unicode"
	"unicode/utf8"
)

// Score integrity (docs/protocol.md §16, R35, R36): a board's validation
// hook, its flags, and the members they hold.

// Limits of the validate and flags configs.
const (
	MinValidateTimeout     = 10 * time.Millisecond
	MaxValidateTimeout     = 5 * time.Second
	DefaultValidateTimeout = 500 * time.Millisecond
	MaxValidateTop         = 10000
	// MaxVerdictReason bounds a hook's reason, in characters: a longer one
	// is cut to it.
	MaxVerdictReason = 200
	MinFlagPer       = time.Second
	MaxFlagPer       = 24 * time.Hour
	// MaxHeldEvents bounds the ids a held member's queue entry lists.
	MaxHeldEvents = 100
	// ClaimMargin is how long a claim outlives its hook's timeout: the
	// time a node has, after the call, to record the verdict before
	// another node may claim the event again (the claimer having died).
	ClaimMargin = time.Second
)

// What a hook's failure does (on_error).
const (
	OnErrorReject = "reject" // the event gets unavailable; a re-send may pass
	OnErrorAccept = "accept" // the event is applied
)

// Hold reasons the store gives itself (a hook's flag carries its own).
const (
	HoldGain = "gain"
	HoldJump = "jump"
)

// Hook is a board's validation hook, its config field validate (§16).
// The zero value is none.
type Hook struct {
	URL string `json:"url"`
	// Secret signs each call; it is never shown again once stored
	// (Board.WithoutSecrets).
	Secret  string   `json:"secret,omitempty"`
	Timeout Duration `json:"timeout"`
	OnError string   `json:"on_error"`
	// Top > 0 sends only the events after which the member's score would
	// reach the board's top Top; 0 sends every event.
	Top int `json:"top"`
}

// IsZero reports whether v is unset (the board has no hook).
func (v Hook) IsZero() bool { return v == Hook{} }

// UnmarshalJSON reads a validate object strictly, filling timeout and
// on_error with their defaults when absent.
func (v *Hook) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*v = Hook{}
		return nil
	}
	if _, err := strictKeys(b, func(k string) bool {
		return k == "url" || k == "secret" || k == "timeout" || k == "on_error" || k == "top"
	}); err != nil {
		return fmt.Errorf("field validate: %v (want url, secret, timeout, on_error and top)", err)
	}
	type plain Hook // no UnmarshalJSON: no recursion
	p := plain{Timeout: Duration(DefaultValidateTimeout), OnError: OnErrorReject}
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("field validate: %v", jsonErrorText(err))
	}
	*v = Hook(p)
	return nil
}

// validate checks v's fields; the message names the first bad one.
// Whether the URL's host is a public address is the gateway's check
// (package webhook's rule, with --webhook-allow-private).
func (v Hook) validate() error {
	if len(v.URL) > MaxURLBytes {
		return fmt.Errorf("url: longer than %d bytes", MaxURLBytes)
	}
	u, err := url.Parse(v.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Errorf("url: %q is not an http(s) URL with a host and no user info", v.URL)
	}
	if len(v.Secret) < MinSecretBytes || len(v.Secret) > MaxSecretBytes {
		return fmt.Errorf("secret: must be %d..%d bytes", MinSecretBytes, MaxSecretBytes)
	}
	if t := time.Duration(v.Timeout); t < MinValidateTimeout || t > MaxValidateTimeout {
		return fmt.Errorf("timeout: %s is not within %s..%s", t, MinValidateTimeout, MaxValidateTimeout)
	}
	if v.OnError != OnErrorReject && v.OnError != OnErrorAccept {
		return fmt.Errorf("on_error: %q is not reject or accept", v.OnError)
	}
	if v.Top < 0 || v.Top > MaxValidateTop {
		return fmt.Errorf("top: %d is not within 0..%d", v.Top, MaxValidateTop)
	}
	return nil
}

// Flags hold a member whose score rises too fast (§16): by more than
// Gain.Points within Gain.Per, or by more than Jump in one event. Rising
// is improving by the board's order (down on an asc board). Either part
// may be unset; the zero value is no flags.
type Flags struct {
	Gain Gain  `json:"gain,omitzero"`
	Jump int64 `json:"jump,omitzero"`
}

// Gain is the points a member may gain within Per.
type Gain struct {
	Points int64    `json:"points"`
	Per    Duration `json:"per"`
}

// IsZero reports whether f is unset.
func (f Flags) IsZero() bool { return f == Flags{} }

// UnmarshalJSON reads a flags object strictly.
func (f *Flags) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Flags{}
		return nil
	}
	if _, err := strictKeys(b, func(k string) bool { return k == "gain" || k == "jump" }); err != nil {
		return fmt.Errorf("field flags: %v (want gain and jump)", err)
	}
	type plain Flags // no UnmarshalJSON: no recursion
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("field flags: %v", jsonErrorText(err))
	}
	*f = Flags(p)
	return nil
}

// UnmarshalJSON reads a gain object strictly; both fields are required.
func (g *Gain) UnmarshalJSON(b []byte) error {
	keys, err := strictKeys(b, func(k string) bool { return k == "points" || k == "per" })
	if err != nil {
		return fmt.Errorf("gain: %v (want points and per)", err)
	}
	if !keys["points"] || !keys["per"] {
		return fmt.Errorf("gain: want both points and per")
	}
	type plain Gain // no UnmarshalJSON: no recursion
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("gain: %v", jsonErrorText(err))
	}
	*g = Gain(p)
	return nil
}

func (f Flags) validate() error {
	if !f.Gain.IsZero() {
		if f.Gain.Points < 1 || f.Gain.Points > MaxScore {
			return fmt.Errorf("gain.points: %d is not within 1..2^53-1", f.Gain.Points)
		}
		if p := time.Duration(f.Gain.Per); p < MinFlagPer || p > MaxFlagPer || p%time.Millisecond != 0 {
			return fmt.Errorf("gain.per: %s is not within %s..%s (whole milliseconds)", p, MinFlagPer, MaxFlagPer)
		}
	}
	if f.Jump < 0 || f.Jump > MaxScore {
		return fmt.Errorf("jump: %d is not within 1..2^53-1", f.Jump)
	}
	return nil
}

// IsZero reports whether g is unset.
func (g Gain) IsZero() bool { return g == Gain{} }

// Validated reports whether the board calls a hook before applying events.
func (b Board) Validated() bool { return !b.Hook.IsZero() }

// Holds reports whether members of the board can be held (a hook's flag,
// or the board's flags).
func (b Board) Holds() bool { return b.Validated() || !b.Flags.IsZero() }

// ClaimFor is how long a claim on an event of the board lives: the hook's
// timeout and ClaimMargin.
func (b Board) ClaimFor() time.Duration { return time.Duration(b.Hook.Timeout) + ClaimMargin }

// WithoutSecrets is b as the API shows it: the hook's secret left out.
func (b Board) WithoutSecrets() Board {
	b.Hook.Secret = ""
	return b
}

// validateIntegrity checks validate and flags and the kinds of board they
// apply to: a held member's entry is hidden from the board's own standings,
// which sharded, cohort, hot and derived boards keep in other shapes (a
// held entry would stay in its cohort's standings). A region board's
// engines take a held entry out of its region's standings with it.
func (b Board) validateIntegrity() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: field %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	if b.Validated() {
		if err := b.Hook.validate(); err != nil {
			return bad("validate", "%v", err)
		}
	}
	if err := b.Flags.validate(); err != nil {
		return bad("flags", "%v", err)
	}
	field := "validate"
	if !b.Validated() {
		field = "flags"
	}
	switch {
	case !b.Holds():
	case b.Derived():
		return bad(field, "a board with source applies no events")
	case b.Hot():
		return bad(field, "not with decay")
	case b.Sharded():
		return bad(field, "not with shards")
	case b.Cohorted():
		return bad(field, "not with cohort")
	}
	return nil
}

// Verdict is a hook's answer an event is applied with (§16).
type Verdict uint8

const (
	VerdictNone   Verdict = iota // not validated: the store judges whether the hook must see it
	VerdictAccept                // apply it
	VerdictFlag                  // apply it and hold the member with Event.Reason
)

// ValidateError is an event the store claimed for the board's hook instead
// of applying it (R35): nothing changed, and until the claim lapses
// (Board.ClaimFor) every other submission of the event's id is answered
// PendingError. Token names the claim: the event applied with the verdict
// carries it (Event.Claim), as does Reject. Found, Score and Rank are the
// member's entry before the event (the hook's score and rank).
type ValidateError struct {
	Token  string
	Period int64
	Found  bool
	Score  int64
	Rank   int64
}

func (e *ValidateError) Error() string { return "event awaits the board's validation hook" }

// Code is unavailable: a caller that does not run the hook answers so, and
// the claim lapses.
func (e *ValidateError) Code() string { return ErrUnavailable.code }

// PendingError is an event whose id another submission has claimed for the
// hook, not answered yet: retrying after Retry is safe (R4).
type PendingError struct{ Retry time.Duration }

func (e *PendingError) Error() string {
	return "this event's validation is under way; re-send it later"
}

// Code is unavailable.
func (e *PendingError) Code() string { return ErrUnavailable.code }

// RetryAfter is when the claim lapses.
func (e *PendingError) RetryAfter() time.Duration { return max(e.Retry, time.Millisecond) }

// Unwrap makes a PendingError an ErrUnavailable for errors.Is.
func (e *PendingError) Unwrap() error { return ErrUnavailable }

// ErrRejected is an event the board's hook rejected: nothing changed.
var ErrRejected = &Error{"rejected", "rejected by the board's validation"}

// RejectedError is ErrRejected with the hook's reason; errors.Is(err,
// ErrRejected) holds.
type RejectedError struct{ Reason string }

func (e *RejectedError) Error() string {
	if e.Reason == "" {
		return ErrRejected.msg
	}
	return ErrRejected.msg + ": " + e.Reason
}

// Code is rejected.
func (e *RejectedError) Code() string { return ErrRejected.code }

// Unwrap makes a RejectedError an ErrRejected for errors.Is.
func (e *RejectedError) Unwrap() error { return ErrRejected }

// IsRefusal reports whether err is an event refused by a rule (a contract
// code other than unavailable and internal): the same event would be
// refused again, whereas after an unavailable store it may pass.
func IsRefusal(err error) bool {
	var c interface{ Code() string }
	if !errors.As(err, &c) {
		return false
	}
	code := c.Code()
	return code != ErrUnavailable.code && code != "internal"
}

// ErrNotHeld is a review of a member that is not held in that period.
var ErrNotHeld = errors.New("rank: member is not held")

// Held is a held member as the review queue lists it (§16).
type Held struct {
	Member string
	Reason string
	At     time.Time // when it was held, on the store's clock
	Score  int64
	// Events are the ids applied since it was held (the holding event
	// first), at most MaxHeldEvents: the oldest are kept.
	Events []string
}

// Integrity is an engine's side of §16. Board methods return
// ErrUnknownBoard for a board that does not exist; ids are validated.
// Claims are made by Apply itself (ValidateError).
type Integrity interface {
	// Reject records the hook's reject of e, claimed with token, in place
	// of its claim: within the board's idempotency window every
	// submission of e's id is answered RejectedError (another payload
	// ErrIdempotencyConflict). A claim that is another's (it lapsed and was
	// taken again) is left alone: false.
	Reject(ctx context.Context, e Event, token, reason string) (bool, error)
	// Held lists the members held in a period, by member.
	Held(ctx context.Context, board string, period PeriodSel) ([]Held, error)
	// ClearHold shows a held member's entry again (unless a ban hides it)
	// and forgets its recent gains, so only a new gain or jump holds it
	// again. ErrNotHeld when it is not held in that period.
	ClearHold(ctx context.Context, board, member string, period PeriodSel) error
	// SelfRanks is Ranks as each member itself, and an admin, sees it: a
	// held member is found at the rank its score has among the board's
	// shown entries (ties as if it had reached its score last among
	// equals on a first board), with its own entry in its around.
	// Everyone else's reads (Ranks, Top, frames) leave it out.
	SelfRanks(ctx context.Context, board string, period PeriodSel, members []string, around int) (Ranks, error)
}

// CheckReason makes a hook's reason fit the contract: valid UTF-8 without
// control characters, at most MaxVerdictReason characters.
func CheckReason(r string) string {
	if !utf8.ValidString(r) {
		r = string([]rune(r)) // invalid bytes become U+FFFD
	}
	out := make([]rune, 0, min(len(r), MaxVerdictReason))
	for _, c := range r {
		if len(out) == MaxVerdictReason {
			break
		}
		if unicode.IsControl(c) {
			c = ' '
		}
		out = append(out, c)
	}
	return string(out)
}
