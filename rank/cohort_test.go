package rank

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A cohort and league config travels as the contract's JSON, read
// strictly, and comes back equal.
func TestCohortJSON(t *testing.T) {
	body := `{"reset":"daily","cohort":{"size":50},"league":{"tiers":["bronze","silver","gold"],"promote":5,"demote":7}}`
	b, err := ParseBoard("lg", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if !b.Cohorted() || !b.Leagued() || b.Cohort.Size != 50 || b.League.Promote != 5 || b.League.Demote != 7 ||
		strings.Join(b.League.Tiers.All(), ",") != "bronze,silver,gold" || b.LowestTier() != "bronze" {
		t.Fatalf("parsed %+v", b)
	}
	j, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), `"cohort":{"size":50},"league":{"tiers":["bronze","silver","gold"],"promote":5,"demote":7}`) {
		t.Fatalf("marshalled %s", j)
	}
	back, err := ParseBoard("lg", j)
	if err != nil || back != b {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	plain, _ := json.Marshal(DefaultBoard("p"))
	if strings.Contains(string(plain), "cohort") || strings.Contains(string(plain), "league") {
		t.Fatalf("a board without cohorts shows them: %s", plain)
	}
	for _, bad := range []string{
		`{"cohort":{"size":5,"Size":5}}`,
		`{"cohort":{"sise":5}}`,
		`{"cohort":{"size":0}}`,
		`{"cohort":{"size":"5"}}`,
		`{"reset":"daily","cohort":{"size":5},"league":{"tiers":["a","b"],"promote":1,"demote":1,"x":1}}`,
		`{"reset":"daily","cohort":{"size":5},"league":{"tiers":["a","b","c","d","e","f","g","h","i","j","k"]}}`,
		`{"reset":"daily","cohort":{"size":5},"league":{"tiers":"gold"}}`,
	} {
		if _, err := ParseBoard("x", []byte(bad)); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", bad, err)
		}
	}
}

// Cohort ids name the cohort's tier on a league board.
func TestCohortIDs(t *testing.T) {
	lt, _ := LeagueTiersOf("a", "a-1", "b")
	lg := Board{ID: "l", Cohort: Cohort{Size: 3}, League: League{Tiers: lt}}
	co := Board{ID: "c", Cohort: Cohort{Size: 3}}
	for _, tc := range []struct {
		b    Board
		id   string
		tier string
		n    int64
	}{
		{co, "1", "", 1}, {co, "42", "", 42},
		{lg, "a-1", "a", 1}, {lg, "a-1-2", "a-1", 2}, {lg, "b-10", "b", 10},
	} {
		tier, n, err := tc.b.ParseCohortID(tc.id)
		if err != nil || tier != tc.tier || n != tc.n {
			t.Errorf("%s on %s: %q %d %v", tc.id, tc.b.ID, tier, n, err)
		}
		if got := CohortID(tier, n); got != tc.id {
			t.Errorf("CohortID(%q, %d) = %q, want %q", tier, n, got, tc.id)
		}
	}
	for _, tc := range []struct {
		b  Board
		id string
	}{{co, "0"}, {co, "a-1"}, {co, "01"}, {co, ""}, {lg, "1"}, {lg, "c-1"}, {lg, "a-0"}, {lg, "a-"}, {DefaultBoard("p"), "1"}} {
		if _, _, err := tc.b.ParseCohortID(tc.id); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%q on %s: %v, want ErrBadRequest", tc.id, tc.b.ID, err)
		}
	}
}

// TestLeagueRefusesGrace (§12, v1.3): a league board with grace > 0 is a
// 400 naming grace (its next period's cohorts form at its first event,
// so its tiers must be known then); grace 0 is fine.
func TestLeagueRefusesGrace(t *testing.T) {
	const league = `"reset":"daily","cohort":{"size":5},"league":{"tiers":["a","b"],"promote":1,"demote":1}`
	_, err := ParseBoard("x", []byte(`{`+league+`,"grace":"1s"}`))
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "field grace:") {
		t.Fatalf("league with grace: %v, want an invalid config naming field grace", err)
	}
	if _, err := ParseBoard("x", []byte(`{`+league+`,"grace":"0s"}`)); err != nil {
		t.Fatalf("league without grace: %v", err)
	}
	if _, err := ParseBoard("x", []byte(`{"reset":"daily","cohort":{"size":5},"grace":"1s"}`)); err != nil {
		t.Fatalf("a cohort board without a league takes grace: %v", err)
	}
}
