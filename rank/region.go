package rank

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// Region boards (docs/protocol.md §17, R37). A member's region is its
// profile's country, ZZ for none. Each applied event places the member's
// entry in the region the event names (Event.Region), in the same atomic
// step, so a region's standings are one more ranking of the board's own
// entries: same scores, same tie keys, same order.

// RegionNone is the region of a member whose profile names no country.
const RegionNone = "ZZ"

// MaxRegions bounds the regions of one period: every assigned ISO 3166-1
// alpha-2 code and ZZ.
const MaxRegions = 250

// RegionOf is the region of a profile country ("" = none, RegionNone).
func RegionOf(country string) string {
	if country == "" {
		return RegionNone
	}
	return country
}

// ValidRegion reports whether s names a region: an assigned ISO 3166-1
// alpha-2 code in capitals, or ZZ.
func ValidRegion(s string) bool { return s == RegionNone || ValidCountry(s) }

// CheckRegion is ValidRegion as an error: ErrBadRequest naming the region.
func CheckRegion(s string) error {
	if ValidRegion(s) {
		return nil
	}
	return fmt.Errorf("%w: region %q is not an ISO 3166-1 alpha-2 code in capitals (like DE) or ZZ", ErrBadRequest, truncate(s, 16))
}

// RegionCount is one region of a period and how many entries it holds.
type RegionCount struct {
	Region  string `json:"region"`
	Members int64  `json:"members"`
}

// SortRegions puts regions in the order §17 lists them: most members
// first, then by code, so two engines list equal counts alike. Regions
// with no entry are dropped.
func SortRegions(rs []RegionCount) []RegionCount {
	rs = slices.DeleteFunc(rs, func(r RegionCount) bool { return r.Members <= 0 })
	slices.SortFunc(rs, func(a, b RegionCount) int {
		if c := cmp.Compare(b.Members, a.Members); c != 0 {
			return c
		}
		return cmp.Compare(a.Region, b.Region)
	})
	return rs
}

// RegionReader is what a store reads of region boards. Every method
// answers ErrUnknownBoard for no board and ErrBadRequest naming the board
// on a board without regions.
type RegionReader interface {
	// RegionTop reads entries [offset, offset+limit) of one region of a
	// period, with ranks within the region; Total is the region's entry
	// count. A malformed region is ErrBadRequest; one nobody is in, an
	// empty page.
	RegionTop(ctx context.Context, board string, period PeriodSel, region string, offset, limit int) (Page, error)
	// Regions lists the regions of a period that hold entries, ordered
	// by SortRegions.
	Regions(ctx context.Context, board string, period PeriodSel) ([]RegionCount, error)
	// RegionRanks is Ranks with each member's Rank and Around within its
	// own region (a view of scope "region"); Total is the period's.
	RegionRanks(ctx context.Context, board string, period PeriodSel, members []string, around int) (Ranks, error)
}

// ErrRegionsFixed is a config change of `regions` on an existing board: a
// board's entries are placed in regions only by the events applied while it
// has them, so turning them on later would leave every earlier entry out
// (409, code read_only; delete and re-create the board).
var ErrRegionsFixed = &Error{"read_only", "field regions: fixed at creation"}

// CheckRegionsChange refuses a new config whose regions differ from the
// stored one's (ErrRegionsFixed). Both engines call it on PutBoard of an
// existing board.
func CheckRegionsChange(old, next Board) error {
	if old.Regions != next.Regions {
		return fmt.Errorf("%w (%t); delete and re-create the board to change it", ErrRegionsFixed, old.Regions)
	}
	return nil
}

// validateRegions refuses the kinds of board a region board cannot also
// be (§17): each places members its own way.
func (b Board) validateRegions() error {
	if !b.Regions {
		return nil
	}
	why := ""
	switch {
	case b.Sharded():
		why = "a sharded board"
	case b.Cohorted():
		why = "a board with cohort"
	case b.Hot():
		why = "a board with decay"
	case b.Derived():
		why = "a board with source"
	default:
		return nil
	}
	return fmt.Errorf("%w: field regions: %s has no regions", ErrInvalidConfig, why)
}

// NoRegions is the error of a region read on a board without regions.
func NoRegions(board string) error {
	return fmt.Errorf("%w: board %s has no regions", ErrBadRequest, board)
}
