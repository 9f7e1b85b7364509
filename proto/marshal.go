package proto

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal without the HTML escaping of <, > and &: the
// gateway's JSON is decoded by programs and pages, never pasted into HTML
// (REST answers are application/json, frames WebSocket text), so a
// message saying "Authorization: Bearer <jwt>" says it, not
// "Bearer \u003cjwt\u003e". REST answers and the hub's frames and
// refusals are encoded with it. It costs json.Marshal and, only when the
// output holds a \u00 escape, one pass over it in place.
func Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || !bytes.Contains(b, []byte(`\u00`)) {
		return b, err
	}
	return unescapeHTML(b), nil
}

// unescapeHTML turns encoding/json's \u003c, \u003e and \u0026 escapes
// back into <, > and &, in place, leaving every other escape (\\u003c is a
// backslash and the text u003c) as it is.
func unescapeHTML(b []byte) []byte {
	out := b[:0]
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+5 < len(b) && b[i+2] == '0' && b[i+3] == '0' {
			c := byte(0)
			switch string(b[i+4 : i+6]) {
			case "3c":
				c = '<'
			case "3e":
				c = '>'
			case "26":
				c = '&'
			}
			if c != 0 {
				out = append(out, c)
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1]) // an escape of its own, kept whole
		i++
	}
	return out
}
