package names

import (
	"strings"
	"testing"
)

// TestConfusableNames (UTS #39): a name that renders as a Latin name but is
// written with other characters (another alphabet's look-alike letters,
// fullwidth, mathematical or ligature forms, a dotless i) is refused,
// naming what it imitates; so is a word mixing Latin letters with
// Cyrillic, Greek and the like. Names in one alphabet that do not read as
// Latin, names in scripts without Latin look-alikes, accents and emoji
// pass.
func TestConfusableNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, imitates string }{
		{"\u0410lice", "Alice"},                                       // Cyrillic А
		{"Ａｌｉｃｅ", "Alice"},                                            // fullwidth
		{"𝐀𝐥𝐢𝐜𝐞", "Alice"},                                            // mathematical bold
		{"Al\u0131ce", "Alice"},                                       // dotless i
		{"\u0440\u0430\u0443\u0440\u0435", "paype"},                   // all Cyrillic, reads as Latin
		{"\u039a\u0391\u03a4\u039f", "KATO"},                          // all Greek capitals
		{"Bob\u0455", "Bobs"},                                         // Cyrillic ѕ at the end
		{"Zo\u0451", ""},                                              // Cyrillic ё in a Latin word
		{"\u0410lice \u0418\u0432\u0430\u043d\u043e\u0432\u0430", ""}, // the fake word beside a real one
		{"Ꭺlice", "Alice"},                                            // Cherokee
		{"Player２", "Player2"},                                        // a fullwidth digit
		{"ﬁnn", "finn"},                                               // a ligature
	} {
		_, err := Normalize(tc.name)
		if err == nil {
			t.Errorf("Normalize(%q) accepted a confusable name", tc.name)
			continue
		}
		if tc.imitates != "" && !strings.Contains(err.Error(), `"`+tc.imitates+`"`) {
			t.Errorf("Normalize(%q): %v, want it to name %q", tc.name, err, tc.imitates)
		}
	}
	for _, ok := range []string{
		"Alice", "alice", "Ian", "Ilker", "İlker", "Zoë", "Åsa", "Ana María", "o'Brien-2", "🎮 pro",
		"\u0410\u043d\u043d\u0430",        // Анна
		"\u041e\u043b\u0435\u0433",        // Олег
		"\u0418\u0432\u0430\u043d Petrov", // a Cyrillic word and a Latin one
		"\u0395\u03bb\u03ad\u03bd\u03b7",  // Ελένη
		"李小龍", "ひらがな", "Zoë李", "Player 2", "Ångström", "Bob™", "Player²", "Ⓐ team",
	} {
		if _, err := Normalize(ok); err != nil {
			t.Errorf("Normalize(%q) = %v, want it accepted", ok, err)
		}
	}
}

// TestSkeleton: names that render alike share a skeleton; ones that do not,
// do not.
func TestSkeleton(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"\u0410lice", "Ａｌｉｃｅ", "𝐀𝐥𝐢𝐜𝐞", "Al\u0131ce", "Ꭺlice"} {
		if got := Skeleton(s); got != "Alice" {
			t.Errorf("Skeleton(%q) = %q, want Alice", s, got)
		}
	}
	for _, s := range []string{"alice", "Alicé", "Anna", "\u0410\u043d\u043d\u0430"} {
		if Skeleton(s) == "Alice" {
			t.Errorf("Skeleton(%q) = Alice", s)
		}
	}
}
