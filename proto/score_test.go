package proto

import "testing"

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
