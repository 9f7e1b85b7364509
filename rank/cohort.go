package rank

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cohorts and leagues (docs/protocol.md §12, R27).
const (
	MinCohortSize  = 2
	MaxCohortSize  = 1000
	MinLeagueTiers = 2
	MaxLeagueTiers = 10
)

// Cohort makes a board compete in groups of Size: within each period a
// member joins a cohort at its first applied event, and cohorts fill in
// order of arrival. The zero value is not a cohort board.
type Cohort struct {
	Size int `json:"size"`
}

// IsZero reports whether c is unset (the board has no cohorts).
func (c Cohort) IsZero() bool { return c.Size == 0 }

// UnmarshalJSON reads a cohort object strictly, as board configs are read.
func (c *Cohort) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = Cohort{}
		return nil
	}
	if _, err := strictKeys(b, func(k string) bool { return k == "size" }); err != nil {
		return fmt.Errorf("field cohort: %v (want size)", err)
	}
	type plain Cohort // no UnmarshalJSON: no recursion
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("field cohort: %v", err)
	}
	if p.Size == 0 {
		return fmt.Errorf("field cohort: size 0 is not within %d..%d", MinCohortSize, MaxCohortSize)
	}
	*c = Cohort(p)
	return nil
}

// League moves a cohort board's members between tiers from one period to
// the next: when a period is final, the best Promote of each cohort move
// one tier up and the worst Demote one tier down (never past the ends).
// The zero value is no league.
type League struct {
	Tiers   LeagueTiers `json:"tiers"`   // lowest first
	Promote int         `json:"promote"` // best P of each cohort move up
	Demote  int         `json:"demote"`  // worst D of each cohort move down
}

// IsZero reports whether l is unset (the board has no league).
func (l League) IsZero() bool { return l == League{} }

// UnmarshalJSON reads a league object strictly, as board configs are read.
func (l *League) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*l = League{}
		return nil
	}
	if _, err := strictKeys(b, func(k string) bool { return k == "tiers" || k == "promote" || k == "demote" }); err != nil {
		return fmt.Errorf("field league: %v (want tiers, promote and demote)", err)
	}
	type plain League // no UnmarshalJSON: no recursion
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("field league: %v", err)
	}
	*l = League(p)
	return nil
}

// LeagueTiers is a league's tier names, lowest first, held in an array so
// that Board stays a comparable value (configs are compared with ==). Its
// JSON is a list of strings.
type LeagueTiers struct {
	n    int
	list [MaxLeagueTiers]string
}

// LeagueTiersOf makes a LeagueTiers of names; past MaxLeagueTiers it keeps
// the first MaxLeagueTiers and reports false.
func LeagueTiersOf(names ...string) (LeagueTiers, bool) {
	var t LeagueTiers
	t.n = copy(t.list[:], names)
	return t, len(names) <= MaxLeagueTiers
}

// All is the tier names, lowest first.
func (t LeagueTiers) All() []string { return t.list[:t.n] }

// Len is the number of tiers.
func (t LeagueTiers) Len() int { return t.n }

// At is the name of tier i (0 = the lowest).
func (t LeagueTiers) At(i int) string { return t.list[i] }

// Index is the position of the tier named name, or -1.
func (t LeagueTiers) Index(name string) int {
	for i := range t.n {
		if t.list[i] == name {
			return i
		}
	}
	return -1
}

// MarshalJSON writes the tiers as a JSON list.
func (t LeagueTiers) MarshalJSON() ([]byte, error) { return json.Marshal(t.All()) }

// UnmarshalJSON reads a JSON list of tier names; more than MaxLeagueTiers
// is an error.
func (t *LeagueTiers) UnmarshalJSON(b []byte) error {
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return fmt.Errorf("field league: tiers: %v", err)
	}
	v, ok := LeagueTiersOf(names...)
	if !ok {
		return fmt.Errorf("field league: tiers: %d tiers, at most %d", len(names), MaxLeagueTiers)
	}
	*t = v
	return nil
}

// Cohorted reports whether the board competes in cohorts.
func (b Board) Cohorted() bool { return b.Cohort.Size > 0 }

// Leagued reports whether the board moves members between tiers.
func (b Board) Leagued() bool { return b.League.Tiers.Len() > 0 }

// LowestTier is the tier a member never seen starts in, "" on a board
// without a league.
func (b Board) LowestTier() string {
	if !b.Leagued() {
		return ""
	}
	return b.League.Tiers.At(0)
}

// validateCohort checks the cohort and league fields and the kinds of
// board a cohort board cannot also be.
func (b Board) validateCohort() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: field %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	if b.Cohort.Size != 0 && (b.Cohort.Size < MinCohortSize || b.Cohort.Size > MaxCohortSize) {
		return bad("cohort", "size %d is not within %d..%d", b.Cohort.Size, MinCohortSize, MaxCohortSize)
	}
	if b.Cohorted() {
		switch {
		case b.Sharded():
			return bad("cohort", "a board with cohorts is not sharded")
		case b.Hot():
			return bad("cohort", "a board with cohorts has no decay")
		case b.Derived():
			return bad("cohort", "a board with source has no cohorts")
		}
	}
	if b.League.IsZero() {
		return nil
	}
	l := b.League
	switch {
	case !b.Cohorted():
		return bad("league", "a league needs cohort")
	case b.Reset == None:
		return bad("league", "a league needs a reset other than none")
	case b.Grace != 0:
		// The moves of a period are decided when the next one is first
		// played; with grace a late event could still change the period.
		return bad("grace", "a league board takes no grace (the next period's cohorts form at its first event, so its tiers must be known then), not %s", time.Duration(b.Grace))
	case l.Tiers.Len() < MinLeagueTiers:
		return bad("league", "%d tiers, want %d..%d", l.Tiers.Len(), MinLeagueTiers, MaxLeagueTiers)
	case l.Promote < 0 || l.Promote >= b.Cohort.Size:
		return bad("league", "promote %d is not within 0..%d (cohort size - 1)", l.Promote, b.Cohort.Size-1)
	case l.Demote < 0 || l.Demote >= b.Cohort.Size:
		return bad("league", "demote %d is not within 0..%d (cohort size - 1)", l.Demote, b.Cohort.Size-1)
	case l.Promote+l.Demote > b.Cohort.Size:
		return bad("league", "promote + demote %d is above the cohort size %d", l.Promote+l.Demote, b.Cohort.Size)
	}
	seen := map[string]bool{}
	for _, name := range l.Tiers.All() {
		if !ValidBoardID(name) {
			return bad("league", "tier %q must match [A-Za-z0-9_.-]{1,64}", clipID(name))
		}
		if seen[name] {
			return bad("league", "tier %q appears twice", name)
		}
		seen[name] = true
	}
	return nil
}

// ErrCohortFixed is a config change of `cohort` or `league` on an existing
// board: its members' placement depends on them, so they are fixed at
// creation (409, code read_only; delete and re-create the board).
var ErrCohortFixed = &Error{"read_only", "fields cohort and league: fixed at creation"}

// CheckCohortChange refuses a new config whose cohort or league differs
// from the stored one's (ErrCohortFixed). Both engines call it on PutBoard
// of an existing board.
func CheckCohortChange(old, next Board) error {
	if old.Cohort != next.Cohort {
		return fmt.Errorf("%w (cohort size %d); delete and re-create the board to change it", ErrCohortFixed, old.Cohort.Size)
	}
	if old.League != next.League {
		return fmt.Errorf("%w (league); delete and re-create the board to change it", ErrCohortFixed)
	}
	return nil
}

// CohortID is the id of cohort n (from 1) of a tier: "n" on a board
// without a league (tier ""), "<tier>-<n>" on a league board.
func CohortID(tier string, n int64) string {
	if tier == "" {
		return strconv.FormatInt(n, 10)
	}
	return tier + "-" + strconv.FormatInt(n, 10)
}

// ParseCohortID splits a cohort id of board b into its tier ("" without a
// league) and number: ErrBadRequest naming the cohort on a board without
// cohorts or for a malformed id.
func (b Board) ParseCohortID(id string) (tier string, n int64, err error) {
	if !b.Cohorted() {
		return "", 0, fmt.Errorf("%w: board %s has no cohorts", ErrBadRequest, b.ID)
	}
	num := id
	if b.Leagued() {
		i := strings.LastIndexByte(id, '-')
		if i < 0 || b.League.Tiers.Index(id[:i]) < 0 {
			return "", 0, fmt.Errorf("%w: cohort %q is not <tier>-<n> with a tier of board %s", ErrBadRequest, clipID(id), b.ID)
		}
		tier, num = id[:i], id[i+1:]
	}
	n, perr := strconv.ParseInt(num, 10, 64)
	if perr != nil || n < 1 || num[0] == '0' || num[0] == '+' {
		return "", 0, fmt.Errorf("%w: cohort %q is not a cohort id of board %s", ErrBadRequest, clipID(id), b.ID)
	}
	return tier, n, nil
}

// CohortOf is the number (from 1) of the cohort the n-th member (from 0)
// placed in a tier and period joins: cohorts fill in order of arrival.
func (b Board) CohortOf(n int64) int64 { return n/int64(b.Cohort.Size) + 1 }

// Step is the tier move of the member at 1-based position pos of a final
// cohort of count members: +1 for the best Promote, -1 for the worst
// Demote, else 0. Promote + Demote ≤ Size keeps the two ends apart in a
// full cohort; in a smaller one the best go up first.
func (l League) Step(pos, count int) int {
	switch {
	case pos <= l.Promote:
		return 1
	case pos > count-l.Demote:
		return -1
	}
	return 0
}

// MoveTier is tier index t moved by step, kept within the league's tiers.
func (l League) MoveTier(t, step int) int {
	return min(max(t+step, 0), l.Tiers.Len()-1)
}

// CohortIDs lists the cohorts of a period whose tiers have had placed[t]
// members placed (t a tier index, 0 without a league), in order: each
// tier's from the lowest, each in order of filling (Store.Cohorts).
func (b Board) CohortIDs(placed map[int]int64) []string {
	out := []string{}
	if !b.Cohorted() {
		return out
	}
	tiers := max(b.League.Tiers.Len(), 1)
	size := int64(b.Cohort.Size)
	for t := range tiers {
		tier := ""
		if b.Leagued() {
			tier = b.League.Tiers.At(t)
		}
		for n := int64(1); n <= (placed[t]+size-1)/size; n++ {
			out = append(out, CohortID(tier, n))
		}
	}
	return out
}
