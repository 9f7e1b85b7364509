package rank

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTiersConfig(t *testing.T) {
	t.Parallel()
	b, err := ParseBoard("b", []byte(`{"tiers":[{"name":"Champion","top_rank":1},{"name":"Gold","top_percent":5},{"name":"Silver","top_percent":25.5}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if ts := b.Tiers.All(); len(ts) != 3 || ts[0] != (Tier{Name: "Champion", TopRank: 1}) || ts[2].TopPercent != 25.5 {
		t.Fatalf("tiers %+v", ts)
	}
	// A JSON round trip keeps them, and a board without tiers has no field.
	j, _ := json.Marshal(b)
	var back Board
	if err := json.Unmarshal(j, &back); err != nil || back != b {
		t.Fatalf("round trip: %v\n%s", err, j)
	}
	if j, _ := json.Marshal(DefaultBoard("x")); strings.Contains(string(j), "tiers") {
		t.Fatalf("a board without tiers shows them: %s", j)
	}
	for _, body := range []string{
		`{"tiers":[{"name":"Gold"}]}`,                                     // no bound
		`{"tiers":[{"name":"Gold","top_rank":3,"top_percent":5}]}`,        // both
		`{"tiers":[{"name":"Gold","top_percent":101}]}`,                   // over 100
		`{"tiers":[{"name":"Gold","top_rank":-1}]}`,                       // negative
		`{"tiers":[{"name":"","top_rank":1}]}`,                            // empty name
		`{"tiers":[{"name":"a\u202eb","top_rank":1}]}`,                    // bidi override
		`{"tiers":[{"name":"Gold\ufe0f","top_rank":1}]}`,                  // variation selector
		`{"tiers":[{"name":"Zoe\u0308","top_rank":1}]}`,                   // not NFC
		`{"tiers":[{"name":"G","top_rank":1},{"name":"G","top_rank":2}]}`, // repeated name
		`{"tiers":[{"Name":"Gold","top_rank":1}]}`,                        // case
		`{"tiers":[{"name":"Gold","top_rank":1,"top_rank":2}]}`,           // repeated key
		`{"tiers":[{"name":"Gold","top_rank":1,"color":"gold"}]}`,         // unknown key
		`{"tiers":[` + strings.Repeat(`{"name":"x","top_rank":1},`, 10) + `{"name":"y","top_rank":1}]}`,
	} {
		if _, err := ParseBoard("b", []byte(body)); err == nil || !strings.Contains(err.Error(), "tiers") {
			t.Errorf("%s: %v, want an error naming tiers", body, err)
		}
	}
}
