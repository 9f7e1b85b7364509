package hub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// Limits of request fields (PROTOCOL.md §4).
const (
	maxTop    = rank.MaxTop
	maxAround = 25
	maxLimit  = 100
	// maxOffset keeps offset+limit far from int overflow in any engine.
	maxOffset = 1 << 30
)

// field is one known request field; a bit in a mask.
type field uint16

const (
	fType field = 1 << iota
	fID
	fBoard
	fMember
	fDelta
	fValue
	fTop
	fAround
	fOffset
	fLimit
	fPeriod
	fToken
)

// fieldOf maps an exact (case-sensitive) wire name to its field.
func fieldOf(name string) (field, bool) {
	switch name {
	case "type":
		return fType, true
	case "id":
		return fID, true
	case "board":
		return fBoard, true
	case "member":
		return fMember, true
	case "delta":
		return fDelta, true
	case "value":
		return fValue, true
	case "top":
		return fTop, true
	case "around":
		return fAround, true
	case "offset":
		return fOffset, true
	case "limit":
		return fLimit, true
	case "period":
		return fPeriod, true
	case "token":
		return fToken, true
	}
	return 0, false
}

// nameOf is the wire name of one field.
func nameOf(f field) string {
	for _, n := range [...]string{"type", "id", "board", "member", "delta", "value", "top", "around", "offset", "limit", "period", "token"} {
		if g, _ := fieldOf(n); g == f {
			return n
		}
	}
	return "?"
}

// fieldsOf says, per request type, which fields it may carry besides type and
// id, and which of those it must carry (score also needs exactly one of delta
// and value). ok is false for an unknown type.
func fieldsOf(typ string) (allowed, required field, ok bool) {
	switch typ {
	case proto.TypeScore:
		return fBoard | fMember | fDelta | fValue, fBoard, true
	case proto.TypeSubscribe:
		return fBoard | fMember | fTop | fAround, fBoard, true
	case proto.TypeUnsubscribe:
		return fBoard, fBoard, true
	case proto.TypePage:
		return fBoard | fOffset | fLimit | fPeriod, fBoard, true
	case proto.TypeRank:
		return fBoard | fMember | fAround | fPeriod, fBoard, true
	case proto.TypeAuth:
		return fToken, fToken, true
	}
	return 0, 0, false
}

// request is a decoded, shape-checked client message. Optional fields that
// were absent hold their defaults, with has recording what was present.
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
	has    field
}

// decode parses one client frame strictly (PROTOCOL.md §4, R6, R10): one JSON
// object, exact field names without duplicates, no unknown fields, the fields
// of its type with the right JSON kinds and ranges. The stdlib decoder alone
// would match names case-insensitively and keep the last duplicate, so keys
// are scanned with json.Decoder.Token first.
//
// On failure, id is the request's id when it could be read (the error reply
// echoes it), and err wraps rank.ErrBadRequest or rank.ErrInvalidScore.
func decode(b []byte) (req request, err error) {
	var raw rawFields
	if err := scanObject(b, &raw); err != nil {
		return request{}, err
	}
	has := raw.has
	req.has = has
	if has&fID == 0 {
		return req, badRequest("missing field id")
	}
	id, ok := jsonString(raw.get(fID))
	if !ok || !proto.ValidRequestID(id) {
		return req, badRequest("field id must be a string of 1-64 characters [A-Za-z0-9_.:-]")
	}
	req.ID = id
	if has&fType == 0 {
		return req, badRequest("missing field type")
	}
	typ, ok := typeOf(raw.get(fType))
	if !ok {
		return req, badRequest("field type must be a string")
	}
	allow, need, known := fieldsOf(typ)
	if !known {
		return req, badRequest(fmt.Sprintf("unknown type %q", truncate(typ, 32)))
	}
	req.Type = typ
	if extra := has &^ (allow | fType | fID); extra != 0 {
		return req, badRequest(fmt.Sprintf("field %s is not allowed in %s", nameOf(lowestBit(extra)), typ))
	}
	if missing := need &^ has; missing != 0 {
		return req, badRequest("missing field " + nameOf(lowestBit(missing)))
	}

	if has&fBoard != 0 {
		if req.Board, ok = jsonString(raw.get(fBoard)); !ok {
			return req, notString(fBoard)
		}
	}
	if has&fMember != 0 {
		if req.Member, ok = jsonString(raw.get(fMember)); !ok {
			return req, notString(fMember)
		}
	}
	if has&fToken != 0 {
		if req.Token, ok = jsonString(raw.get(fToken)); !ok {
			return req, notString(fToken)
		}
	}
	if has&fPeriod != 0 {
		if req.Period, ok = period(raw.get(fPeriod)); !ok {
			return req, badRequest(`field period must be "current", "previous" or a period index`)
		}
	}
	if req.Top, err = intField(&raw, fTop, 0, maxTop, -1); err != nil {
		return req, err
	}
	if req.Around, err = intField(&raw, fAround, 0, maxAround, 0); err != nil {
		return req, err
	}
	if req.Offset, err = intField(&raw, fOffset, 0, maxOffset, 0); err != nil {
		return req, err
	}
	if req.Limit, err = intField(&raw, fLimit, 1, maxLimit, 10); err != nil {
		return req, err
	}

	if typ == proto.TypeScore {
		switch has & (fDelta | fValue) {
		case fDelta:
			req.Op = rank.OpDelta
		case fValue:
			req.Op = rank.OpValue
		case 0:
			return req, badRequest("missing field delta or value")
		default:
			return req, badRequest("send delta or value, not both")
		}
		num := raw.get(fDelta)
		if req.Op == rank.OpValue {
			num = raw.get(fValue)
		}
		n, ok := proto.ParseScore(num)
		if !ok {
			return req, fmt.Errorf("%w: %s must be a JSON integer within ±(2^53-1)", rank.ErrInvalidScore, nameOf(has&(fDelta|fValue)))
		}
		req.Amount = n
	}
	return req, nil
}

// rawFields holds the raw JSON value of each field present.
type rawFields struct {
	has field
	raw [12][]byte // by bit position of the field
}

func (r *rawFields) get(f field) []byte { return r.raw[bits.TrailingZeros16(uint16(f))] }

// scanObject splits one JSON object into its known fields' raw values,
// rejecting anything but exactly one object, unknown or duplicate names.
// json.Valid vouches for the syntax first, so the scan below only has to
// find where each key and value ends; it allocates nothing.
func scanObject(b []byte, out *rawFields) error {
	if !json.Valid(b) {
		return badRequest("malformed JSON")
	}
	i := skipSpace(b, 0)
	if b[i] != '{' {
		return badRequest("a message must be one JSON object")
	}
	i = skipSpace(b, i+1)
	if b[i] == '}' {
		return nil
	}
	for {
		end := stringEnd(b, i)
		f, known := fieldOfKey(b[i:end])
		if !known {
			name, _ := keyName(b[i:end])
			return badRequest(fmt.Sprintf("unknown field %q", truncate(name, 32)))
		}
		if out.has&f != 0 {
			return badRequest(fmt.Sprintf("duplicate field %q", nameOf(f)))
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // past ':'
		vend := valueEnd(b, i)
		out.has |= f
		out.raw[bits.TrailingZeros16(uint16(f))] = b[i:vend]
		i = skipSpace(b, vend)
		if b[i] == '}' {
			return nil
		}
		i = skipSpace(b, i+1) // past ','
	}
}

// fieldOfKey maps a quoted key to its field without allocating in the
// common case (no escapes): fieldOf keeps no reference to the name, so the
// conversion below stays on the stack.
func fieldOfKey(q []byte) (field, bool) {
	if bytes.IndexByte(q, '\\') < 0 {
		return fieldOf(string(q[1 : len(q)-1]))
	}
	name, ok := keyName(q)
	if !ok {
		return 0, false
	}
	return fieldOf(name)
}

// keyName decodes a quoted key; only a key with escapes needs the decoder.
func keyName(q []byte) (string, bool) {
	if bytes.IndexByte(q, '\\') < 0 {
		return string(q[1 : len(q)-1]), true
	}
	var s string
	err := json.Unmarshal(q, &s)
	return s, err == nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd returns the index just past the (valid) JSON value at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return len(b)
}

// intField reads an optional integer field within [lo, hi], def when absent.
func intField(raw *rawFields, f field, lo, hi, def int) (int, error) {
	if raw.has&f == 0 {
		return def, nil
	}
	n, ok := jsonInt(raw.get(f))
	if !ok || n < lo || n > hi {
		return 0, badRequest(fmt.Sprintf("field %s must be an integer within %d..%d", nameOf(f), lo, hi))
	}
	return n, nil
}

func notString(f field) error { return badRequest("field " + nameOf(f) + " must be a string") }

// typeOf decodes the type field, returning the package constant for a
// known type so that the common case allocates nothing.
func typeOf(raw []byte) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' {
		switch string(raw[1 : len(raw)-1]) {
		case proto.TypeScore:
			return proto.TypeScore, true
		case proto.TypeSubscribe:
			return proto.TypeSubscribe, true
		case proto.TypeUnsubscribe:
			return proto.TypeUnsubscribe, true
		case proto.TypePage:
			return proto.TypePage, true
		case proto.TypeRank:
			return proto.TypeRank, true
		case proto.TypeAuth:
			return proto.TypeAuth, true
		}
	}
	return jsonString(raw)
}

// jsonString decodes a JSON string value (not null, not a number).
func jsonString(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// jsonInt decodes a plain JSON integer: no fraction, exponent or quotes.
func jsonInt(raw []byte) (int, bool) {
	n, ok := proto.ParseScore(raw)
	if !ok || n > maxOffset || n < -maxOffset {
		return 0, false
	}
	return int(n), true
}

// period accepts "current", "previous", an index as a string, or an index as
// a JSON integer; the store validates the index against the board.
func period(raw []byte) (string, bool) {
	if s, ok := jsonString(raw); ok {
		return s, len(s) <= 32
	}
	n, ok := proto.ParseScore(raw)
	if !ok || n <= 0 {
		return "", false
	}
	return strconv.FormatInt(n, 10), true
}

func badRequest(msg string) error { return fmt.Errorf("%w: %s", rank.ErrBadRequest, msg) }

func lowestBit(f field) field { return f & -f }

// truncate keeps client-supplied text in error messages short.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
