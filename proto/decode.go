package proto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/rank"
)

// Fault is a message the contract refuses for its shape, before anything
// is applied: a bad_request or an invalid_score (CodeOf reads its code).
// The sentinels below are wrapped with detail, so that the WebSocket and
// REST paths word the same fault the same way:
// fmt.Errorf("%w: missing field id", ErrBadRequest).
type Fault struct{ code, msg string }

func (e *Fault) Error() string { return e.msg }

// Code is the contract's error code.
func (e *Fault) Code() string { return e.code }

// The decoders' failures.
var (
	ErrBadRequest   = &Fault{CodeBadRequest, "bad request"}
	ErrInvalidScore = &Fault{CodeInvalidScore, "invalid score"}
)

// BadRequest is ErrBadRequest with detail.
func BadRequest(detail string) error { return fmt.Errorf("%w: %s", ErrBadRequest, detail) }

// MissingField is the bad_request of an absent required field, worded as
// the decoders word it (the hub also uses it for a server's member).
func MissingField(name string) error { return BadRequest("missing field " + name) }

// Limits of message fields (§4) beyond the store's (subscribe top:
// 0..rank.MaxTop; subscribe and rank around: 0..rank.MaxAround).
const (
	DefaultLimit = 10
	MaxLimit     = 100 // page limit: 1..MaxLimit
	// MaxOffset keeps offset+limit far from int overflow in any engine.
	MaxOffset = 1 << 30
)

// Field is one known message field: a bit in Message.Has.
type Field uint32

const (
	FieldType Field = 1 << iota
	FieldID
	FieldBoard
	FieldMember
	FieldDelta
	FieldValue
	FieldTop
	FieldAround
	FieldOffset
	FieldLimit
	FieldPeriod
	FieldToken
	FieldAt      // score: the event's time in unix ms (v1.1, §6)
	FieldMeta    // score: a JSON object kept with the score; subscribe: a boolean (v1.2, §11)
	FieldMembers // subscribe: a member list (v1.2, §11)
	FieldCohort  // subscribe: the cohort whose top frames to send (v1.2, §12)
	FieldSince   // subscribe: the resume point (v1.3, §15)
	FieldRegion  // subscribe: the region whose top frames to send (v1.3, §17)
	FieldScope   // subscribe: "region" for the member's view within its region (v1.3, §17)
	FieldName    // an import line's display name (v1.3, §18); no message has it

	allFields = FieldScope<<1 - 1
	// scoreFields are the fields of a REST score event.
	scoreFields = FieldID | FieldMember | FieldDelta | FieldValue | FieldAt | FieldMeta
)

// fieldOf maps an exact (case-sensitive) wire name to its field.
func fieldOf(name string) (Field, bool) {
	switch name {
	case "type":
		return FieldType, true
	case "id":
		return FieldID, true
	case "board":
		return FieldBoard, true
	case "member":
		return FieldMember, true
	case "delta":
		return FieldDelta, true
	case "value":
		return FieldValue, true
	case "top":
		return FieldTop, true
	case "around":
		return FieldAround, true
	case "offset":
		return FieldOffset, true
	case "limit":
		return FieldLimit, true
	case "period":
		return FieldPeriod, true
	case "token":
		return FieldToken, true
	case "at":
		return FieldAt, true
	case "meta":
		return FieldMeta, true
	case "members":
		return FieldMembers, true
	case "cohort":
		return FieldCohort, true
	case "since":
		return FieldSince, true
	case "name":
		return FieldName, true
	case "region":
		return FieldRegion, true
	case "scope":
		return FieldScope, true
	}
	return 0, false
}

var fieldNames = [...]string{"type", "id", "board", "member", "delta", "value", "top", "around", "offset", "limit", "period", "token", "at", "meta", "members", "cohort", "since", "region", "scope", "name"}

// String is the field's wire name.
func (f Field) String() string {
	if i := bits.TrailingZeros32(uint32(f)); i < len(fieldNames) {
		return fieldNames[i]
	}
	return "?"
}

// fieldsOf says, per message type, which fields it may carry besides type
// and id, and which of those it must carry (score also needs exactly one of
// delta and value). ok is false for an unknown type.
func fieldsOf(typ string) (allowed, required Field, ok bool) {
	switch typ {
	case TypeScore:
		return FieldBoard | FieldMember | FieldDelta | FieldValue | FieldAt | FieldMeta, FieldBoard, true
	case TypeSubscribe:
		return FieldBoard | FieldMember | FieldTop | FieldAround | FieldMembers | FieldMeta | FieldCohort | FieldSince | FieldRegion | FieldScope, FieldBoard, true
	case TypeUnsubscribe:
		return FieldBoard, FieldBoard, true
	case TypePage:
		return FieldBoard | FieldOffset | FieldLimit | FieldPeriod, FieldBoard, true
	case TypeRank:
		return FieldBoard | FieldMember | FieldAround | FieldPeriod, FieldBoard, true
	case TypeAuth:
		return FieldToken, FieldToken, true
	}
	return 0, 0, false
}

// Message is a decoded, shape-checked client message. Optional fields that
// were absent hold their defaults, with Has recording what was present.
type Message struct {
	Type   string
	ID     string
	Board  string
	Member string
	Op     rank.Op // score
	Amount int64   // score: the delta or value
	Top    int     // subscribe: -1 when absent (the board's default applies)
	Around int
	Offset int
	Limit  int // page: 10 when absent
	Period string
	Token  string
	At     int64     // score: unix ms when Has&FieldAt (who may send it is the caller's rule)
	Meta   meta.Meta // score: "" when absent
	// Members and WithMeta: subscribe's member list and "meta": true (§11).
	Members  []string
	WithMeta bool
	Cohort   string // subscribe: "" when absent (the board's own top frames; §12)
	Since    *Since // subscribe: the resume point, nil when absent (§15)
	Region   string // subscribe: "" when absent (§17)
	Scope    string // subscribe: "" when absent (the board's view; §17)
	Has      Field
}

// Score is one decoded REST score event: an element of the array POSTed to
// /api/v1/boards/{board}/scores.
type Score struct {
	ID     string
	Member string
	Op     rank.Op
	Amount int64
	At     int64 // unix ms when HasAt
	HasAt  bool
	Meta   meta.Meta // "" when absent
}

// DecodeMessage parses one WebSocket client frame strictly (§4, R6, R10):
// one JSON object, exact field names without duplicates, no unknown fields,
// the fields of its type with the right JSON kinds and ranges. The stdlib
// decoder alone would match names case-insensitively and keep the last
// duplicate. A score's member is optional here: whether the sender's role
// needs it is the caller's rule.
//
// On failure, m.ID is the message's id whenever it is a JSON string, valid
// or not (the error reply echoes it), and err wraps ErrBadRequest or
// ErrInvalidScore.
func DecodeMessage(b []byte) (m Message, err error) {
	var raw rawFields
	scanErr := scanObject(b, allFields, "a message", &raw)
	has := raw.has
	m.Has = has
	m.ID, err = eventID(&raw)
	if scanErr != nil {
		return m, scanErr
	}
	if err != nil {
		return m, err
	}
	if has&FieldType == 0 {
		return m, MissingField("type")
	}
	typ, ok := typeOf(raw.get(FieldType))
	if !ok {
		return m, BadRequest("field type must be a string")
	}
	allow, need, known := fieldsOf(typ)
	if !known {
		return m, BadRequest(fmt.Sprintf("unknown type %q", truncate(typ, 32)))
	}
	m.Type = typ
	if extra := has &^ (allow | FieldType | FieldID); extra != 0 {
		return m, BadRequest(fmt.Sprintf("field %s is not allowed in %s", lowestBit(extra), typ))
	}
	if missing := need &^ has; missing != 0 {
		return m, MissingField(lowestBit(missing).String())
	}
	if m.Board, err = stringField(&raw, FieldBoard); err != nil {
		return m, err
	}
	if m.Member, err = stringField(&raw, FieldMember); err != nil {
		return m, err
	}
	if m.Token, err = stringField(&raw, FieldToken); err != nil {
		return m, err
	}
	if m.Cohort, err = stringField(&raw, FieldCohort); err != nil {
		return m, err
	}
	if m.Region, err = stringField(&raw, FieldRegion); err != nil {
		return m, err
	}
	if m.Scope, err = stringField(&raw, FieldScope); err != nil {
		return m, err
	}
	if has&FieldPeriod != 0 {
		if m.Period, ok = period(raw.get(FieldPeriod)); !ok {
			return m, BadRequest(`field period must be "current", "previous" or a period index`)
		}
	}
	if m.Top, err = intField(&raw, FieldTop, 0, rank.MaxTop, -1); err != nil {
		return m, err
	}
	if m.Around, err = intField(&raw, FieldAround, 0, rank.MaxAround, 0); err != nil {
		return m, err
	}
	if m.Offset, err = intField(&raw, FieldOffset, 0, MaxOffset, 0); err != nil {
		return m, err
	}
	if m.Limit, err = intField(&raw, FieldLimit, 1, MaxLimit, DefaultLimit); err != nil {
		return m, err
	}
	if typ == TypeScore {
		if m.Op, m.Amount, err = scoreNumber(&raw); err != nil {
			return m, err
		}
		if m.At, err = atField(&raw); err != nil {
			return m, err
		}
		m.Meta, err = metaField(&raw)
	}
	if typ == TypeSubscribe {
		if m.Members, m.WithMeta, err = subscribeFields(&raw); err != nil {
			return m, err
		}
		m.Since, err = sinceField(&raw)
	}
	return m, err
}

// DecodeScore parses one REST score event ({"id","member","delta"|"value"})
// with the rules, and the error messages, of a WebSocket score: the same
// fault gets the same words on both paths. member is required, as only
// server and admin tokens post scores over REST. The member's and board's
// ids are checked against their patterns by the caller (rank's rules).
//
// On failure, s.ID is the event's id whenever it is a JSON string, valid
// or not, so the answer can say which element it is.
func DecodeScore(b []byte) (s Score, err error) {
	var raw rawFields
	scanErr := scanObject(b, scoreFields, "a score event", &raw)
	s.ID, err = eventID(&raw)
	if scanErr != nil {
		return s, scanErr
	}
	if err != nil {
		return s, err
	}
	if s.Member, err = stringField(&raw, FieldMember); err != nil {
		return s, err
	}
	if s.Op, s.Amount, err = scoreNumber(&raw); err != nil {
		return s, err
	}
	if s.At, err = atField(&raw); err != nil {
		return s, err
	}
	s.HasAt = raw.has&FieldAt != 0
	if s.Meta, err = metaField(&raw); err != nil {
		return s, err
	}
	// Checked last, where the hub checks a server's member: after the
	// message's shape, so an event with several faults names the same one
	// on both paths.
	if raw.has&FieldMember == 0 {
		return s, MissingField("member")
	}
	return s, nil
}

// eventID reads the id field, the request id and idempotency key (R4). The
// id is returned whenever it is a JSON string, even when it is refused.
func eventID(raw *rawFields) (string, error) {
	if raw.has&FieldID == 0 {
		return "", MissingField("id")
	}
	id, ok := jsonString(raw.get(FieldID))
	if !ok || !ValidRequestID(id) {
		return id, BadRequest("field id must be a string of 1-64 characters [A-Za-z0-9_.:-]")
	}
	return id, nil
}

// scoreNumber reads a score event's number: exactly one of delta and
// value, a JSON integer within ±rank.MaxScore (R6).
func scoreNumber(raw *rawFields) (rank.Op, int64, error) {
	var op rank.Op
	f := raw.has & (FieldDelta | FieldValue)
	switch f {
	case FieldDelta:
		op = rank.OpDelta
	case FieldValue:
		op = rank.OpValue
	case 0:
		return 0, 0, MissingField("delta or value")
	default:
		return 0, 0, BadRequest("send delta or value, not both")
	}
	n, ok := ParseScore(raw.get(f))
	if !ok {
		return op, 0, fmt.Errorf("%w: %s must be a JSON integer within ±(2^53-1)", ErrInvalidScore, f)
	}
	return op, n, nil
}

// atField reads a score's optional at: a JSON integer of unix ms, 0 up
// to 2^53-1 (how far ahead of the store's clock it may be is the store's
// rule).
func atField(raw *rawFields) (int64, error) {
	if raw.has&FieldAt == 0 {
		return 0, nil
	}
	n, ok := ParseScore(raw.get(FieldAt))
	if !ok || n < 0 {
		return 0, BadRequest("field at must be a JSON integer of unix milliseconds")
	}
	return n, nil
}

// metaField reads a score's optional meta (§11): a JSON object whose
// encoding is at most meta.Max bytes, copied out of the frame.
func metaField(raw *rawFields) (meta.Meta, error) {
	if raw.has&FieldMeta == 0 {
		return "", nil
	}
	m, err := meta.Parse(raw.get(FieldMeta))
	if err != nil {
		return "", BadRequest("field meta must be a JSON object of at most 512 bytes")
	}
	return m, nil
}

// rawFields holds the raw JSON value of each field present.
type rawFields struct {
	has Field
	raw [len(fieldNames)][]byte // by bit position of the field
}

func (r *rawFields) get(f Field) []byte { return r.raw[bits.TrailingZeros32(uint32(f))] }

// scanObject splits one JSON object into the raw values of its fields,
// refusing anything but exactly one object, names outside known, and
// duplicates. After a refused name it scans on (keeping the first of each
// field) so that the caller can still read the id to echo; the first such
// fault is returned. json.Valid vouches for the syntax first, so the scan
// below only has to find where each key and value ends; it allocates
// nothing unless it fails. what names the object in the error.
func scanObject(b []byte, known Field, what string, out *rawFields) error {
	if !json.Valid(b) {
		return BadRequest("malformed JSON")
	}
	i := skipSpace(b, 0)
	if b[i] != '{' {
		return BadRequest(what + " must be one JSON object")
	}
	i = skipSpace(b, i+1)
	if b[i] == '}' {
		return nil
	}
	var fault error
	for {
		end := stringEnd(b, i)
		f, ok := fieldOfKey(b[i:end])
		ok = ok && known&f != 0
		switch {
		case !ok:
			if fault == nil {
				name, _ := keyName(b[i:end])
				fault = BadRequest(fmt.Sprintf("unknown field %q", truncate(name, 32)))
			}
		case out.has&f != 0:
			if fault == nil {
				fault = BadRequest(fmt.Sprintf("duplicate field %q", f))
			}
			ok = false // the first one stays
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // past ':'
		vend := valueEnd(b, i)
		if ok {
			out.has |= f
			out.raw[bits.TrailingZeros32(uint32(f))] = b[i:vend]
		}
		i = skipSpace(b, vend)
		if b[i] == '}' {
			return fault
		}
		i = skipSpace(b, i+1) // past ','
	}
}

// fieldOfKey maps a quoted key to its field without allocating in the
// common case (no escapes): fieldOf keeps no reference to the name, so the
// conversion below stays on the stack.
func fieldOfKey(q []byte) (Field, bool) {
	if bytes.IndexByte(q, '\\') < 0 {
		return fieldOf(string(q[1 : len(q)-1]))
	}
	name, _ := keyName(q) // "" when it fails, which names no field
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

// stringField reads an optional string field ("" when absent).
func stringField(raw *rawFields, f Field) (string, error) {
	if raw.has&f == 0 {
		return "", nil
	}
	s, ok := jsonString(raw.get(f))
	if !ok {
		return "", BadRequest("field " + f.String() + " must be a string")
	}
	return s, nil
}

// intField reads an optional integer field within [lo, hi], def when absent.
func intField(raw *rawFields, f Field, lo, hi, def int) (int, error) {
	if raw.has&f == 0 {
		return def, nil
	}
	n, ok := jsonInt(raw.get(f))
	if !ok || n < lo || n > hi {
		return 0, BadRequest(fmt.Sprintf("field %s must be an integer within %d..%d", f, lo, hi))
	}
	return n, nil
}

// typeOf decodes the type field, returning the package constant for a
// known type so that the common case allocates nothing.
func typeOf(raw []byte) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' {
		switch string(raw[1 : len(raw)-1]) {
		case TypeScore:
			return TypeScore, true
		case TypeSubscribe:
			return TypeSubscribe, true
		case TypeUnsubscribe:
			return TypeUnsubscribe, true
		case TypePage:
			return TypePage, true
		case TypeRank:
			return TypeRank, true
		case TypeAuth:
			return TypeAuth, true
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
	n, ok := ParseScore(raw)
	if !ok || n > MaxOffset || n < -MaxOffset {
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
	n, ok := ParseScore(raw)
	if !ok || n <= 0 {
		return "", false
	}
	return strconv.FormatInt(n, 10), true
}

func lowestBit(f Field) Field { return f & -f }

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
