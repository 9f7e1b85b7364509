package proto

import (
	"bytes"
	"encoding/json"
	"strconv"
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
	for _, s := range []string{`{"score":12345}`, `{"score":-5,"name":"score"}`, `{"a":[{"score":0}]}`, `{"score":null}`, `"score"`, `{"score":1.5e3}`, `{"score":-0}`, `{"score":1.5,"score":5}`} {
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
// integer literal the way the gateway writes one (strconv.FormatInt's form,
// within ±2^53) or null: 0.0 and 1e3 are numbers of integer value, not such
// literals, and -0 is not FormatInt's. It walks tokens rather than decoding
// into maps so a duplicate key cannot hide a member.
func intScoresJSON(js []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	return intScoresValue(dec)
}

func intScoresValue(dec *json.Decoder) bool {
	tok, err := dec.Token()
	if err != nil {
		return false
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return true // a scalar outside a "score" member
	}
	for dec.More() {
		if d == '{' {
			key, err := dec.Token()
			if err != nil {
				return false
			}
			if key == "score" {
				if !intScoreToken(dec) {
					return false
				}
				continue
			}
		}
		if !intScoresValue(dec) {
			return false
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err == nil
}

func intScoreToken(dec *json.Decoder) bool {
	tok, err := dec.Token()
	if err != nil {
		return false
	}
	if tok == nil {
		return true
	}
	n, ok := tok.(json.Number)
	if !ok {
		return false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return err == nil && i <= 1<<53 && i >= -(1<<53) && strconv.FormatInt(i, 10) == string(n)
}
