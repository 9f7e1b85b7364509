package auth

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// claimSeeds are the payloads of the security review (and their exact
// twins): each repeated or case-variant one made a lenient decoder read an
// admin.
var claimSeeds = []string{
	`{"sub":"alice","exp":1900000000,"rOlE":"admin"}`,
	`{"sub":"alice","exp":1900000000,"role":"player","Role":"admin"}`,
	`{"sub":"alice","exp":1900000000,"role":"player","role":"admin"}`,
	`{"sub":"alice","exp":1900000000,"SUB":"admin"}`,
	`{"sub":"alice","exp":1900000000,"EXP":4102444800}`,
	`{"sub":"alice","exp":1900000000,"boards":["a"],"BOARDS":["a","b"]}`,
	`{"ſub":"admin","exp":1900000000}`,
	`{"sub":"alice","exp":1900000000,"role":"player","\u0072ole":"admin"}`,
	`{"sub":"alice","exp":1900000000,"role":"admin","name":"Alice","boards":["a"],"aud":["x"],"iss":"i","nbf":1,"iat":1,"jti":"j","scope":"s"}`,
	`{"sub":"alice","exp":1900000000}`,
}

func TestDecodeClaimsExact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payload string
		ok      bool
	}{
		{claimSeeds[0], false},
		{claimSeeds[1], false},
		{claimSeeds[2], false},
		{claimSeeds[3], false},
		{claimSeeds[4], false},
		{claimSeeds[5], false},
		{claimSeeds[6], false},
		{claimSeeds[7], false},
		{claimSeeds[8], true},
		{claimSeeds[9], true},
		{`{"sub":"alice","scope":"a","scope":"b"}`, false},
		{`{"sub":"alice","Scope":"a","scope":"b"}`, true}, // not a §3 name: an issuer's business
		{`{"sub":"alice"} {}`, false},
		{`["sub"]`, false},
		{`{"sub":"alice"`, false},
		{``, false},
	} {
		var cl claims
		err := decodeClaims([]byte(tc.payload), &cl)
		if (err == nil) != tc.ok {
			t.Errorf("decodeClaims(%s) = %v, want ok=%v", tc.payload, err, tc.ok)
		}
	}
	var cl claims
	if err := decodeClaims([]byte(claimSeeds[8]), &cl); err != nil || cl.Subject != "alice" || cl.Role != Admin || cl.Name != "Alice" || !cl.Boards.set {
		t.Errorf("decodeClaims(all claims) = %+v, %v", cl, err)
	}
}

// FuzzDecodeClaims: decodeClaims never panics, and whatever it accepts has
// no repeated key and reads exactly as encoding/json reads it (with nothing
// left for case-insensitive matching or last-wins to change).
func FuzzDecodeClaims(f *testing.F) {
	for _, s := range claimSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		var strict claims
		if decodeClaims([]byte(payload), &strict) != nil {
			return
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal([]byte(payload), &keys); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", payload, err)
		}
		for k := range keys {
			for _, n := range claimNames {
				if k != n && strings.EqualFold(k, n) {
					t.Fatalf("accepted %q with key %q", payload, k)
				}
			}
		}
		var lenient claims
		if err := json.Unmarshal([]byte(payload), &lenient); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", payload, err)
		}
		if !reflect.DeepEqual(strict, lenient) {
			t.Fatalf("%q: strict %+v, lenient %+v", payload, strict, lenient)
		}
	})
}
