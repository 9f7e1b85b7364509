package meta

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParse: a JSON object of at most Max bytes, kept byte for byte;
// anything else is ErrInvalid.
func TestParse(t *testing.T) {
	t.Parallel()
	fits := `{"r":"` + strings.Repeat("x", Max-8) + `"}`
	for _, ok := range []string{`{}`, `{"replay":"https://r.example/1", "k":[1,2]}`, fits} {
		m, err := Parse([]byte(ok))
		if err != nil || string(m) != ok {
			t.Errorf("Parse(%.40s) = %.40q, %v", ok, m, err)
		}
	}
	for _, bad := range []string{``, `[]`, `"x"`, `null`, `7`, `{`, `{"a":1}x`, fits[:len(fits)-2] + `xx"}`} {
		if _, err := Parse([]byte(bad)); err != ErrInvalid {
			t.Errorf("Parse(%.40s): %v, want ErrInvalid", bad, err)
		}
	}
	if m, err := Parse(nil); m != "" || err != nil {
		t.Errorf("Parse(nil) = %q, %v", m, err)
	}
}

// TestJSON: a Meta encodes as the object it holds, none as null (or not
// at all with omitempty), and decodes back.
func TestJSON(t *testing.T) {
	t.Parallel()
	type entry struct {
		Meta Meta `json:"meta,omitempty"`
	}
	b, _ := json.Marshal(entry{Meta: `{"a":[1,{"b":null}]}`})
	if string(b) != `{"meta":{"a":[1,{"b":null}]}}` {
		t.Errorf("encoded %s", b)
	}
	if b, _ := json.Marshal(entry{}); string(b) != `{}` {
		t.Errorf("no meta encoded %s", b)
	}
	var e entry
	if err := json.Unmarshal([]byte(`{"meta":{"x":"y"}}`), &e); err != nil || e.Meta != `{"x":"y"}` {
		t.Errorf("decoded %q, %v", e.Meta, err)
	}
	if err := json.Unmarshal([]byte(`{"meta":[1]}`), &e); err == nil {
		t.Error("an array decoded as meta")
	}
}
