package hub

import (
	"testing"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// The decoder's rules and their table live with it (proto/decode_test.go);
// these check what the hub adds: the op in rank's terms, the presence of a
// member, the id to echo.

func TestDecodeFields(t *testing.T) {
	t.Parallel()
	req, err := decode([]byte(`{"type":"score","id":"s","board":"b","member":"m","value":9007199254740991}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.Op != rank.OpValue || req.Amount != rank.MaxScore || req.Board != "b" || req.Member != "m" || req.has&fMember == 0 {
		t.Fatalf("%+v", req)
	}
	req, err = decode([]byte(`{"type":"score","id":"s","board":"b","delta":-4}`))
	if err != nil || req.Op != rank.OpDelta || req.Amount != -4 || req.has&fMember != 0 {
		t.Fatalf("delta %+v %v", req, err)
	}
	req, err = decode([]byte(`{"type":"subscribe","id":"s","board":"b"}`))
	if err != nil || req.Top != -1 || req.Around != 0 || req.has&fMember != 0 {
		t.Fatalf("defaults %+v %v", req, err)
	}
	req, err = decode([]byte(`{"type":"page","id":"s","board":"b","period":"previous"}`))
	if err != nil || req.Offset != 0 || req.Limit != 10 || req.Period != "previous" {
		t.Fatalf("page defaults %+v %v", req, err)
	}
	req, err = decode([]byte(`{"type":"auth","id":"s","token":"x.y.z"}`))
	if err != nil || req.Type != proto.TypeAuth || req.Token != "x.y.z" {
		t.Fatalf("auth %+v %v", req, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, code, id string
	}{
		{`{"type":"score","id":"a","board":"b","delta":1.5}`, proto.CodeInvalidScore, "a"},
		{`{"type":"score","id":"a","board":"b","delta":1,"x":1}`, proto.CodeBadRequest, "a"},
		{`{"type":"score","board":"b","delta":1}`, proto.CodeBadRequest, ""},
		{`[`, proto.CodeBadRequest, ""},
	} {
		req, err := decode([]byte(tc.in))
		if err == nil || proto.CodeOf(err) != tc.code || req.ID != tc.id {
			t.Errorf("%s: %+v, %v; want %s echoing %q", tc.in, req, err, tc.code, tc.id)
		}
	}
}
