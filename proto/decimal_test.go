package proto

import (
	"bytes"
	"encoding/json"
	"strings"
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
		if !intScoresJSON([]byte(tc.in)) {
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
		if !intScoresJSON(js) {
			return
		}
		if back, _ := Undecimalize(out, 3); string(back) != string(js) {
			t.Fatalf("round trip of %s: %s then %s", js, out, back)
		}
	})
}

// intScoresJSON reports whether every "score" member in the JSON js is an
// integer literal (or null) within ±2^53, the scores the gateway writes:
// 0.0 and 1e3 are numbers of integer value, not integer literals.
func intScoresJSON(js []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	return dec.Decode(&v) == nil && intScores(v)
}

func intScores(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "score" {
				if e == nil {
					continue
				}
				n, ok := e.(json.Number)
				if !ok || strings.ContainsAny(string(n), ".eE") {
					return false
				}
				i, err := n.Int64()
				if err != nil || i > 1<<53 || i < -(1<<53) {
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
