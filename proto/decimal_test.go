package proto

import (
	"encoding/json"
	"testing"
)

func TestAppendScore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    int64
		d    int
		want string
	}{
		{12345, 3, "12.345"},
		{-5, 3, "-0.005"},
		{7000, 3, "7.000"},
		{0, 3, "0.000"},
		{-12345, 3, "-12.345"},
		{42, 0, "42"},
		{-42, 0, "-42"},
		{9007199254740991, 3, "9007199254740.991"},
		{-9007199254740991, 3, "-9007199254740.991"},
	} {
		if got := FormatScore(tc.v, tc.d); got != tc.want {
			t.Errorf("FormatScore(%d, %d) = %s, want %s", tc.v, tc.d, got, tc.want)
		}
	}
}

func TestDecimalize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{"type":"ack","score":12345,"rank":1}`, `{"type":"ack","score":12.345,"rank":1}`},
		{`{"entries":[{"member":"a","score":-5},{"member":"b","score":7000}]}`, `{"entries":[{"member":"a","score":-0.005},{"member":"b","score":7.000}]}`},
		{`{"score": 10}`, `{"score": 0.010}`},
		{`{"score":null}`, `{"score":null}`},
		// A "score" inside a string is a name, not a key.
		{`{"name":"\"score\":5","score":5}`, `{"name":"\"score\":5","score":0.005}`},
		{`{"member":"score","score":1}`, `{"member":"score","score":0.001}`},
		// Not an integer: left as it is.
		{`{"score":1.5}`, `{"score":1.5}`},
		{`{"score":1e3}`, `{"score":1e3}`},
		{`{"rank":3}`, `{"rank":3}`},
	} {
		got := string(Decimalize([]byte(tc.in), 3))
		if got != tc.want {
			t.Errorf("Decimalize(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if json.Valid([]byte(tc.in)) && !json.Valid([]byte(got)) {
			t.Errorf("Decimalize(%s) = %s: not JSON", tc.in, got)
		}
		var v any
		if json.Unmarshal([]byte(tc.in), &v) != nil || !intScores(v) {
			continue // the round trip holds for the frames the gateway writes
		}
		back, d := Undecimalize([]byte(got), 3)
		if d == 3 && string(back) != tc.in {
			t.Errorf("Undecimalize(%s) = %s, want %s", got, back, tc.in)
		}
	}
	if got := string(Decimalize([]byte(`{"score":5}`), 0)); got != `{"score":5}` {
		t.Errorf("d = 0 changed %s", got)
	}
	if got, d := Undecimalize([]byte(`{"score":5}`), 3); string(got) != `{"score":5}` || d != 0 {
		t.Errorf("Undecimalize of an integer board: %s, %d; want it unchanged and 0", got, d)
	}
	if got, d := Undecimalize([]byte(`{"score":1.2345}`), 3); string(got) != `{"score":1.2345}` || d != 0 {
		t.Errorf("Undecimalize of four decimals: %s, %d; want it kept and 0", got, d)
	}
}

// FuzzDecimalize: on any input Decimalize keeps valid JSON valid, and on a
// frame whose scores are integers Undecimalize gives back the input.
func FuzzDecimalize(f *testing.F) {
	for _, s := range []string{`{"score":12345}`, `{"score":-5,"name":"score"}`, `{"a":[{"score":0}]}`, `{"score":null}`, `"score"`, `{"score":1.5e3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		out := Decimalize(js, 3)
		if !json.Valid(js) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Decimalize(%s) = %s: not JSON", js, out)
		}
		var v any
		if json.Unmarshal(js, &v) != nil || !intScores(v) {
			return
		}
		if back, _ := Undecimalize(out, 3); string(back) != string(js) {
			t.Fatalf("round trip of %s: %s then %s", js, out, back)
		}
	})
}

// intScores reports whether every "score" member in v is a JSON integer
// (or null) within ±2^53, the scores the gateway writes.
func intScores(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "score" {
				if e == nil {
					continue
				}
				n, ok := e.(float64)
				if !ok || n != float64(int64(n)) || n > 1<<53 || n < -(1<<53) {
					return false
				}
				continue
			}
			if !intScores(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !intScores(e) {
				return false
			}
		}
	}
	return true
}
