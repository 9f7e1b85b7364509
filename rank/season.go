package rank

// Season data (docs/protocol.md §18): a period read in chunks for an
// export, a past period written by an import, and caps on the points a
// member earns per period or UTC day.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wsgateway/wsgateway/internal/names"
)

// Seasons is an engine's side of §18.
type Seasons interface {
	// Scan reads up to limit entries of a period in rank order, starting
	// right after from ("" = the first entry), and the cursor of the next
	// chunk (Next "" once the period has no more). Each chunk is read in
	// one atomic step per sorted set (on a sharded board, one per shard),
	// and starts strictly after the last entry of the one before in the
	// board's order, wherever that entry has moved since: an export of a
	// live period never goes back, and lists each entry that did not change
	// meanwhile exactly once (docs/seasons.md). With hidden, the entries a
	// ban hides (R21) are listed in their place, marked, and every rank
	// counts them (the standings as if nothing were hidden); without, the
	// ranks are those of every other read. A period past retain reads
	// empty. ErrBadRequest for a limit below 1 or a cursor of another kind.
	Scan(ctx context.Context, board string, period PeriodSel, from Cursor, limit int, hidden bool) (ScanPage, error)
	// NameProfiles gives each listed member whose profile has no name that
	// name (creating the profile when there is none) and returns the
	// members whose profile it changed. Names must pass names.Check; the
	// caller validated them. A member whose profile has a name keeps it.
	NameProfiles(ctx context.Context, names []MemberName) ([]string, error)
	// ImportMark is how far the import id of the board got (the zero mark
	// for one never marked, or forgotten after ImportMarkTTL).
	ImportMark(ctx context.Context, board, id string) (ImportMark, error)
	// MarkImport notes that every line of the import up to line was
	// settled (applied, or failed for good): the mark's Start is the
	// store's clock when it is first made, its Line the greater of the
	// two. A mark is kept at least ImportMarkTTL after it was last moved.
	MarkImport(ctx context.Context, board, id string, line int64) error
}

// ImportMark is how far an import got (R38). The lines an import applied
// are duplicates of a re-run as long as their idempotency records live
// (the board's window); a re-run later than that skips the lines up to
// Line instead, so it still applies nothing twice.
type ImportMark struct {
	Start time.Time // when the import first ran, on the store's clock
	Line  int64     // every line up to it was settled
}

// ImportMarkTTL is how long an import's mark is kept after its last run.
const ImportMarkTTL = 30 * 24 * time.Hour

// Cursor is a position in a period's order, as Scan returns it: opaque,
// engine-made, valid for the board and period it was read from.
type Cursor string

// ScanPage is one chunk of Scan.
type ScanPage struct {
	Board   string
	Period  int64
	Entries []ScanEntry
	Next    Cursor // "" when the period has no more entries
	// Decimals: as Result.Decimals, for every score of the chunk.
	Decimals int
}

// ScanEntry is one entry of a Scan; Hidden when a ban hides it (only with
// Scan's hidden).
type ScanEntry struct {
	Entry
	Hidden bool
}

// MemberName is a name for a member's profile (NameProfiles).
type MemberName struct {
	Member, Name string
}

// NormalizeName is a display name from a client (an import line's) as it
// is stored: NFC, checked by the rules of profile and token names (§3, §7).
func NormalizeName(s string) (string, error) { return names.Normalize(s) }

// MaxScan bounds one Scan chunk, so one step of either engine stays short.
const MaxScan = 5000

// CheckScan validates Scan's limit, wrapped with the caller's context.
func CheckScan(limit int) error {
	if limit < 1 || limit > MaxScan {
		return fmt.Errorf("%w: scan limit %d is not within 1..%d", ErrBadRequest, limit, MaxScan)
	}
	return nil
}

// SelIndex is the selector that reads period idx of board b: its index, or
// the only period of a board without periods.
func SelIndex(b Board, idx int64) PeriodSel {
	if b.Reset == None || b.Reset == "" {
		return ""
	}
	return PeriodSel(fmt.Sprint(idx))
}

// ---- restoring a past period (§18: an import with period) ----

// Restore checks that the past period idx of board b can be written by
// an import at now (the store's clock) and returns it with the time its
// events are applied at: the period's start, or starts_at when the board
// opened within it. Events with Event.Into take this path instead of R17's
// (the API gives Into to admin imports only): the period must be one
// the board retains (Retains), strictly before the current one; the board
// must not be final, nor a league (whose past periods' moves are made);
// its schedule must cover the period (board_closed otherwise).
func (b Board) Restore(idx int64, now time.Time) (Period, time.Time, error) {
	cur := PeriodAt(b, now)
	if cur.End.IsZero() {
		return Period{}, time.Time{}, fmt.Errorf("%w: board %s has no periods to restore", ErrBadRequest, b.ID)
	}
	if b.Leagued() {
		return Period{}, time.Time{}, fmt.Errorf("%w: board %s is a league: its past periods' moves are made, so they are not restored", ErrBadRequest, b.ID)
	}
	p, ok := PeriodOf(b, idx, now, b.Retained())
	if !ok || p.Index == cur.Index {
		return Period{}, time.Time{}, fmt.Errorf("%w: period %d is not a past period board %s retains", ErrBadRequest, idx, b.ID)
	}
	if b.StateAt(now) == Final {
		return Period{}, time.Time{}, b.Closed(ClosedEnded, time.Time{})
	}
	t := p.Start
	if !b.StartsAt.IsZero() && t.Before(b.StartsAt.Time) {
		t = b.StartsAt.Time
	}
	if !t.Before(p.End) {
		return Period{}, time.Time{}, b.Closed(ClosedNotStarted, p.Start)
	}
	if !b.EndsAt.IsZero() && !t.Before(b.EndsAt.Time) {
		return Period{}, time.Time{}, b.Closed(ClosedEnded, t)
	}
	return p, t, nil
}

// ---- caps (§18, R39) ----

// Cap bounds what a member's positive deltas add up to within a period
// ("period") or a UTC day ("day") on an incr board. The zero value is no
// cap.
type Cap struct {
	Points int64  `json:"points"`
	Per    CapPer `json:"per"`
}

// CapPer is what a cap counts within.
type CapPer string

const (
	CapPeriod CapPer = "period" // the event's period (the whole board without reset)
	CapDay    CapPer = "day"    // the UTC day of the store's clock when the event is applied
)

// IsZero reports whether c is unset (the board has no cap).
func (c Cap) IsZero() bool { return c == Cap{} }

// UnmarshalJSON reads a cap object strictly, as board configs are read.
func (c *Cap) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = Cap{}
		return nil
	}
	if _, err := strictKeys(b, func(k string) bool { return k == "points" || k == "per" }); err != nil {
		return fmt.Errorf("field cap: %v (want points and per)", err)
	}
	type plain Cap // no UnmarshalJSON: no recursion
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("field cap: %v", err)
	}
	if p.Points == 0 {
		return fmt.Errorf("field cap: points 0 is not within 1..2^53-1")
	}
	*c = Cap(p)
	return nil
}

// validateCap checks the cap field (called by Validate).
func (b Board) validateCap() error {
	if b.Cap.IsZero() {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: field cap: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case b.Cap.Points < 1 || b.Cap.Points > MaxScore:
		return bad("points %d is not within 1..2^53-1", b.Cap.Points)
	case b.Cap.Per != CapPeriod && b.Cap.Per != CapDay:
		return bad("per %q is not period or day", b.Cap.Per)
	case b.Derived():
		return bad("a board with source applies no events")
	case b.Mode != Incr:
		return bad("a cap bounds deltas: mode must be incr, not %s", b.Mode)
	}
	return nil
}

// Capped reports whether the board caps its members' points.
func (b Board) Capped() bool { return !b.Cap.IsZero() }

// CapDayOf is the UTC day number (days since the unix epoch) a per-day cap
// counts an event applied at t in.
func CapDayOf(t time.Time) int64 {
	return t.Unix() / 86400
}

// CapEnd is when the count of a per-day cap's day ends: the next UTC
// midnight after t.
func CapEnd(t time.Time) time.Time {
	return time.Unix((CapDayOf(t)+1)*86400, 0).UTC()
}

// ApplyCap is a capped event's share of the cap: for delta d with used
// points counted so far, the delta to apply and whether it was cut. A
// delta of 0 or below passes whole and uses nothing; one with nothing
// left is ErrLimitReached. Both engines call it (apply.lua restates it).
func (c Cap) ApplyCap(d, used int64) (int64, bool, error) {
	if d <= 0 {
		return d, false, nil
	}
	left := c.Points - used
	if left <= 0 {
		return 0, false, fmt.Errorf("%w: %d points per member per %s", ErrLimitReached, c.Points, c.Per)
	}
	if d > left {
		return left, true, nil
	}
	return d, false, nil
}
