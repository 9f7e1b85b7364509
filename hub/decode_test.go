package hub

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		code string // "" = ok
		id   string // the id the error echoes
	}{
		{`{"type":"score","id":"a1","board":"b","delta":5}`, "", "a1"},
		{`{"type":"score","id":"a1","board":"b","value":-5,"member":"m"}`, "", "a1"},
		{`  {"id":"a:1.x-_","type":"page","board":"b","offset":0,"limit":100,"period":"previous"}  `, "", "a:1.x-_"},
		{`{"type":"rank","id":"a","board":"b","member":"m","around":25,"period":2024050112}`, "", "a"},
		{`{"type":"subscribe","id":"a","board":"b","top":0,"around":0}`, "", "a"},
		{`{"type":"unsubscribe","id":"a","board":"b"}`, "", "a"},
		{`{"type":"auth","id":"a","token":"x.y.z"}`, "", "a"},

		{``, proto.CodeBadRequest, ""},
		{`[]`, proto.CodeBadRequest, ""},
		{`"score"`, proto.CodeBadRequest, ""},
		{`{"type":"page","id":"a","board":"b"`, proto.CodeBadRequest, ""},
		{`{"type":"page","id":"a","board":"b"} {}`, proto.CodeBadRequest, ""},
		{`{"type":"page","id":"a","board":"b"}x`, proto.CodeBadRequest, ""},
		{`{"Type":"page","id":"a","board":"b"}`, proto.CodeBadRequest, ""},
		{`{"type":"page","ID":"a","board":"b"}`, proto.CodeBadRequest, ""},
		{`{"type":"page","id":"a","id":"b","board":"b"}`, proto.CodeBadRequest, ""},
		{`{"type":"page","id":"a","board":"b","extra":1}`, proto.CodeBadRequest, ""},
		{`{"type":"page","board":"b"}`, proto.CodeBadRequest, ""},
		{`{"type":"page","id":"","board":"b"}`, proto.CodeBadRequest, ""},
		{`{"type":"page","id":"a b","board":"b"}`, proto.CodeBadRequest, ""},
		{`{"type":"page","id":7,"board":"b"}`, proto.CodeBadRequest, ""},
		{`{"type":"page","id":"` + strings.Repeat("x", 65) + `","board":"b"}`, proto.CodeBadRequest, ""},
		{`{"id":"a","board":"b"}`, proto.CodeBadRequest, "a"},
		{`{"type":"dance","id":"a"}`, proto.CodeBadRequest, "a"},
		{`{"type":null,"id":"a"}`, proto.CodeBadRequest, "a"},
		{`{"type":"page","id":"a"}`, proto.CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":null}`, proto.CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":"b","delta":1}`, proto.CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":"b","limit":0}`, proto.CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":"b","limit":101}`, proto.CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":"b","limit":1.0}`, proto.CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":"b","limit":"5"}`, proto.CodeBadRequest, "a"},
		{`{"type":"page","id":"a","board":"b","offset":-1}`, proto.CodeBadRequest, "a"},
		{`{"type":"subscribe","id":"a","board":"b","top":101}`, proto.CodeBadRequest, "a"},
		{`{"type":"subscribe","id":"a","board":"b","around":26}`, proto.CodeBadRequest, "a"},
		{`{"type":"rank","id":"a","board":"b","period":-3}`, proto.CodeBadRequest, "a"},
		{`{"type":"score","id":"a","board":"b"}`, proto.CodeBadRequest, "a"},
		{`{"type":"score","id":"a","board":"b","delta":1,"value":1}`, proto.CodeBadRequest, "a"},
		{`{"type":"score","id":"a","board":"b","delta":1,"top":1}`, proto.CodeBadRequest, "a"},
		{`{"type":"auth","id":"a"}`, proto.CodeBadRequest, "a"},
		{`{"type":"score","id":"a","board":"b","delta":1.5}`, proto.CodeInvalidScore, "a"},
		{`{"type":"score","id":"a","board":"b","delta":1e3}`, proto.CodeInvalidScore, "a"},
		{`{"type":"score","id":"a","board":"b","delta":"10"}`, proto.CodeInvalidScore, "a"},
		{`{"type":"score","id":"a","board":"b","delta":null}`, proto.CodeInvalidScore, "a"},
		{`{"type":"score","id":"a","board":"b","value":9007199254740992}`, proto.CodeInvalidScore, "a"},
		{`{"type":"score","id":"a","board":"b","delta":-0}`, "", "a"},
	} {
		req, err := decode([]byte(tc.in))
		if got := codeOrEmpty(err); got != tc.code {
			t.Errorf("%s: code %q (%v), want %q", tc.in, got, err, tc.code)
			continue
		}
		if req.ID != tc.id {
			t.Errorf("%s: id %q, want %q", tc.in, req.ID, tc.id)
		}
	}
}

func TestDecodeFields(t *testing.T) {
	t.Parallel()
	req, err := decode([]byte(`{"type":"score","id":"s","board":"b","member":"m","value":9007199254740991}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.Op != rank.OpValue || req.Amount != rank.MaxScore || req.Board != "b" || req.Member != "m" || req.has&fMember == 0 {
		t.Fatalf("%+v", req)
	}
	req, err = decode([]byte(`{"type":"subscribe","id":"s","board":"b"}`))
	if err != nil || req.Top != -1 || req.Around != 0 || req.has&fMember != 0 {
		t.Fatalf("defaults %+v %v", req, err)
	}
	req, err = decode([]byte(`{"type":"page","id":"s","board":"b"}`))
	if err != nil || req.Offset != 0 || req.Limit != 10 {
		t.Fatalf("page defaults %+v %v", req, err)
	}
}

func codeOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return proto.CodeOf(err)
}

// FuzzDecode: decode never panics, fails only with the contract's codes,
// and what it accepts is a JSON object that names a known type and an id.
func FuzzDecode(f *testing.F) {
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
		req, err := decode(b)
		if err != nil {
			if !errors.Is(err, rank.ErrBadRequest) && !errors.Is(err, rank.ErrInvalidScore) {
				t.Fatalf("error %v is neither bad_request nor invalid_score", err)
			}
			return
		}
		if _, _, ok := fieldsOf(req.Type); !ok || !proto.ValidRequestID(req.ID) {
			t.Fatalf("accepted %q as %+v", b, req)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("accepted non-object %q: %v", b, err)
		}
	})
}
