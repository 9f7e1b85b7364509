package names

import (
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Confusable names (UTS #39, "Unicode Security Mechanisms"): a game's
// backend that keeps display names unique compares strings, and "Аlice"
// (a Cyrillic А), "Ａｌｉｃｅ" (fullwidth) or "𝐀𝐥𝐢𝐜𝐞" (mathematical bold)
// are not "Alice" to it, yet render as Alice. Normalize refuses a name
// that imitates a Latin one this way (deceptive), so that two names a
// spectator cannot tell apart are the same string, which the issuer's
// uniqueness check then sees. golang.org/x/text has no UTS #39 data: the
// skeleton here is NFKC (which folds width, mathematical, enclosed and
// other compatibility forms) followed by a compact table of the letters
// of other scripts that look like Latin ones (latinLookalike), from
// UTS #39's confusables.txt.

// latinLookalike maps a letter of another script (or an unusual Latin one)
// to the Latin letter it is confusable with: the glyphs are the same or
// nearly so in common fonts.
var latinLookalike = map[rune]rune{
	// Cyrillic.
	'А': 'A', 'В': 'B', 'С': 'C', 'Е': 'E', 'Н': 'H', 'І': 'I', 'Ј': 'J', 'К': 'K', 'М': 'M', 'О': 'O',
	'Р': 'P', 'Ѕ': 'S', 'Т': 'T', 'Х': 'X', 'Ү': 'Y', 'Ԛ': 'Q', 'Ԝ': 'W', 'Ӏ': 'I', 'Ѵ': 'V',
	'а': 'a', 'с': 'c', 'е': 'e', 'һ': 'h', 'і': 'i', 'ј': 'j', 'о': 'o', 'р': 'p', 'ѕ': 's', 'х': 'x',
	'у': 'y', 'ү': 'y', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ӏ': 'l', 'ѵ': 'v',
	// Greek.
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O',
	'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X', 'Ϳ': 'J', 'Ϲ': 'C', 'Ϝ': 'F',
	'α': 'a', 'ι': 'i', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'υ': 'u', 'γ': 'y', 'ϲ': 'c', 'ϳ': 'j',
	// Armenian.
	'Օ': 'O', 'Ս': 'U', 'Լ': 'L', 'օ': 'o', 'ս': 'u', 'հ': 'h', 'ո': 'n', 'ց': 'g', 'զ': 'q',
	// Cherokee.
	'Ꭺ': 'A', 'Ᏼ': 'B', 'Ꮯ': 'C', 'Ꭰ': 'D', 'Ꭼ': 'E', 'Ꮐ': 'G', 'Ꮋ': 'H', 'Ꭻ': 'J', 'Ꮶ': 'K', 'Ꮮ': 'L',
	'Ꮇ': 'M', 'Ꮲ': 'P', 'Ꮢ': 'R', 'Ꮪ': 'S', 'Ꭲ': 'T', 'Ꮩ': 'V', 'Ꮃ': 'W', 'Ꮓ': 'Z',
	// Latin letters that pass for others.
	'ı': 'i', 'ȷ': 'j', 'ɑ': 'a', 'ɡ': 'g', 'ǀ': 'l', 'ꓲ': 'I',
}

// lookalikeScripts are the scripts with letters that pass for Latin ones:
// a word that mixes Latin letters with one of these is refused, whatever
// the table above holds (nobody writes one word in two alphabets).
var lookalikeScripts = []*unicode.RangeTable{unicode.Cyrillic, unicode.Greek, unicode.Armenian, unicode.Cherokee, unicode.Coptic, unicode.Lisu}

// Skeleton is s as UTS #39 would compare it with Latin names: its letters
// and digits in NFKC (a fullwidth, mathematical or ligature form becomes
// the plain one; symbols such as ™ or ² keep their look), then each letter
// that passes for a Latin one replaced by it, in NFC. Two names with one
// skeleton look alike.
func Skeleton(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.Is(unicode.Nd, r) {
			b.WriteString(norm.NFKC.String(string(r)))
		} else {
			b.WriteRune(r)
		}
	}
	var out strings.Builder
	out.Grow(b.Len())
	for _, r := range norm.NFD.String(b.String()) {
		if l, ok := latinLookalike[r]; ok {
			r = l
		}
		out.WriteRune(r)
	}
	return norm.NFC.String(out.String())
}

// deceptive refuses a name (in NFC) that imitates a Latin name: one whose
// skeleton is written in Latin letters only (with digits, marks, spaces
// and symbols) but is not the name itself (a Cyrillic or Greek letter, a
// fullwidth or mathematical form among them), or one with a word that
// mixes Latin letters with a script whose letters pass for Latin ones.
// A name in one such script alone that does not read as Latin ("Анна",
// "Ελένη") is fine.
func deceptive(s string) error {
	if sk := Skeleton(s); sk != s && readsLatin(sk) {
		return fmt.Errorf("it looks like the Latin name %q but is written with other characters (UTS #39 confusables: other alphabets, fullwidth or mathematical forms); send %q instead", sk, sk)
	}
	for _, word := range strings.Fields(s) {
		latin, other := false, false
		for _, r := range word {
			switch {
			case unicode.Is(unicode.Latin, r):
				latin = true
			case unicode.In(r, lookalikeScripts...):
				other = true
			}
		}
		if latin && other {
			return fmt.Errorf("the word %q mixes Latin letters with letters of another alphabet that look like them", word)
		}
	}
	return nil
}

// readsLatin reports whether every letter of s is a Latin one.
func readsLatin(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) && !unicode.Is(unicode.Latin, r) {
			return false
		}
	}
	return true
}
