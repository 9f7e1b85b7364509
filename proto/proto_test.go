package proto

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/wsgateway/wsgateway/rank"
)

// TestEntriesOf: the copy is the store's entries field by field, a change
// to it (WithoutMeta) leaves the store's page alone, and no entries
// encode as [] (never null).
func TestEntriesOf(t *testing.T) {
	t.Parallel()
	page := []rank.Entry{{Rank: 1, Member: "bob", Score: 120, Name: "Bob", Avatar: "https://a.example/b.png", Country: "FR", Meta: `{"replay":"r1"}`}, {Rank: 2, Member: "al", Score: -3}}
	got := EntriesOf(page)
	if !slices.Equal(got, page) {
		t.Fatalf("%+v", got)
	}
	// The meta goes out as the raw object it was sent as; none is left out.
	b, _ := json.Marshal(got)
	if want := `[{"rank":1,"member":"bob","score":120,"name":"Bob","avatar":"https://a.example/b.png","country":"FR","meta":{"replay":"r1"}},{"rank":2,"member":"al","score":-3}]`; string(b) != want {
		t.Fatalf("encoded %s, want %s", b, want)
	}
	if WithoutMeta(got); got[0].Meta != "" || page[0].Meta == "" {
		t.Fatalf("without meta: copy %+v, store's page %+v", got[0], page[0])
	}
	b, _ = json.Marshal(EntriesOf(nil))
	if string(b) != "[]" {
		t.Fatalf("no entries encode as %s", b)
	}
}
