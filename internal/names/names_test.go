package names

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func TestNormalize(t *testing.T) {
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
		{"Ệ", true},
		{"Việt", true},
		{"กี่", true}, // Thai: a vowel and a tone mark over one consonant
		{"ä\u0301", true},
		{"a\u0308\u0301", true},
		{strings.Repeat("é", 32), true},
		{strings.Repeat("e\u0301", 32), true}, // 64 runes, 32 after NFC
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
		// Issue B6: each of these looked like a plain name.
		{"Alice\ufe0f", false},         // variation selector 16
		{"Alice\ufe00", false},         // variation selector 1
		{"Alice\U000E0100", false},     // variation selector 17
		{"Alice\u17b4", false},         // Khmer inherent vowel, default-ignorable
		{"Alice\u17b5", false},         // its sibling
		{"Alice\u180b", false},         // Mongolian free variation selector
		{"Alice\U000E0041", false},     // tag character
		{"Alice\u0378", false},         // unassigned in the Greek block
		{"Alice\U0003FFFD", false},     // unassigned plane 3 code point
		{"Alice\U000E0FFF", false},     // unassigned, default-ignorable
		{"x\u0301\u0302\u0303", false}, // three marks in a row (no precomposed x)
		{"a\u0301\u0302\u0303", true},  // NFC makes it á and two marks
		{"Z\u0351\u0352\u0353\u0354\u0355", false},
		{"x\u0300\u0301y\u0302\u0303z", true}, // two, then two: no run of three
	} {
		got, err := Normalize(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("Normalize(%q) error = %v, want ok %v", tc.name, err, tc.ok)
			continue
		}
		if err == nil && !norm.NFC.IsNormalString(got) {
			t.Errorf("Normalize(%q) = %q, not NFC", tc.name, got)
		}
	}
}

// TestNormalizeComposes: two spellings of one look become one string.
func TestNormalizeComposes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"Zoe\u0308", "Zoë"},
		{"\u212bngstr\u00f6m", "\u00c5ngstr\u00f6m"}, // ANGSTROM SIGN becomes Å
		{"Alice", "Alice"},
	} {
		got, err := Normalize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestCheckWantsNFC: what is stored must already be normalised; Check
// refuses a decomposed name that Normalize accepts.
func TestCheckWantsNFC(t *testing.T) {
	t.Parallel()
	if err := Check("Zoe\u0308"); err == nil {
		t.Error("Check accepted a name not in NFC")
	}
	if err := Check("Zoë"); err != nil {
		t.Errorf("Check(Zoë) = %v", err)
	}
}

// TestCheckProfileCases: the spacing and blank-glyph rules of a profile
// name hold for token names too (one rule, §3 and §7).
func TestCheckProfileCases(t *testing.T) {
	t.Parallel()
	good := []string{"A", "Alice", "Ann Élise", "李小龍", "🏁 Racer", strings.Repeat("é", 32), "o'Brien-2"}
	for _, s := range good {
		if err := Check(s); err != nil {
			t.Errorf("Check(%q) = %v, want nil", s, err)
		}
	}
	bad := []string{
		"", strings.Repeat("x", 33), " lead", "trail ", "two  spaces",
		"tab\there", "nl\n", "nul\x00", "del\x7f", "c1\u0085",
		"bidi\u202eevil", "zw\u200bsp", "zwj\u200d", "bom\ufeff", "lrm\u200e",
		"nbsp\u00a0x", "em\u2003x", "ls\u2028x", "filler\u3164", "pua\ue000", "\xff\xfe",
		"non\ufdd0char", "cgj\u034f", "braille\u2800",
	}
	for _, s := range bad {
		if err := Check(s); err == nil {
			t.Errorf("Check(%q) = nil, want an error", s)
		}
	}
}

// FuzzNormalize: whatever Normalize accepts is NFC, passes Check, is
// stable, and holds no character the rule refuses.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"Alice", "Alice\ufe0f", "e\u0301", "a\u0301\u0302\u0303", "\u212b", "\U000E0100", "李小龍 🎮"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Normalize(s)
		if err != nil {
			return
		}
		if err := Check(got); err != nil {
			t.Fatalf("Normalize(%q) = %q, which Check refuses: %v", s, got, err)
		}
		if again, err := Normalize(got); err != nil || again != got {
			t.Fatalf("Normalize not stable on %q: %q, %v", got, again, err)
		}
		if n := utf8.RuneCountInString(got); n < 1 || n > MaxRunes {
			t.Fatalf("%q has %d characters", got, n)
		}
		marks := 0
		for _, r := range got {
			if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) || !assigned(r) {
				t.Fatalf("%q holds %U", got, r)
			}
			if unicode.Is(unicode.M, r) {
				if marks++; marks > maxMarks {
					t.Fatalf("%q holds a run of %d marks", got, marks)
				}
			} else {
				marks = 0
			}
		}
	})
}

func TestValidMember(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"bob", true}, {"m@x.io:1", true}, {"A-Z.0_9", true}, {strings.Repeat("a", 64), true},
		{"", false}, {strings.Repeat("a", 65), false}, {"a b", false}, {"é", false}, {"a/b", false},
	} {
		if got := ValidMember(tc.id); got != tc.ok {
			t.Errorf("ValidMember(%q) = %v, want %v", tc.id, got, tc.ok)
		}
	}
}
