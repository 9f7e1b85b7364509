package proto

import (
	"encoding/json"
	"testing"
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
	}
	got := EntriesOf([]storeEntry{{1, "bob", 120, "Bob", "https://a.example/b.png", "FR"}, {2, "al", -3, "", "", ""}})
	if len(got) != 2 || got[0] != (Entry{1, "bob", 120, "Bob", "https://a.example/b.png", "FR"}) || got[1] != (Entry{2, "al", -3, "", "", ""}) {
		t.Fatalf("%+v", got)
	}
	b, _ := json.Marshal(EntriesOf[storeEntry](nil))
	if string(b) != "[]" {
		t.Fatalf("no entries encode as %s", b)
	}
}
