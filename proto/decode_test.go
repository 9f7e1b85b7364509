package proto

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/rank"
)

func TestDecodeMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		code string // "" = ok
		id   string // the id the error echoes
	}{
		{`{"type":"score","id":"a1","board":"b","delta":5}`, "", "a1"},
		{`{"type":"score","id":"a1","board":"b","value":-5,"member":"m"}`, "", "a1"},
		{`{"type":"score","id":"a1","board":"b","delta":5,"at":1764612000000}`, "", "a1"},
		{`{"type":"score","id":"a1","board":"b","delta":5,"at":"now"}`, CodeBadRequest, "a1"},
		{`{"type":"page","id":"a1","board":"b","at":1}`, CodeBadRequest, "a1"},
		{`{"type":"score","id":"a1","board":"b","delta":5,"meta":{"replay":"x"}}`, "", "a1"},
		{`{"type":"score","id":"a1","board":"b","delta":5,"meta":7}`, CodeBadRequest, "a1"},
		{`{"type":"page","id":"a1","board":"b","meta":{}}`, CodeBadRequest, "a1"},
		{`  {"id":"a:1.x-_","type":"page","board":"b","offset":0,"limit":100,"period":"previous"}  `, "", "a:1.x-_"},
		{`{"type":"rank","id":"a","board":"b","member":"m","around":25,"period":2024050112}`, "", "a"},
		{`{"type":"subscribe","id":"a","board":"b","top":0,"around":0}`, "", "a"},
		{`{"type":"unsubscribe","id":"a","board":"b"}`, "", "a"},
		{`{"type":"auth","id":"a","token":"x.y.z"}`, "", "a"},
		{`{"type":"subscribe","id":"a","board":"b","cohort":"silver-3","top":50}`, "", "a"},
		{`{"type":"subscribe","id":"a","board":"b","cohort":3}`, CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":"b","cohort":"1"}`, CodeBadRequest, "a"},
		{`{"type":"score","id":"a","board":"b","delta":1,"cohort":"1"}`, CodeBadRequest, "a"},

		{``, CodeBadRequest, ""},
		{`[]`, CodeBadRequest, ""},
		{`"score"`, CodeBadRequest, ""},
		{`{"type":"page","id":"a","board":"b"`, CodeBadRequest, ""},
		{`{"type":"page","id":"a","board":"b"} {}`, CodeBadRequest, ""},
		{`{"type":"page","id":"a","board":"b"}x`, CodeBadRequest, ""},
		// A refused name still lets the id be echoed.
		{`{"Type":"page","id":"a","board":"b"}`, CodeBadRequest, "a"},
		{`{"type":"page","ID":"a","board":"b"}`, CodeBadRequest, ""},
		{`{"type":"page","id":"a","id":"b","board":"b"}`, CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":"b","extra":1}`, CodeBadRequest, "a"},
		{`{"type":"page","board":"b"}`, CodeBadRequest, ""},
		{`{"type":"page","id":"","board":"b"}`, CodeBadRequest, ""},
		// An invalid id that is a string is echoed too (REST does the same).
		{`{"type":"page","id":"a b","board":"b"}`, CodeBadRequest, "a b"},
		{`{"type":"page","id":7,"board":"b"}`, CodeBadRequest, ""},
		{`{"type":"page","id":"` + strings.Repeat("x", 65) + `","board":"b"}`, CodeBadRequest, strings.Repeat("x", 65)},
		{`{"id":"a","board":"b"}`, CodeBadRequest, "a"},
		{`{"type":"dance","id":"a"}`, CodeBadRequest, "a"},
		{`{"type":null,"id":"a"}`, CodeBadRequest, "a"},
		{`{"type":"page","id":"a"}`, CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":null}`, CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":"b","delta":1}`, CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":"b","limit":0}`, CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":"b","limit":101}`, CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":"b","limit":1.0}`, CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":"b","limit":"5"}`, CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":"b","offset":-1}`, CodeBadRequest, "a"},
		{`{"type":"subscribe","id":"a","board":"b","top":101}`, CodeBadRequest, "a"},
		{`{"type":"subscribe","id":"a","board":"b","around":26}`, CodeBadRequest, "a"},
		{`{"type":"rank","id":"a","board":"b","period":-3}`, CodeBadRequest, "a"},
		{`{"type":"score","id":"a","board":"b"}`, CodeBadRequest, "a"},
		{`{"type":"score","id":"a","board":"b","delta":1,"value":1}`, CodeBadRequest, "a"},
		{`{"type":"score","id":"a","board":"b","delta":1,"top":1}`, CodeBadRequest, "a"},
		{`{"type":"auth","id":"a"}`, CodeBadRequest, "a"},
		{`{"type":"score","id":"a","board":"b","delta":1.5}`, CodeInvalidScore, "a"},
		{`{"type":"score","id":"a","board":"b","delta":1e3}`, CodeInvalidScore, "a"},
		{`{"type":"score","id":"a","board":"b","delta":"10"}`, CodeInvalidScore, "a"},
		{`{"type":"score","id":"a","board":"b","delta":null}`, CodeInvalidScore, "a"},
		{`{"type":"score","id":"a","board":"b","value":9007199254740992}`, CodeInvalidScore, "a"},
		{`{"type":"score","id":"a","board":"b","delta":-0}`, "", "a"},
	} {
		m, err := DecodeMessage([]byte(tc.in))
		if got := codeOrEmpty(err); got != tc.code {
			t.Errorf("%s: code %q (%v), want %q", tc.in, got, err, tc.code)
			continue
		}
		if m.ID != tc.id {
			t.Errorf("%s: id %q, want %q", tc.in, m.ID, tc.id)
		}
	}
}

func TestDecodeMessageFields(t *testing.T) {
	t.Parallel()
	m, err := DecodeMessage([]byte(`{"type":"score","id":"s","board":"b","member":"m","value":9007199254740991}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Type != TypeScore || m.Op != rank.OpValue || m.Amount != rank.MaxScore || m.Board != "b" || m.Member != "m" || m.Has&FieldMember == 0 {
		t.Fatalf("%+v", m)
	}
	m, err = DecodeMessage([]byte(`{"type":"score","id":"s","board":"b\u00e9","delta":-3}`))
	if err != nil || m.Op != rank.OpDelta || m.Amount != -3 || m.Board != "bé" || m.Has&FieldMember != 0 {
		t.Fatalf("delta %+v %v", m, err)
	}
	m, err = DecodeMessage([]byte(`{"type":"subscribe","id":"s","board":"b"}`))
	if err != nil || m.Top != -1 || m.Around != 0 || m.Has&FieldMember != 0 {
		t.Fatalf("defaults %+v %v", m, err)
	}
	m, err = DecodeMessage([]byte(`{"type":"subscribe","id":"s","board":"b","cohort":"gold-2"}`))
	if err != nil || m.Cohort != "gold-2" || m.Has&FieldCohort == 0 {
		t.Fatalf("cohort %+v %v", m, err)
	}
	m, err = DecodeMessage([]byte(`{"type":"page","id":"s","board":"b"}`))
	if err != nil || m.Offset != 0 || m.Limit != 10 {
		t.Fatalf("page defaults %+v %v", m, err)
	}
	m, err = DecodeMessage([]byte(`{"type":"rank","id":"s","board":"b","period":7}`))
	if err != nil || m.Period != "7" {
		t.Fatalf("period index %+v %v", m, err)
	}
}

func TestDecodeScore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Score  // when ok
		msg  string // "" = ok, else the whole error message
	}{
		{`{"id":"a1","member":"alice","delta":10}`, Score{ID: "a1", Member: "alice", Op: rank.OpDelta, Amount: 10}, ""},
		{`{"id":"a1","member":"alice","delta":10,"at":1764612000000}`, Score{ID: "a1", Member: "alice", Op: rank.OpDelta, Amount: 10, At: 1764612000000, HasAt: true}, ""},
		{`{"id":"a1","member":"alice","delta":10,"at":0}`, Score{ID: "a1", Member: "alice", Op: rank.OpDelta, Amount: 10, HasAt: true}, ""},
		{`{"id":"a1","member":"alice","delta":10,"at":1.5e12}`, Score{ID: "a1"}, "bad request: field at must be a JSON integer of unix milliseconds"},
		{`{"id":"a1","member":"alice","delta":10,"at":"2026-12-01T18:00:00Z"}`, Score{ID: "a1"}, "bad request: field at must be a JSON integer of unix milliseconds"},
		{`{"id":"a1","member":"alice","delta":10,"at":-1}`, Score{ID: "a1"}, "bad request: field at must be a JSON integer of unix milliseconds"},
		{`{"id":"a1","member":"alice","delta":10,"at":null}`, Score{ID: "a1"}, "bad request: field at must be a JSON integer of unix milliseconds"},
		{` { "value" : -9007199254740991 , "member" : "m" , "id" : "x" } `, Score{ID: "x", Member: "m", Op: rank.OpValue, Amount: -rank.MaxScore}, ""},
		{`{"id":"\u0061","member":"\u00e9","delta":0}`, Score{ID: "a", Member: "é", Op: rank.OpDelta}, ""},
		// meta (§11): a JSON object of at most 512 bytes, kept as sent.
		{`{"id":"a1","member":"alice","value":3,"meta":{"replay":"https://r.example/1", "k":[1,2]}}`, Score{ID: "a1", Member: "alice", Op: rank.OpValue, Amount: 3, Meta: `{"replay":"https://r.example/1", "k":[1,2]}`}, ""},
		{`{"id":"a1","member":"alice","value":3,"meta":{}}`, Score{ID: "a1", Member: "alice", Op: rank.OpValue, Amount: 3, Meta: `{}`}, ""},
		{`{"id":"a1","member":"alice","value":3,"meta":{"r":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}`, Score{ID: "a1", Member: "alice", Op: rank.OpValue, Amount: 3, Meta: `{"r":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`}, ""},
		{`{"id":"a1","member":"alice","value":3,"meta":{"r":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}`, Score{ID: "a1"}, "bad request: field meta must be a JSON object of at most 512 bytes"},
		{`{"id":"a1","member":"alice","value":3,"meta":[1]}`, Score{ID: "a1"}, "bad request: field meta must be a JSON object of at most 512 bytes"},
		{`{"id":"a1","member":"alice","value":3,"meta":"x"}`, Score{ID: "a1"}, "bad request: field meta must be a JSON object of at most 512 bytes"},
		{`{"id":"a1","member":"alice","value":3,"meta":null}`, Score{ID: "a1"}, "bad request: field meta must be a JSON object of at most 512 bytes"},
		{`{"id":"a1","member":"alice","delta":1.5}`, Score{ID: "a1"}, "invalid score: delta must be a JSON integer within ±(2^53-1)"},
		{`{"id":"a1","member":"alice","value":"3"}`, Score{ID: "a1"}, "invalid score: value must be a JSON integer within ±(2^53-1)"},
		{`{"id":"a1","member":"alice"}`, Score{ID: "a1"}, "bad request: missing field delta or value"},
		{`{"id":"a1","member":"alice","delta":1,"value":1}`, Score{ID: "a1"}, "bad request: send delta or value, not both"},
		{`{"id":"a1","delta":1}`, Score{ID: "a1"}, "bad request: missing field member"},
		{`{"id":"a1","delta":1.5}`, Score{ID: "a1"}, "invalid score: delta must be a JSON integer within ±(2^53-1)"},
		{`{"id":"a1","member":7,"delta":1}`, Score{ID: "a1"}, "bad request: field member must be a string"},
		{`{"id":"a1","member":"m","delta":1,"extra":true}`, Score{ID: "a1"}, `bad request: unknown field "extra"`},
		{`{"extra":true,"id":"a1","member":"m","delta":1}`, Score{ID: "a1"}, `bad request: unknown field "extra"`},
		{`{"id":"a1","member":"m","delta":1,"board":"b"}`, Score{ID: "a1"}, `bad request: unknown field "board"`},
		{`{"id":"a1","Member":"m","delta":1}`, Score{ID: "a1"}, `bad request: unknown field "Member"`},
		{`{"id":"a1","member":"m","delta":1,"delta":2}`, Score{ID: "a1"}, `bad request: duplicate field "delta"`},
		{`{"id":"a1","id":"a2","member":"m","delta":1}`, Score{ID: "a1"}, `bad request: duplicate field "id"`},
		{`{"member":"m","delta":1}`, Score{}, "bad request: missing field id"},
		{`{"id":"a b","member":"m","delta":1}`, Score{ID: "a b"}, "bad request: field id must be a string of 1-64 characters [A-Za-z0-9_.:-]"},
		{`{"id":42,"member":"m","delta":1}`, Score{}, "bad request: field id must be a string of 1-64 characters [A-Za-z0-9_.:-]"},
		{`42`, Score{}, "bad request: a score event must be one JSON object"},
		{`{"id":"a1"`, Score{}, "bad request: malformed JSON"},
	} {
		s, err := DecodeScore([]byte(tc.in))
		switch {
		case tc.msg == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.msg != "" && (err == nil || err.Error() != tc.msg):
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.msg)
		case tc.msg == "" && s != tc.want, tc.msg != "" && s.ID != tc.want.ID:
			t.Errorf("%s: %+v, want %+v", tc.in, s, tc.want)
		}
	}
}

// TestFaultCodes: the decoders' errors carry their codes through CodeOf
// and match the sentinels with errors.Is.
func TestFaultCodes(t *testing.T) {
	t.Parallel()
	_, err := DecodeScore([]byte(`{"id":"a","member":"m","delta":1e3}`))
	if !errors.Is(err, ErrInvalidScore) || CodeOf(err) != CodeInvalidScore {
		t.Fatalf("%v: code %s", err, CodeOf(err))
	}
	_, err = DecodeMessage([]byte(`{"type":"score","id":"a"}`))
	if !errors.Is(err, ErrBadRequest) || CodeOf(err) != CodeBadRequest || err.Error() != "bad request: missing field board" {
		t.Fatalf("%v: code %s", err, CodeOf(err))
	}
}

// TestDecodeAllocs holds the decoders' allocation profile: only the
// strings they return (id, board, member) are allocated.
func TestDecodeAllocs(t *testing.T) {
	msg := []byte(`{"type":"score","id":"c1-r12345","board":"run_hero","member":"alice","delta":42}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = DecodeMessage(msg) }); n > 3 {
		t.Errorf("DecodeMessage: %v allocations, want at most 3", n)
	}
	ev := []byte(`{"id":"c1-r12345","member":"alice","delta":42}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = DecodeScore(ev) }); n > 2 {
		t.Errorf("DecodeScore: %v allocations, want at most 2", n)
	}
}

func BenchmarkDecodeMessage(b *testing.B) {
	msg := []byte(`{"type":"score","id":"c1-r12345","board":"run_hero","member":"alice","delta":42}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeMessage(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeScore(b *testing.B) {
	ev := []byte(`{"id":"c1-r12345","member":"alice","delta":42}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeScore(ev); err != nil {
			b.Fatal(err)
		}
	}
}

func codeOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return CodeOf(err)
}

// FuzzDecodeMessage: DecodeMessage never panics, fails only with the
// contract's codes, and what it accepts is a JSON object that names a known
// type and a valid id. Seeded with real frames (testdata/fuzz).
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"score","id":"a1","board":"b","delta":5}`,
		`{"type":"score","id":"a1","board":"b","value":-9007199254740991,"member":"m"}`,
		`{"type":"subscribe","id":"s","board":"b","top":10,"around":5,"member":"m"}`,
		`{"type":"page","id":"p","board":"b","offset":0,"limit":100,"period":"previous"}`,
		`{"type":"rank","id":"r","board":"b","member":"m","around":2,"period":20240501}`,
		`{"type":"auth","id":"t","token":"x.y.z"}`,
		`{"type":"unsubscribe","id":"u","board":"b"}`,
		`{"type":"score","id":"a","board":"b","delta":1e3}`,
		`{"Type":"page","id":"a","board":"b"}`,
		`{"type":"page","id":"a","id":"a","board":"b"}`,
		`{"type":"page","id":"\u0061","board":"b"}`,
		`{}`, `[`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMessage(b)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrInvalidScore) {
				t.Fatalf("error %v is neither bad_request nor invalid_score", err)
			}
			return
		}
		if _, _, ok := fieldsOf(m.Type); !ok || !ValidRequestID(m.ID) {
			t.Fatalf("accepted %q as %+v", b, m)
		}
		if m.Type == TypeScore && (m.Op != rank.OpDelta && m.Op != rank.OpValue || m.Amount > rank.MaxScore || m.Amount < -rank.MaxScore) {
			t.Fatalf("accepted score %q as %+v", b, m)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatalf("accepted non-object %q: %v", b, err)
		}
	})
}

// FuzzDecodeScore: DecodeScore never panics and fails only with the
// contract's codes; and a REST event decodes exactly as the same event sent
// as a WebSocket score does (type and board spliced in): both accept it with
// the same fields, or both refuse it with the same message. Seeded with real
// REST elements.
func FuzzDecodeScore(f *testing.F) {
	for _, s := range []string{
		`{"id":"e1-0","member":"m0","delta":0}`,
		`{"id":"a2","member":"alice","delta":15}`,
		`{"id":"v","member":"m@x.io","value":-9007199254740991}`,
		`{"id":"a3","member":"alice","delta":1.5}`,
		`{"id":"a10","member":"alice","delta":1,"value":3}`,
		`{"id":"a11","member":"alice"}`,
		`{"id":"a14","member":7,"delta":1}`,
		`{"id":"a15","member":"alice","delta":1,"extra":true}`,
		`{"id":"a17","member":"alice","delta":1,"delta":2}`,
		`{"ID":"a19","member":"alice","delta":1}`,
		`{"id":"bad id","member":"alice","delta":1}`,
		`{"id":"\u0061","member":"b","value":"1"}`,
		`{}`, `42`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeScore(b)
		if err != nil && !errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrInvalidScore) {
			t.Fatalf("error %v is neither bad_request nor invalid_score", err)
		}
		if err == nil && (!ValidRequestID(s.ID) || s.Op == 0 || s.Amount > rank.MaxScore || s.Amount < -rank.MaxScore) {
			t.Fatalf("accepted %q as %+v", b, s)
		}
		frame, ok := asScoreFrame(b)
		if !ok {
			return
		}
		m, werr := DecodeMessage(frame)
		switch {
		case err == nil:
			if werr != nil || m.ID != s.ID || m.Member != s.Member || m.Op != s.Op || m.Amount != s.Amount {
				t.Fatalf("REST accepted %q as %+v; WebSocket %q gave %+v, %v", b, s, frame, m, werr)
			}
		case werr == nil:
			// Only a member is optional on the WebSocket (the role decides).
			if err.Error() != "bad request: missing field member" || m.Has&FieldMember != 0 {
				t.Fatalf("WebSocket accepted %q as %+v; REST refused %q: %v", frame, m, b, err)
			}
		case !strings.Contains(string(b), `"type"`) && !strings.Contains(string(b), `"board"`) &&
			!strings.Contains(string(b), `\`) && err.Error() != werr.Error():
			// Without the names the splice adds (or escapes that could spell
			// them), both refuse for the same first fault.
			t.Fatalf("REST %q: %v; WebSocket %q: %v", b, err, frame, werr)
		}
	})
}

// asScoreFrame makes a REST score event a WebSocket score frame by adding
// type and board after its opening brace; ok is false for anything but a
// valid JSON object.
func asScoreFrame(b []byte) ([]byte, bool) {
	if !json.Valid(b) {
		return nil, false
	}
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return nil, false
	}
	sep := ","
	if bytes.HasPrefix(bytes.TrimLeft(t[1:], " \t\r\n"), []byte("}")) {
		sep = ""
	}
	return append([]byte(`{"type":"score","board":"b"`+sep), t[1:]...), true
}
