package proto

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameRunes is the longest display name, in characters.
const MaxNameRunes = 32

// CheckName checks a display name (a profile's name, §7, and a token's
// name claim, §3: the same rule for both): valid UTF-8, 1–32
// characters, no control, format (zero-width, bidi overrides), private-use
// or other invisible characters, no space but U+0020, and no leading,
// trailing or doubled space, so two names that look the same are the same.
// Pages render it as text, never markup: nothing is escaped here.
func CheckName(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	n := utf8.RuneCountInString(s)
	if n == 0 || n > MaxNameRunes {
		return fmt.Errorf("%d characters, want 1..%d", n, MaxNameRunes)
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' || strings.Contains(s, "  ") {
		return errors.New("leading, trailing or doubled space")
	}
	for i, r := range s {
		if invisible(r) {
			return fmt.Errorf("character %U at byte %d is a control or invisible character", r, i)
		}
	}
	return nil
}

// invisible reports whether r shows nothing (or reorders what is shown):
// controls (Cc), format characters (Cf: zero-width spaces and joiners, bidi
// controls, BOM), surrogates and private use, separators other than the
// ASCII space, fillers that render as blanks, and noncharacters.
func invisible(r rune) bool {
	switch {
	case r == ' ':
		return false
	case r == utf8.RuneError,
		unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Z),
		r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x2800, // Hangul fillers, braille blank
		r == 0x034F, // combining grapheme joiner
		r >= 0xFDD0 && r <= 0xFDEF, r&0xFFFE == 0xFFFE:
		return true
	}
	return false
}
