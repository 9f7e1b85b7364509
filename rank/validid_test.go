package rank

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The rules as the regexps they were written as; ValidBoardID and
// ValidMemberID are byte loops that must agree with them on every input.
var (
	boardIDRe  = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	memberIDRe = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,64}$`)
)

func TestValidIDsMatchRegexps(t *testing.T) {
	t.Parallel()
	inputs := []string{
		"", "a", "run_hero", "A-Z.0_9", "a:b", "a@b", "m@x.io:1", " a", "a ", "a\n", "\na",
		"a/b", "a{b}", "ä", "a\x00", "é", strings.Repeat("a", 64), strings.Repeat("a", 65),
		strings.Repeat(":", 64), strings.Repeat("@", 65), "a$", "^a",
	}
	// Every single byte, alone and between legal ones.
	for c := range 256 {
		inputs = append(inputs, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
	}
	// Random strings over legal and illegal bytes, lengths around 64.
	r := rand.New(rand.NewPCG(3, 4))
	mixed := []byte("aZ09_.-:@ /{}\n\x00\xff$^|é")
	legal := []byte("aZ09_.-:@") // mostly valid members, some valid boards
	for i := range 20000 {
		alphabet := mixed
		if i%2 == 0 {
			alphabet = legal
		}
		b := make([]byte, r.IntN(70))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		if got, want := ValidBoardID(in), boardIDRe.MatchString(in); got != want {
			t.Errorf("ValidBoardID(%q) = %v, regexp says %v", in, got, want)
		}
		if got, want := ValidMemberID(in), memberIDRe.MatchString(in); got != want {
			t.Errorf("ValidMemberID(%q) = %v, regexp says %v", in, got, want)
		}
	}
}

func BenchmarkValidMemberID(b *testing.B) {
	for b.Loop() {
		if !ValidMemberID("player_12345@example.org") {
			b.Fatal("invalid")
		}
	}
}

// TestCheckIDs: the error forms agree with the predicates, carry their
// codes, and keep a long refused id short.
func TestCheckIDs(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"a", "m@x.io", "a b", "", strings.Repeat("a", 65)} {
		if err := CheckBoardID(id); (err == nil) != ValidBoardID(id) || err != nil && !errors.Is(err, ErrInvalidBoard) {
			t.Errorf("CheckBoardID(%q) = %v", id, err)
		}
		if err := CheckMemberID(id); (err == nil) != ValidMemberID(id) || err != nil && !errors.Is(err, ErrInvalidMember) {
			t.Errorf("CheckMemberID(%q) = %v", id, err)
		}
	}
	if err := CheckMemberID(strings.Repeat("x", 4000)); len(err.Error()) > 200 {
		t.Errorf("message of %d bytes for a long id", len(err.Error()))
	}
	if got, want := CheckMemberID("a b").Error(), `invalid member id: "a b" must match [A-Za-z0-9_.:@-]{1,64}`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
