package client

import (
	"strconv"

	"github.com/wsgateway/wsgateway/proto"
)

// The score path's wire work without reflection: an ack is the reply to
// nearly every call at ingest rates, and encoding/json's decode of it into
// the frame union (and json.Marshal of the request) were a fifth of the
// client's CPU per Score. Anything outside the exact shapes below takes
// encoding/json's path, so the result is the same either way.

// ackView is an ack frame read in place: id, board and member are slices
// of the frame.
type ackView struct {
	id, board, member []byte
	cohort, tier      []byte // cohort and league boards (§12); nil when absent
	region            []byte // region boards (§17); nil when absent
	score, rank, seq  int64
	prevRank, period  int64
	regionRank        int64
	hasPrevRank, dup  bool
	held              bool // §16
}

// parseAck reads an ack exactly as the gateway writes it (proto.AppendAck:
// its keys in its order, period, cohort, tier, region, region_rank and held
// only when set, strings of plain ASCII
// without escapes, integer scores). ok is false for anything else (other
// frames, hot boards' decimal scores, escapes, spaces), which the caller
// then decodes with encoding/json.
func parseAck(b []byte) (a ackView, ok bool) {
	p := wireParser{b: b}
	ok = p.lit(`{"type":"ack","id":`) && p.str(&a.id) &&
		p.lit(`,"board":`) && p.str(&a.board) &&
		p.lit(`,"member":`) && p.str(&a.member) &&
		p.lit(`,"score":`) && p.int(&a.score)
	if !ok {
		return a, false
	}
	// Neither rank nor prev_rank on a sharded board's ack without ranks
	// (R24): a.rank stays 0.
	if p.lit(`,"rank":`) {
		if !p.int(&a.rank) || !p.lit(`,"prev_rank":`) {
			return a, false
		}
		if !p.lit("null") {
			if !p.int(&a.prevRank) {
				return a, false
			}
			a.hasPrevRank = true
		}
	}
	if !p.lit(`,"duplicate":`) {
		return a, false
	}
	switch {
	case p.lit("true"):
		a.dup = true
	case p.lit("false"):
	default:
		return a, false
	}
	if !p.lit(`,"seq":`) || !p.int(&a.seq) {
		return a, false
	}
	if p.lit(`,"period":`) && !p.int(&a.period) {
		return a, false
	}
	if p.lit(`,"cohort":`) && !p.str(&a.cohort) {
		return a, false
	}
	if p.lit(`,"tier":`) && !p.str(&a.tier) {
		return a, false
	}
	if p.lit(`,"region":`) && !p.str(&a.region) {
		return a, false
	}
	if p.lit(`,"region_rank":`) && !p.int(&a.regionRank) {
		return a, false
	}
	a.held = p.lit(`,"held":true`)
	return a, p.lit("}") && p.i == len(p.b)
}

type wireParser struct {
	b []byte
	i int
}

// lit consumes s if the input continues with it.
func (p *wireParser) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// str reads a string of printable ASCII without escapes.
func (p *wireParser) str(out *[]byte) bool {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			*out = p.b[start:j]
			p.i = j + 1
			return true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return false
		}
	}
	return false
}

// int reads a JSON integer (no fraction, no exponent, no leading zero)
// that fits an int64.
func (p *wireParser) int(out *int64) bool {
	j := p.i
	if j < len(p.b) && p.b[j] == '-' {
		j++
	}
	d := j
	for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
		j++
	}
	if j == d || (p.b[d] == '0' && j-d > 1) || j-d > 19 {
		return false
	}
	if j < len(p.b) && (p.b[j] == '.' || p.b[j] == 'e' || p.b[j] == 'E') {
		return false
	}
	v, err := strconv.ParseInt(string(p.b[p.i:j]), 10, 64)
	if err != nil {
		return false
	}
	*out = v
	p.i = j
	return true
}

// appendScoreReq appends the score request json.Marshal(proto.Request)
// would write, byte for byte for a compact meta (board, member and meta
// omitted when empty; key is "delta" or "value"; meta a checked JSON
// object).
func appendScoreReq(b []byte, id, board, member, key string, v int64, meta []byte) []byte {
	b = append(b, `{"type":"score","id":`...)
	b = proto.AppendJSONString(b, id)
	if board != "" {
		b = append(b, `,"board":`...)
		b = proto.AppendJSONString(b, board)
	}
	if member != "" {
		b = append(b, `,"member":`...)
		b = proto.AppendJSONString(b, member)
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	b = strconv.AppendInt(b, v, 10)
	if len(meta) > 0 {
		b = append(b, `,"meta":`...)
		b = append(b, meta...)
	}
	return append(b, '}')
}
