package auth

import (
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"Alice", true},
		{"Zoë", true},
		{"李小龍", true},
		{"Ana María", true},
		{"🎮 pro", true},
		{"e\u0301", true}, // a combining accent is a letter's part, not a control
		{strings.Repeat("é", 32), true},
		{strings.Repeat("a", 33), false},
		{"", false},
		{"al\x00ice", false},
		{"\x1b[31mRED", false},
		{"a\rb", false},
		{"a\nb", false},
		{"a\tb", false},
		{"del\x7f", false},
		{"c1\u0085", false},
		{"evil\u202etxt", false},
		{"ze\u200bro", false},
		{"j\u200dz", false},
		{"bom\ufeff", false},
		{"iso\u2066x\u2069", false},
		{"lrm\u200e", false},
		{"line\u2028", false},
		{"para\u2029", false},
		{"pua\ue000", false},
		{"bad\xffutf8", false},
		{"repl\ufffd", false},
	} {
		if got := ValidName(tc.name); got != tc.ok {
			t.Errorf("ValidName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}
