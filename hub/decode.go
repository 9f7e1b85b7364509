package hub

import (
	"github.com/wsgateway/wsgateway/hub/live"
	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// The decoder (proto.DecodeMessage) checks the contract's limits; the board
// config and live frames check theirs. They must be the same numbers: each
// line below fails to compile (a negative constant converted to uint) when
// the two differ.
const (
	_ = uint(proto.MaxTop-rank.MaxTop) + uint(rank.MaxTop-proto.MaxTop)
	_ = uint(proto.MaxTop-live.MaxTop) + uint(live.MaxTop-proto.MaxTop)
	_ = uint(proto.MaxAround-live.MaxAround) + uint(live.MaxAround-proto.MaxAround)
)

// field is a bit of request.has (proto.Field).
type field = proto.Field

const fMember = proto.FieldMember

// request is a decoded, shape-checked client message (proto.Message) with
// its op in rank's terms. Optional fields that were absent hold their
// defaults, with has recording what was present.
type request struct {
	Type   string
	ID     string
	Board  string
	Member string
	Op     rank.Op // score: OpDelta or OpValue
	Amount int64   // score: the delta or value
	Top    int     // subscribe: -1 when absent (the board's default applies)
	Around int
	Offset int
	Limit  int
	Period string
	Token  string
	At     int64     // score: unix ms when has&proto.FieldAt
	Meta   meta.Meta // score: "" when absent
	// Members and WithMeta: subscribe's member list and "meta": true.
	Members  []string
	WithMeta bool
	Cohort   string       // subscribe: "" for the board's own top frames (§12)
	Since    *proto.Since // subscribe: the resume point, nil when absent (§15)
	has      field
}

// decode parses one client frame strictly with proto.DecodeMessage, the
// decoder the REST scores share (same rules, same messages). On failure,
// req.ID is the request's id when it was a string (the error reply echoes
// it), and err carries bad_request or invalid_score.
func decode(b []byte) (request, error) {
	m, err := proto.DecodeMessage(b)
	return request{
		Type:   m.Type,
		ID:     m.ID,
		Board:  m.Board,
		Member: m.Member,
		Op:     rankOp(m.Op),
		Amount: m.Amount,
		Top:    m.Top,
		Around: m.Around,
		Offset: m.Offset,
		Limit:  m.Limit,
		Period: m.Period,
		Token:  m.Token,
		At:     m.At,
		Meta:   m.Meta,
		Cohort: m.Cohort,
		Since:  m.Since,
		has:    m.Has,

		Members:  m.Members,
		WithMeta: m.WithMeta,
	}, err
}

// rankOp maps the wire's op to the store's (0, no op, stays 0).
func rankOp(op proto.Op) rank.Op {
	switch op {
	case proto.OpDelta:
		return rank.OpDelta
	case proto.OpValue:
		return rank.OpValue
	}
	return 0
}

// badRequest is a bad_request the hub detects beyond the decoder's.
func badRequest(msg string) error { return proto.BadRequest(msg) }
