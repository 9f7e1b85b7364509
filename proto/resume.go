package proto

import (
	"fmt"
	"strings"
)

// TypeDraining is the hint a node sends every connection when it begins to
// drain (§15): reconnect after ReconnectAfterMS, to any node.
const TypeDraining = "draining"

// Draining is the drain hint (§15): the connection is closed with 1001
// (R14) at the earliest after ReconnectAfterMS; the client reconnects then,
// not before.
type Draining struct {
	Type             string `json:"type"`
	ReconnectAfterMS int64  `json:"reconnect_after_ms"`
}

// Since is subscribe's resume point (§15): the epoch of the client's last
// `subscribed` for the board and the greatest seq it received on it.
type Since struct {
	Epoch string `json:"epoch"`
	Seq   int64  `json:"seq"`
}

// MaxEpoch bounds an epoch's length; the gateway's own are far shorter.
const MaxEpoch = 64

// sinceField reads subscribe's optional since: exactly one JSON object with
// the keys epoch (a string of 1..MaxEpoch printable ASCII characters) and
// seq (an integer 0..2^53-1), each once, nothing else.
func sinceField(raw *rawFields) (*Since, error) {
	if raw.has&FieldSince == 0 {
		return nil, nil
	}
	b := raw.get(FieldSince)
	bad := func(why string) error {
		return BadRequest("field since must be an object {\"epoch\": string, \"seq\": integer}: " + why)
	}
	if len(b) == 0 || b[0] != '{' {
		return nil, bad("not an object")
	}
	var s Since
	var haveEpoch, haveSeq bool
	i := skipSpace(b, 1)
	for b[i] != '}' {
		end := stringEnd(b, i)
		name, ok := keyName(b[i:end])
		if !ok {
			return nil, bad("malformed key")
		}
		i = skipSpace(b, skipSpace(b, end)+1) // past ':'
		vend := valueEnd(b, i)
		v := b[i:vend]
		switch {
		case name == "epoch" && !haveEpoch:
			e, ok := jsonString(v)
			if !ok || !validEpoch(e) {
				return nil, bad(fmt.Sprintf("epoch must be 1..%d printable ASCII characters", MaxEpoch))
			}
			s.Epoch, haveEpoch = e, true
		case name == "seq" && !haveSeq:
			n, ok := ParseScore(v)
			if !ok || n < 0 {
				return nil, bad("seq must be a non-negative integer")
			}
			s.Seq, haveSeq = n, true
		case name == "epoch" || name == "seq":
			return nil, bad("duplicate key " + name)
		default:
			return nil, bad(fmt.Sprintf("unknown key %q", truncate(name, 32)))
		}
		i = skipSpace(b, vend)
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	switch {
	case !haveEpoch && !haveSeq:
		return nil, bad("missing epoch and seq")
	case !haveEpoch:
		return nil, bad("missing epoch")
	case !haveSeq:
		return nil, bad("missing seq")
	}
	return &s, nil
}

// validEpoch: non-ASCII bytes decode to runes above '~', so they fail too.
func validEpoch(e string) bool {
	return len(e) > 0 && len(e) <= MaxEpoch && !strings.ContainsFunc(e, func(r rune) bool { return r <= ' ' || r > '~' })
}
