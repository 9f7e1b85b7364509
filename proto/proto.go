// Package proto holds the wire contract's message shapes and codes
// (docs/protocol.md §4), shared by the gateway and the Go client, and the
// gateway's one strict decoder of client messages and score events
// (decode.go) and one ack encoder (encode.go), so that the WebSocket and
// REST paths cannot drift apart. The values the store answers with (an
// entry, an op, a result, why a board is closed) are rank's own, not
// copies: proto imports rank, and rank imports no proto.
package proto

import (
	"encoding/json"
	"errors"

	"github.com/wsgateway/wsgateway/rank"
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
	// v1.3: a board's validation hook rejected the event (§16; REST 422).
	CodeRejected = "rejected"
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
	case CodeRejected:
		return 422
	case CodeUnavailable:
		return 503
	case CodeInternal:
		return 500
	}
	return 400
}

// Entry is one ranked member:
// {"rank":1,"member":"bob","score":120,"name":"Bob"}, the store's own.
type Entry = rank.Entry

// EntriesOf copies a store's entries for a reply or frame, which may then
// change them (WithoutMeta) without touching the store's page. Never nil,
// so JSON says [] rather than null.
func EntriesOf(es []Entry) []Entry {
	return append(make([]Entry, 0, len(es)), es...)
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
	Region string          `json:"region,omitempty"` // subscribe: that region's top frames (§17)
	Scope  string          `json:"scope,omitempty"`  // subscribe: "region", the view within the member's region (§17)
	// Members is subscribe's member list (§11).
	Members []string `json:"members,omitempty"`
	// Since is subscribe's resume point (§15).
	Since *Since `json:"since,omitempty"`
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
	Type   string `json:"type,omitempty"` // omitted in REST results
	ID     string `json:"id"`
	Board  string `json:"board"`
	Member string `json:"member"`
	Score  int64  `json:"score"`
	// Rank and PrevRank: 0 and nil on a sharded board's ack without ranks
	// (ack_rank none, R24), whose JSON then has neither field.
	Rank      int64  `json:"rank,omitempty"`
	PrevRank  *int64 `json:"prev_rank"` // null when the member was new
	Duplicate bool   `json:"duplicate"`
	Seq       int64  `json:"seq"`
	Period    int64  `json:"period,omitempty"` // the period written to (R17); boards with reset only
	// Cohort is the member's cohort on a cohort board, and Rank and
	// PrevRank are then within it; Tier is its tier on a league board (§12).
	Cohort string `json:"cohort,omitempty"`
	Tier   string `json:"tier,omitempty"`
	// Capped says a board's cap (§18) let only Applied of the delta through.
	Capped  bool  `json:"capped,omitempty"`
	Applied int64 `json:"applied,omitempty"`
	// Region and RegionRank: the member's region on a region board and
	// its rank there, right after its own step (§17, R37).
	Region     string `json:"region,omitempty"`
	RegionRank int64  `json:"region_rank,omitempty"`
	// Held: the member is held (§16): its entry is hidden from everyone
	// else's reads.
	Held bool `json:"held,omitempty"`
	// Decimals: Score is in units of 10^-Decimals and is written with that
	// many decimals (hot boards: 3, R22). Not a field of the wire.
	Decimals int `json:"-"`
}

// AckOf is the ack of r, the result of the score requested as id: the one
// conversion of the WebSocket's acks and the REST answers (which leave
// Type empty). Small enough to inline, so prev stays on its caller's stack.
func AckOf(id string, r rank.Result) Ack {
	a := Ack{ID: id, Board: r.Board, Member: r.Member, Score: r.Score, Rank: r.Rank, Duplicate: r.Duplicate,
		Seq: r.Seq, Period: r.Period, Cohort: r.Cohort, Tier: r.Tier, Decimals: r.Decimals,
		Capped: r.Capped, Applied: r.Applied, Region: r.Region, RegionRank: r.RegionRank, Held: r.Held}
	if r.PrevRank > 0 {
		prev := r.PrevRank
		a.PrevRank = &prev
	}
	return a
}

// Subscribed answers subscribe; Unsubscribed (same shape) answers unsubscribe.
type Subscribed struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Board string `json:"board"`
	// Epoch names the board's stream (§15): a `since` carrying it resumes.
	// Subscribed only.
	Epoch string `json:"epoch,omitempty"`
	// Resumed answers a subscribe that carried since: true when its epoch
	// was the board's (§15). Absent otherwise.
	Resumed *bool `json:"resumed,omitempty"`
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
	Decimals   int    `json:"-"` // as PageReply.Decimals
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
	// Region: the frame is that region's standings, ranks within it (§17).
	Region   string `json:"region,omitempty"`
	Decimals int    `json:"-"` // as PageReply.Decimals
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
	// Region: a "scope": "region" view, ranks and around within it (§17).
	Region   string `json:"region,omitempty"`
	Decimals int    `json:"-"` // as PageReply.Decimals
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
	rank.Closed
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
	rank.Closed
	// RetryAfterMS: when re-sending an unavailable event helps (§16: its
	// claim lapses then).
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
}

// ScoreFailure is a failed element of the REST scores answer.
type ScoreFailure struct {
	ID    string      `json:"id"`
	Error ErrorDetail `json:"error"`
}
