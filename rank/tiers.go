package rank

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/wsgateway/wsgateway/internal/names"
)

// Tier is a named band of a board's ranking ("Gold: the top 5%"), shown by
// the player page beside a member's rank. An extension of the contract
// (docs/protocol.md, "Tiers"): the server stores and validates tiers, the
// client computes a member's tier from its rank and the board's total.
// Exactly one of TopRank and TopPercent is set.
type Tier struct {
	Name       string  `json:"name"`
	TopRank    int64   `json:"top_rank,omitempty"`    // ranks 1..TopRank
	TopPercent float64 `json:"top_percent,omitempty"` // the best TopPercent % of the members, (0, 100]
}

// MaxTiers bounds a board's tiers.
const MaxTiers = 10

// Tiers is a board's list of tiers, held in an array so that Board stays a
// comparable value (configs are compared with ==). Its JSON is a list.
type Tiers struct {
	n    int
	list [MaxTiers]Tier
}

// TiersOf makes a Tiers of ts; past MaxTiers it keeps the first MaxTiers
// and reports false.
func TiersOf(ts ...Tier) (Tiers, bool) {
	var t Tiers
	t.n = copy(t.list[:], ts)
	return t, len(ts) <= MaxTiers
}

// All is the tiers in order.
func (t Tiers) All() []Tier { return t.list[:t.n] }

// MarshalJSON writes the tiers as a JSON list.
func (t Tiers) MarshalJSON() ([]byte, error) { return json.Marshal(t.All()) }

// UnmarshalJSON reads a JSON list of tiers (each strictly); more than
// MaxTiers is an error.
func (t *Tiers) UnmarshalJSON(b []byte) error {
	var ts []Tier
	if err := json.Unmarshal(b, &ts); err != nil {
		return fmt.Errorf("field tiers: %v", err)
	}
	v, ok := TiersOf(ts...)
	if !ok {
		return fmt.Errorf("field tiers: %d tiers, at most %d", len(ts), MaxTiers)
	}
	*t = v
	return nil
}

// UnmarshalJSON reads a tier strictly, as board configs are read: exact,
// known, unrepeated names (encoding/json alone would take "Name" for
// "name" and let a repeated key win).
func (t *Tier) UnmarshalJSON(b []byte) error {
	if _, err := strictKeys(b, func(key string) bool {
		return key == "name" || key == "top_rank" || key == "top_percent"
	}); err != nil {
		return fmt.Errorf("tier: %v (want name, top_rank or top_percent)", err)
	}
	type plain Tier // no UnmarshalJSON: no recursion
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*t = Tier(p)
	return nil
}

// validateTiers checks a board's tiers: at most MaxTiers, distinct valid
// names, each with exactly one bound in range.
func validateTiers(ts Tiers) error {
	seen := map[string]bool{}
	for i, t := range ts.All() {
		if err := names.Check(t.Name); err != nil {
			return fmt.Errorf("tier %d: name: %v", i+1, err)
		}
		if seen[t.Name] {
			return fmt.Errorf("tier %d: name %q appears twice", i+1, t.Name)
		}
		seen[t.Name] = true
		switch {
		case (t.TopRank != 0) == (t.TopPercent != 0):
			return fmt.Errorf("tier %d (%s): set exactly one of top_rank and top_percent", i+1, t.Name)
		case t.TopRank < 0 || t.TopRank > 1_000_000_000:
			return fmt.Errorf("tier %d (%s): top_rank %d is not within 1..1000000000", i+1, t.Name, t.TopRank)
		case t.TopPercent < 0 || t.TopPercent > 100 || math.IsNaN(t.TopPercent):
			return fmt.Errorf("tier %d (%s): top_percent %v is not within (0, 100]", i+1, t.Name, t.TopPercent)
		}
	}
	return nil
}
