package proto

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestDecodeSubscribeMembers: subscribe's members (1..MaxMembers strings,
// repeats kept once, never with member or around) and meta (a boolean);
// every refusal is a bad_request naming the field.
func TestDecodeSubscribeMembers(t *testing.T) {
	t.Parallel()
	ids := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf(`"m%d"`, i)
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	for _, tc := range []struct {
		in      string
		members []string
		meta    bool
		refused string // the field the bad_request names; "" = ok
	}{
		{`{"type":"subscribe","id":"a","board":"b","members":["x","y","x"]}`, []string{"x", "y"}, false, ""},
		{`{"type":"subscribe","id":"a","board":"b","members":["x"],"top":3,"meta":true}`, []string{"x"}, true, ""},
		{`{"type":"subscribe","id":"a","board":"b","top":3,"meta":false}`, nil, false, ""},
		{`{"type":"subscribe","id":"a","board":"b","meta":true,"around":2}`, nil, true, ""},
		{`{"type":"subscribe","id":"a","board":"b","members":` + ids(MaxMembers) + `}`, nil, false, ""},
		{`{"type":"subscribe","id":"a","board":"b","members":` + ids(MaxMembers+1) + `}`, nil, false, "members"},
		{`{"type":"subscribe","id":"a","board":"b","members":[]}`, nil, false, "members"},
		{`{"type":"subscribe","id":"a","board":"b","members":null}`, nil, false, "members"},
		{`{"type":"subscribe","id":"a","board":"b","members":"x"}`, nil, false, "members"},
		{`{"type":"subscribe","id":"a","board":"b","members":["x",1]}`, nil, false, "members"},
		{`{"type":"subscribe","id":"a","board":"b","members":["x"],"around":1}`, nil, false, "members"},
		{`{"type":"subscribe","id":"a","board":"b","members":["x"],"member":"y"}`, nil, false, "members"},
		{`{"type":"subscribe","id":"a","board":"b","meta":1}`, nil, false, "meta"},
		{`{"type":"subscribe","id":"a","board":"b","meta":{"x":1}}`, nil, false, "meta"},
		{`{"type":"rank","id":"a","board":"b","member":"m","members":["x"]}`, nil, false, "members"},
	} {
		m, err := DecodeMessage([]byte(tc.in))
		switch {
		case tc.refused != "":
			if err == nil || CodeOf(err) != CodeBadRequest || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("%.80s: %v, want a bad_request naming %s", tc.in, err, tc.refused)
			}
		case err != nil:
			t.Errorf("%.80s: %v", tc.in, err)
		case m.WithMeta != tc.meta:
			t.Errorf("%.80s: meta %v", tc.in, m.WithMeta)
		case tc.members != nil && !slices.Equal(m.Members, tc.members):
			t.Errorf("%.80s: members %v, want %v", tc.in, m.Members, tc.members)
		case tc.members == nil && len(m.Members) != 0 && !strings.Contains(tc.in, `"m0"`):
			t.Errorf("%.80s: members %v, want none", tc.in, m.Members)
		}
	}
}
