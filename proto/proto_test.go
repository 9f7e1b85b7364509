package proto

import (
	"encoding/json"
	"testing"

	"github.com/wsgateway/wsgateway/internal/meta"
)

// TestEntriesOf: a type of Entry's shape converts field by field, and no
// entries encode as [] (never null).
func TestEntriesOf(t *testing.T) {
	t.Parallel()
	type storeEntry struct { // the shape rank.Entry has
		Rank   int64  `json:"rank"`
		Member string `json:"member"`
		Score  int64  `json:"score"`
		Name   string `json:"name,omitempty"`
		// Avatar and Country come from the member's profile (R20).
		Avatar  string `json:"avatar,omitempty"`
		Country string `json:"country,omitempty"`
		// Meta is that of the event that set the score (§11).
		Meta meta.Meta `json:"meta,omitempty"`
	}
	got := EntriesOf([]storeEntry{{1, "bob", 120, "Bob", "https://a.example/b.png", "FR", `{"replay":"r1"}`}, {2, "al", -3, "", "", "", ""}})
	if len(got) != 2 || got[0] != (Entry{1, "bob", 120, "Bob", "https://a.example/b.png", "FR", `{"replay":"r1"}`}) || got[1] != (Entry{2, "al", -3, "", "", "", ""}) {
		t.Fatalf("%+v", got)
	}
	// The meta goes out as the raw object it was sent as; none is left out.
	b, _ := json.Marshal(got)
	if want := `[{"rank":1,"member":"bob","score":120,"name":"Bob","avatar":"https://a.example/b.png","country":"FR","meta":{"replay":"r1"}},{"rank":2,"member":"al","score":-3}]`; string(b) != want {
		t.Fatalf("encoded %s, want %s", b, want)
	}
	b, _ = json.Marshal(EntriesOf[storeEntry](nil))
	if string(b) != "[]" {
		t.Fatalf("no entries encode as %s", b)
	}
}
