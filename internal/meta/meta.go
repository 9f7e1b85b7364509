// Package meta is a score's metadata (docs/protocol.md §11): a JSON object
// the game attaches to a score (a replay link, a loadout), kept with the
// score it came with and served as the bytes the client sent.
package meta

import (
	"encoding/json"
	"errors"
)

// Max is the largest encoding of a meta object, in bytes.
const Max = 512

// Meta is one raw JSON object, or "" for none. A string rather than a
// json.RawMessage so the entries that carry it stay comparable, which the
// live frames rely on to tell a change from none.
type Meta string

// ErrInvalid says a meta is not a JSON object of at most Max bytes.
var ErrInvalid = errors.New("meta must be a JSON object of at most 512 bytes")

// Parse copies raw, a JSON value, into a Meta after checking it is an
// object of at most Max bytes; a nil raw is no meta. The copy matters:
// raw usually points into a read buffer that is reused.
func Parse(raw []byte) (Meta, error) {
	if raw == nil {
		return "", nil
	}
	if len(raw) > Max || len(raw) < 2 || raw[0] != '{' || !json.Valid(raw) {
		return "", ErrInvalid
	}
	return Meta(raw), nil
}

// Valid reports whether m is "" or a JSON object of at most Max bytes.
func (m Meta) Valid() bool {
	if m == "" {
		return true
	}
	_, err := Parse([]byte(m))
	return err == nil
}

// MarshalJSON writes the stored bytes as they are (null for none).
func (m Meta) MarshalJSON() ([]byte, error) {
	if m == "" {
		return []byte("null"), nil
	}
	return []byte(m), nil
}

// UnmarshalJSON keeps the raw object (a client reading entries); null is
// none.
func (m *Meta) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*m = ""
		return nil
	}
	v, err := Parse(b)
	if err != nil {
		return err
	}
	*m = v
	return nil
}
