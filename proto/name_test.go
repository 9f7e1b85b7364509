package proto

import (
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
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
		if got := CheckName(tc.name) == nil; got != tc.ok {
			t.Errorf("CheckName(%q) accepted = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

// TestCheckNameProfileCases: the spacing and blank-glyph rules of a
// profile name hold for token names too (one rule, §3 and §7).
func TestCheckNameProfileCases(t *testing.T) {
	t.Parallel()
	good := []string{"A", "Alice", "Ann Élise", "李小龍", "🏁 Racer", strings.Repeat("é", 32), "o'Brien-2"}
	for _, s := range good {
		if err := CheckName(s); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", s, err)
		}
	}
	bad := []string{
		"", strings.Repeat("x", 33), " lead", "trail ", "two  spaces",
		"tab\there", "nl\n", "nul\x00", "del\x7f", "c1\u0085",
		"bidi\u202eevil", "zw\u200bsp", "zwj\u200d", "bom\ufeff", "lrm\u200e",
		"nbsp\u00a0x", "em\u2003x", "ls\u2028x", "filler\u3164", "pua\ue000", "\xff\xfe",
		"non\ufdd0char", "cgj\u034f",
	}
	for _, s := range bad {
		if err := CheckName(s); err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", s)
		}
	}
}
