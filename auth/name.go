package auth

import (
	"unicode"
	"unicode/utf8"
)

// MaxNameRunes is the longest display name: a token's `name` claim (§3) and
// a profile's `name` (§7).
const MaxNameRunes = 32

// ValidName reports whether s may be shown as a display name: valid UTF-8,
// 1 to MaxNameRunes characters, none of them a control or invisible
// formatting character. Names reach every reader's screen and terminal
// (frames, pages, logs), so refused are C0/C1 controls (NUL, ESC of ANSI
// sequences, CR/LF, TAB, DEL), format characters (Cf: zero-width spaces and
// joiners, BOM, bidi overrides and isolates such as U+202E), line and
// paragraph separators, private-use code points and U+FFFD. It serves the
// token path and the profile API alike.
func ValidName(s string) bool {
	if s == "" || !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxNameRunes {
		return false
	}
	for _, r := range s {
		if r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Zl, unicode.Zp) {
			return false
		}
	}
	return true
}
