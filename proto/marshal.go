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
// refusals are encoded with it.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}
