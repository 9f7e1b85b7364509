package proto

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeSince(t *testing.T) {
	t.Parallel()
	const sub = `{"type":"subscribe","id":"s","board":"b","since":`
	for _, tc := range []struct {
		since string
		want  *Since // nil: bad_request
	}{
		{`{"epoch":"e1","seq":42}`, &Since{"e1", 42}},
		{` { "seq" : 0 , "epoch" : "a.b-c_d" } `, &Since{"a.b-c_d", 0}},
		{`{"epoch":"e","seq":9007199254740991}`, &Since{"e", 1<<53 - 1}},
		{`{"epoch":"` + strings.Repeat("x", MaxEpoch) + `","seq":1}`, &Since{strings.Repeat("x", MaxEpoch), 1}},

		{`null`, nil},
		{`[]`, nil},
		{`"e1:42"`, nil},
		{`{}`, nil},
		{`{"epoch":"e1"}`, nil},
		{`{"seq":1}`, nil},
		{`{"epoch":"e1","seq":1,"x":1}`, nil},
		{`{"epoch":"e1","seq":1,"epoch":"e2"}`, nil},
		{`{"epoch":"e1","seq":1,"seq":2}`, nil},
		{`{"Epoch":"e1","seq":1}`, nil},
		{`{"epoch":"","seq":1}`, nil},
		{`{"epoch":"a b","seq":1}`, nil},
		{`{"epoch":"é","seq":1}`, nil},
		{`{"epoch":"` + strings.Repeat("x", MaxEpoch+1) + `","seq":1}`, nil},
		{`{"epoch":7,"seq":1}`, nil},
		{`{"epoch":"e","seq":-1}`, nil},
		{`{"epoch":"e","seq":1.5}`, nil},
		{`{"epoch":"e","seq":"1"}`, nil},
		{`{"epoch":"e","seq":1e3}`, nil},
		{`{"epoch":"e","seq":9007199254740992}`, nil},
	} {
		m, err := DecodeMessage([]byte(sub + tc.since + `}`))
		switch {
		case tc.want == nil && (err == nil || CodeOf(err) != CodeBadRequest):
			t.Errorf("since %s: err %v, want bad_request", tc.since, err)
		case tc.want == nil && m.ID != "s":
			t.Errorf("since %s: the error echoes id %q, want s", tc.since, m.ID)
		case tc.want != nil && err != nil:
			t.Errorf("since %s: %v", tc.since, err)
		case tc.want != nil && (m.Since == nil || *m.Since != *tc.want):
			t.Errorf("since %s: decoded %+v, want %+v", tc.since, m.Since, tc.want)
		}
	}
	// Only subscribe carries it.
	for _, msg := range []string{
		`{"type":"page","id":"p","board":"b","since":{"epoch":"e","seq":1}}`,
		`{"type":"unsubscribe","id":"p","board":"b","since":{"epoch":"e","seq":1}}`,
	} {
		if _, err := DecodeMessage([]byte(msg)); CodeOf(err) != CodeBadRequest {
			t.Errorf("%s: err %v, want bad_request", msg, err)
		}
	}
	m, err := DecodeMessage([]byte(`{"type":"subscribe","id":"s","board":"b"}`))
	if err != nil || m.Since != nil {
		t.Errorf("subscribe without since: %+v, %v", m.Since, err)
	}
}

// The client's encoding of a resume decodes to the same resume point.
func TestSinceRoundTrip(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Request{Type: TypeSubscribe, ID: "s", Board: "b", Since: &Since{Epoch: "e9", Seq: 7}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeMessage(b)
	if err != nil || m.Since == nil || *m.Since != (Since{"e9", 7}) {
		t.Fatalf("%s decoded to %+v, %v", b, m.Since, err)
	}
}

func TestSubscribedEncoding(t *testing.T) {
	t.Parallel()
	yes := true
	for _, tc := range []struct {
		in   Subscribed
		want string
	}{
		{Subscribed{Type: TypeSubscribed, ID: "a", Board: "b", Epoch: "e1"}, `{"type":"subscribed","id":"a","board":"b","epoch":"e1"}`},
		{Subscribed{Type: TypeSubscribed, ID: "a", Board: "b", Epoch: "e1", Resumed: &yes}, `{"type":"subscribed","id":"a","board":"b","epoch":"e1","resumed":true}`},
		{Subscribed{Type: TypeSubscribed, ID: "a", Board: "b", Epoch: "e1", Resumed: new(bool)}, `{"type":"subscribed","id":"a","board":"b","epoch":"e1","resumed":false}`},
		{Subscribed{Type: TypeUnsubscribed, ID: "a", Board: "b"}, `{"type":"unsubscribed","id":"a","board":"b"}`},
	} {
		b, _ := json.Marshal(tc.in)
		if string(b) != tc.want {
			t.Errorf("got %s, want %s", b, tc.want)
		}
	}
	b, _ := json.Marshal(Draining{Type: TypeDraining, ReconnectAfterMS: 1250})
	if string(b) != `{"type":"draining","reconnect_after_ms":1250}` {
		t.Errorf("draining: %s", b)
	}
}
