// Package proto holds the wire contract's message shapes and codes
// (docs/protocol.md §4), shared by the gateway and the Go client, and the
// gateway's one strict decoder of client messages and score events
// (decode.go) and one ack encoder (encode.go), so that the WebSocket and
// REST paths cannot drift apart. It imports nothing from the project.
package proto

import (
	"encoding/json"
	"errors"

	"github.com/wsgateway/wsgateway/internal/meta"
)

// Subprotocol is the WebSocket subprotocol the gateway speaks.
const Subprotocol = "lb.v1"

// BearerPrefix prefixes a token carried as a second subprotocol.
const BearerPrefix = "bearer."

// Client message types.
const (
	TypeScore       = "score"
	TypeSubscribe   = "subscribe"
	TypeUnsubscribe = "unsubscribe"
	TypePage        = "page"
	TypeRank        = "rank"
	TypeAuth        = "auth"
)

// Server message types.
const (
	TypeWelcome      = "welcome"
	TypeAck          = "ack"
	TypeSubscribed   = "subscribed"
	TypeUnsubscribed = "unsubscribed"
	TypeTop          = "top"
	TypeView         = "view"
	TypeBoard        = "board" // v1.1, §6 (R19)
	TypeAuthed       = "authed"
	TypeError        = "error"
	// TypePage and TypeRank are also the reply types of page and rank.
)

// Error codes.
const (
	CodeBadRequest          = "bad_request"
	CodeUnauthorized        = "unauthorized"
	CodeTokenExpired        = "token_expired"
	CodeForbidden           = "forbidden"
	CodeUnknownBoard        = "unknown_board"
	CodeInvalidBoard        = "invalid_board"
	CodeInvalidMember       = "invalid_member"
	CodeInvalidScore        = "invalid_score"
	CodeOutOfRange          = "out_of_range"
	CodeDeltaTooLarge       = "delta_too_large"
	CodeBoardClosed         = "board_closed"
	CodeIdempotencyConflict = "idempotency_conflict"
	CodeRateLimited         = "rate_limited"
	CodeUnavailable         = "unavailable"
	CodeInternal            = "internal"
	// v1.1
	CodeBanned       = "banned"
	CodeLimitReached = "limit_reached"
	CodeReadOnly     = "read_only"
	// v1.2: a REST 404 for anything but a board (a profile, ban, entry,
	// route), which stays unknown_board (R30).
	CodeNotFound = "not_found"
)

// Why a board_closed refusal happened (R30): Closed.Reason.
const (
	ClosedNotStarted    = "not_started"
	ClosedEnded         = "ended"
	ClosedPeriodOver    = "period_over"
	ClosedOutsideWindow = "outside_window"
)

// Close codes beyond RFC 6455's.
const (
	CloseTokenExpired = 4001
	CloseForbidden    = 4003
)

// CodeOf maps an error to its contract code: an error (or one it wraps) that
// has a `Code() string` method supplies it; anything else is internal. This is
// the one place where Go errors become wire codes.
func CodeOf(err error) string {
	var c interface{ Code() string }
	if errors.As(err, &c) {
		return c.Code()
	}
	return CodeInternal
}

// HTTPStatus is the REST status for a contract code.
func HTTPStatus(code string) int {
	switch code {
	case CodeUnauthorized, CodeTokenExpired:
		return 401
	case CodeForbidden, CodeBanned:
		return 403
	case CodeUnknownBoard, CodeNotFound:
		return 404
	case CodeIdempotencyConflict, CodeLimitReached, CodeReadOnly, CodeBoardClosed:
		return 409
	case CodeRateLimited:
		return 429
	case CodeUnavailable:
		return 503
	case CodeInternal:
		return 500
	}
	return 400
}

// Entry is one ranked member: {"rank":1,"member":"bob","score":120,"name":"Bob"}.
type Entry struct {
	Rank   int64  `json:"rank"`
	Member string `json:"member"`
	Score  int64  `json:"score"`
	Name   string `json:"name,omitempty"`
	// Avatar and Country come from the member's profile (R20).
	Avatar  string `json:"avatar,omitempty"`
	Country string `json:"country,omitempty"`
	// Meta is that of the event that set the score (§11).
	Meta meta.Meta `json:"meta,omitempty"`
}

// EntryShape is satisfied by a type with exactly Entry's fields and tags:
// the rank store's entry has them, which lets EntriesOf convert it without
// proto importing the store. A field added to one and not the other stops
// every call of EntriesOf from compiling, which is the point.
type EntryShape interface {
	~struct {
		Rank   int64  `json:"rank"`
		Member string `json:"member"`
		Score  int64  `json:"score"`
		Name   string `json:"name,omitempty"`
		// Avatar and Country come from the member's profile (R20).
		Avatar  string `json:"avatar,omitempty"`
		Country string `json:"country,omitempty"`
		// Meta is that of the event that set the score (§11).
		Meta meta.Meta `json:"meta,omitempty"`
	}
}

// Entry itself has the shape (a compile-time check).
var _ = EntriesOf[Entry]

// EntriesOf converts a store's entries to the wire's: the one conversion,
// shared by replies, live frames and REST reads. Never nil, so JSON says []
// rather than null.
func EntriesOf[E EntryShape](es []E) []Entry {
	out := make([]Entry, len(es))
	for i, e := range es {
		out[i] = Entry(e)
	}
	return out
}

// WithoutMeta clears the meta of es in place: top and view frames carry it
// only for a subscription that asked (§11).
func WithoutMeta(es []Entry) []Entry {
	for i := range es {
		es[i].Meta = ""
	}
	return es
}

// Request is any client message, as a client encodes it. Optional numbers
// are pointers so that absent and zero differ. The gateway decodes frames
// strictly with DecodeMessage instead.
type Request struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Board  string          `json:"board,omitempty"`
	Member string          `json:"member,omitempty"`
	Delta  json.RawMessage `json:"delta,omitempty"` // an integer; raw so that 1.5 and "1" are told apart
	Value  json.RawMessage `json:"value,omitempty"`
	Top    *int            `json:"top,omitempty"`
	Around *int            `json:"around,omitempty"`
	Offset *int            `json:"offset,omitempty"`
	Limit  *int            `json:"limit,omitempty"`
	Period string          `json:"period,omitempty"`
	Token  string          `json:"token,omitempty"`
	Meta   json.RawMessage `json:"meta,omitempty"`   // score: a JSON object; subscribe: true (§11)
	Cohort string          `json:"cohort,omitempty"` // subscribe: that cohort's top frames (§12)
	// Members is subscribe's member list (§11).
	Members []string `json:"members,omitempty"`
}

// Limits are announced in welcome.
type Limits struct {
	MaxMessage int `json:"max_message"`
	Rate       int `json:"rate"`
}

// Welcome is the first frame on every connection.
type Welcome struct {
	Type       string `json:"type"`
	Member     string `json:"member"`
	Role       string `json:"role"`
	Node       string `json:"node"`
	ServerTime int64  `json:"server_time"` // unix ms
	Exp        int64  `json:"exp"`         // unix seconds, as in the token
	Limits     Limits `json:"limits"`
}

// Ack answers a score.
type Ack struct {
	Type      string `json:"type,omitempty"` // omitted in REST results
	ID        string `json:"id"`
	Board     string `json:"board"`
	Member    string `json:"member"`
	Score     int64  `json:"score"`
	Rank      int64  `json:"rank"`
	PrevRank  *int64 `json:"prev_rank"` // null when the member was new
	Duplicate bool   `json:"duplicate"`
	Seq       int64  `json:"seq"`
	Period    int64  `json:"period,omitempty"` // the period written to (R17); boards with reset only
	// Cohort is the member's cohort on a cohort board, and Rank and
	// PrevRank are then within it; Tier is its tier on a league board (§12).
	Cohort string `json:"cohort,omitempty"`
	Tier   string `json:"tier,omitempty"`
	// Region and RegionRank: the member's region on a region board and
	// its rank there, right after its own step (§17, R37).
	Region     string `json:"region,omitempty"`
	RegionRank int64  `json:"region_rank,omitempty"`
	// Decimals: Score is in units of 10^-Decimals and is written with that
	// many decimals (hot boards: 3, R22). Not a field of the wire.
	Decimals int `json:"-"`
}

// Subscribed answers subscribe; Unsubscribed (same shape) answers unsubscribe.
type Subscribed struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Board string `json:"board"`
}

// PageReply answers page.
type PageReply struct {
	Type    string  `json:"type"`
	ID      string  `json:"id"`
	Board   string  `json:"board"`
	Offset  int     `json:"offset"`
	Entries []Entry `json:"entries"`
	Total   int64   `json:"total"`
	Period  int64   `json:"period,omitempty"`
	// Decimals: the scores are in units of 10^-Decimals (hot boards: 3);
	// the gateway writes them with that many decimals. Not a wire field.
	Decimals int `json:"-"`
}

// RankReply answers rank.
type RankReply struct {
	Type   string  `json:"type"`
	ID     string  `json:"id"`
	Board  string  `json:"board"`
	Member string  `json:"member"`
	Rank   *int64  `json:"rank"`  // null when absent
	Score  *int64  `json:"score"` // null when absent
	Around []Entry `json:"around"`
	Period int64   `json:"period,omitempty"`
	// Cohort and Tier: the member's on a cohort or league board, where
	// Rank and Around are within the cohort (§12).
	Cohort string `json:"cohort,omitempty"`
	Tier   string `json:"tier,omitempty"`
	// Region and RegionRank: on a region board, the member's region and
	// its rank there (§17), present when it has an entry.
	Region     string `json:"region,omitempty"`
	RegionRank int64  `json:"region_rank,omitempty"`
	// Decimals: the scores are in units of 10^-Decimals (hot boards: 3);
	// the gateway writes them with that many decimals. Not a wire field.
	Decimals int `json:"-"`
}

// Top is the live top-N frame of a board.
type Top struct {
	Type    string  `json:"type"`
	Board   string  `json:"board"`
	Seq     int64   `json:"seq"`
	Entries []Entry `json:"entries"`
	Total   int64   `json:"total"`
	TS      int64   `json:"ts"` // unix ms
	// Final marks the last top frame of a period or board that became
	// final (R19); Period is that period (boards with reset only).
	Final  bool  `json:"final,omitempty"`
	Period int64 `json:"period,omitempty"`
	// Cohort: the frame is that cohort's standings, not the board's (§12).
	Cohort string `json:"cohort,omitempty"`
	// Decimals: the scores are in units of 10^-Decimals (hot boards: 3);
	// the gateway writes them with that many decimals. Not a wire field.
	Decimals int `json:"-"`
}

// Board is the lifecycle frame of a subscribed board (R19): after
// `subscribed`, before the first top/view frame, and on every change of
// state or current period. State "deleted" ends the subscription.
type Board struct {
	Type     string `json:"type"`
	Board    string `json:"board"`
	State    string `json:"state"`
	Period   int64  `json:"period,omitempty"` // boards with reset only
	StartsAt *int64 `json:"starts_at"`        // unix ms, null when unset
	EndsAt   *int64 `json:"ends_at"`
	FinalAt  *int64 `json:"final_at"` // ends_at + grace
	TS       int64  `json:"ts"`
	Viewers  *int   `json:"viewers,omitempty"` // §14: open subscriptions over every node, when known
}

// View is the live frame of one member's rank and neighbours.
type View struct {
	Type   string  `json:"type"`
	Board  string  `json:"board"`
	Member string  `json:"member"`
	Rank   *int64  `json:"rank"`  // null when absent
	Score  *int64  `json:"score"` // null when absent
	Around []Entry `json:"around"`
	Seq    int64   `json:"seq"`
	TS     int64   `json:"ts"`
	// Decimals: the scores are in units of 10^-Decimals (hot boards: 3);
	// the gateway writes them with that many decimals. Not a wire field.
	Decimals int `json:"-"`
}

// Authed answers auth.
type Authed struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Exp  int64  `json:"exp"`
}

// Error is an error frame; ID is omitted when the request's id is unknown.
// A board_closed error says why in its Closed fields (R30).
type Error struct {
	Type         string `json:"type"`
	ID           string `json:"id,omitempty"`
	Code         string `json:"code"`
	Message      string `json:"message"`
	RetryAfterMS int64  `json:"retry_after_ms,omitempty"`
	Closed
}

// Closed is why an event or a change got board_closed (R30): Reason, one
// of the Closed* constants, and the times that go with it, unix ms —
// starts_at (not_started), final_at (ended), period and grace_end
// (period_over). Fields that do not apply to the reason are zero and left
// out. It has the fields of rank.ClosedError, in order, so that the
// gateway converts one to the other (proto imports nothing from the
// project).
type Closed struct {
	Reason   string `json:"reason,omitempty"`
	StartsAt int64  `json:"starts_at,omitempty"`
	FinalAt  int64  `json:"final_at,omitempty"`
	Period   int64  `json:"period,omitempty"`
	GraceEnd int64  `json:"grace_end,omitempty"`
}

// ErrorBody is the REST error shape: {"error":{"code":…,"message":…}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inner object of ErrorBody, and of a failed REST score
// result; a board_closed one carries the Closed fields too (R30).
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Closed
}

// ScoreEvent is one element of the REST scores array.
type ScoreEvent struct {
	ID     string          `json:"id"`
	Member string          `json:"member"`
	Delta  json.RawMessage `json:"delta,omitempty"`
	Value  json.RawMessage `json:"value,omitempty"`
}

// ScoreFailure is a failed element of the REST scores answer.
type ScoreFailure struct {
	ID    string      `json:"id"`
	Error ErrorDetail `json:"error"`
}
