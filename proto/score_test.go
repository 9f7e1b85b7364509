package proto

import (
	"regexp"
	"strings"
	"testing"
)

func TestParseScore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"-0", 0, true},
		{"120", 120, true},
		{"-7", -7, true},
		{"9007199254740991", 9007199254740991, true},
		{"-9007199254740991", -9007199254740991, true},
		{"9007199254740992", 0, false},
		{"99999999999999999999", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
		{"1E3", 0, false},
		{"1.0", 0, false},
		{`"10"`, 0, false},
		{"null", 0, false},
		{"NaN", 0, false},
		{"Infinity", 0, false},
		{"1e309", 0, false},
		{"01", 0, false},
		{"-", 0, false},
		{"", 0, false},
		{"+1", 0, false},
		{" 1", 0, false},
		{"true", 0, false},
	} {
		got, ok := ParseScore([]byte(tc.in))
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseScore(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestValidRequestID holds the byte loop equal to the rule's regexp on every
// single byte, alone and between legal ones, and on the length limits.
func TestValidRequestID(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)
	inputs := []string{"", "a", "e1-2", "A.z_0:9-", "a@b", "a b", "ä", strings.Repeat("a", 64), strings.Repeat("a", 65)}
	for c := range 256 {
		inputs = append(inputs, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
	}
	for _, in := range inputs {
		if got, want := ValidRequestID(in), re.MatchString(in); got != want {
			t.Errorf("ValidRequestID(%q) = %v, regexp says %v", in, got, want)
		}
	}
}
