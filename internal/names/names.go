// Package names holds the rules for what members are called: the member id
// (the `sub` rule of docs/protocol.md §3) and the display name (a token's
// `name` claim, §3, and a profile's or tier's name, §5 and §7). The domain
// (rank), the token verifier (auth) and the wire code all check against
// it, so it imports nothing from the project and the imports point one way.
package names

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxRunes is the longest display name, in characters.
const MaxRunes = 32

// maxMarks is the longest run of combining marks a name may hold: enough
// for a letter with two accents (Vietnamese, Thai tone over vowel), too few
// to stack marks over a neighbour's line.
const maxMarks = 2

// Normalize returns the display name s in Unicode NFC, so that two names
// that look the same are the same string, after checking the normalised
// form with Check and refusing a name that imitates a Latin one with
// letters of another alphabet or compatibility forms (confusable.go).
// Input from a client goes through Normalize; what is stored is its
// result.
func Normalize(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", errors.New("not valid UTF-8")
	}
	n := norm.NFC.String(s)
	if err := check(n); err != nil {
		return "", err
	}
	if err := deceptive(n); err != nil {
		return "", err
	}
	return n, nil
}

// Check checks a display name as stored: valid UTF-8 in NFC, 1–32
// characters, no control, format (zero-width, bidi overrides), private-use,
// unassigned, default-ignorable (variation selectors, fillers) or other
// invisible characters, no run of more than two combining marks, no space
// but U+0020, and no leading, trailing or doubled space. Pages render it as
// text, never markup: nothing is escaped here.
func Check(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	if !norm.NFC.IsNormalString(s) {
		return errors.New("not in Unicode normalization form C (NFC)")
	}
	return check(s)
}

// check is Check for a string already known to be NFC.
func check(s string) error {
	n := utf8.RuneCountInString(s)
	if n == 0 || n > MaxRunes {
		return fmt.Errorf("%d characters, want 1..%d", n, MaxRunes)
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' || strings.Contains(s, "  ") {
		return errors.New("leading, trailing or doubled space")
	}
	marks := 0
	for i, r := range s {
		if invisible(r) {
			return fmt.Errorf("character %U at byte %d is a control, invisible or unassigned character", r, i)
		}
		if unicode.Is(unicode.M, r) {
			marks++
			if marks > maxMarks {
				return fmt.Errorf("more than %d combining marks in a row at byte %d", maxMarks, i)
			}
		} else {
			marks = 0
		}
	}
	return nil
}

// invisible reports whether r shows nothing, reorders what is shown or has
// no meaning yet: controls (Cc), format characters (Cf: zero-width spaces
// and joiners, bidi controls, BOM), surrogates and private use, separators
// other than the ASCII space, default-ignorable code points (variation
// selectors, Hangul fillers, the combining grapheme joiner, U+17B4), the
// braille blank, noncharacters and code points not assigned in the Unicode
// version Go knows (a later version may give them any look).
func invisible(r rune) bool {
	switch {
	case r == ' ':
		return false
	case r == utf8.RuneError,
		unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Z),
		unicode.In(r, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point),
		r == 0x2800, // braille blank: renders as a space
		r >= 0xFDD0 && r <= 0xFDEF, r&0xFFFE == 0xFFFE:
		return true
	}
	return !assigned(r)
}

// assigned reports whether r has a general category other than Cn. Go's
// unicode.C table holds Cn too, so the other four are named.
func assigned(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z,
		unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

// ValidMember reports whether id is a legal member id (R15, the `sub` rule
// of §3): ^[A-Za-z0-9_.:@-]{1,64}$. A byte loop rather than a regexp, as it
// runs on every event.
func ValidMember(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-', c == ':', c == '@':
		default:
			return false
		}
	}
	return true
}

// MemberRule is the member id rule as the errors that refuse an id word it.
const MemberRule = "[A-Za-z0-9_.:@-]{1,64}"
