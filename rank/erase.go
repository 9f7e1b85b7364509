package rank

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wsgateway/wsgateway/internal/meta"
)

// Eraser is an engine's side of §13's erasure and export of a member.
type Eraser interface {
	// Erase removes everything the store holds about member (R29): its
	// entries, hidden entries, names, meta, history and submission counts
	// on every board (plain, derived, hot, sharded, cohort) and every
	// period the board keeps, its cohort seats and league tier (a seat is
	// not given back: a later event places it anew, in the next seat, so
	// no cohort ever exceeds its size), its bans (board and global), its
	// profile, and its
	// idempotency records, so a later event with an old request id is
	// applied anew. A member the store knows nothing of is erased too,
	// with nothing removed: erasure is idempotent. It works in short
	// steps, however many records a board holds; when ctx's deadline comes
	// first it answers what it did with Done false, and the next call
	// resumes (not an error). ErrInvalidMember for a bad id.
	Erase(ctx context.Context, member string) (Erasure, error)
	// Export reads everything the store holds about member (§13). A
	// member the store knows nothing of exports empty.
	Export(ctx context.Context, member string) (Export, error)
}

// Erasure is what an Erase removed: the boards where something of the
// member was, sorted, the sorted-set entries removed (one per board and
// period the member had a score in, shown or hidden by a ban) and the
// idempotency records forgotten. Done is false when the caller's context
// ended before everything was erased: the next Erase of the member goes on
// where this one stopped, and its counts include this one's.
type Erasure struct {
	Boards  []string
	Entries int64
	Records int64
	// Profile and GlobalBan: the member had a profile, a ban from every
	// board (set by the call that finishes: Done).
	Profile, GlobalBan bool
	Done               bool
}

// Found reports whether the store held anything of the member: a member
// it knew nothing of is erased too, and Found tells the caller so.
func (e Erasure) Found() bool {
	return len(e.Boards) > 0 || e.Entries > 0 || e.Records > 0 || e.Profile || e.GlobalBan
}

// Export is a member's data as GET /api/v1/members/{member}/export
// answers it (§13).
type Export struct {
	Member  string          `json:"member"`
	Profile *Profile        `json:"profile"` // nil: none
	Entries []ExportEntry   `json:"entries"`
	History []ExportHistory `json:"history"`
	Bans    []ExportBan     `json:"bans"`
}

// ExportEntry is the member's score in one period of one board.
type ExportEntry struct {
	Board  string    `json:"board"`
	Period int64     `json:"period"` // the period index; 0 on a board without periods
	Score  int64     `json:"score"`
	Rank   int64     `json:"rank"` // 0 when Hidden
	Meta   meta.Meta `json:"meta,omitempty"`
	// Cohort and Tier: on a cohort board (§12) the cohort Rank is within,
	// and its league tier; without them such a rank reads as the board's.
	Cohort string `json:"cohort,omitempty"`
	Tier   string `json:"tier,omitempty"`
	// Hidden: a ban hides the entry (R21); it has no rank.
	Hidden bool `json:"hidden,omitempty"`
	// Decimals: as Result.Decimals (3 on hot boards); the API prints the
	// score with that many decimals.
	Decimals int `json:"-"`
}

// ExportHistory is one applied event a board with history keeps (§11).
type ExportHistory struct {
	Board  string    `json:"board"`
	Period int64     `json:"period"`
	ID     string    `json:"id"`
	Delta  *int64    `json:"delta,omitempty"`
	Value  *int64    `json:"value,omitempty"`
	Score  int64     `json:"score"`
	At     int64     `json:"at"` // unix ms
	Meta   meta.Meta `json:"meta,omitempty"`
}

// ExportBan is one live ban of the member; Board "" is a global ban.
type ExportBan struct {
	Board  string     `json:"board,omitempty"`
	Reason string     `json:"reason,omitempty"`
	Until  *time.Time `json:"until,omitempty"`
	At     time.Time  `json:"at"`
}

// ExportOf reads member's data through the Store's own reads, the same on
// both engines: every kept period of every board (rank.KeptPeriods), its
// history there, its bans and its profile. An entry hidden by a ban has
// no rank to read, so reads do not show it: each engine adds those itself
// (AddHidden).
func ExportOf(ctx context.Context, s Store, member string) (Export, error) {
	if !ValidMemberID(member) {
		return Export{}, ErrInvalidMember
	}
	out := Export{Member: member, Entries: []ExportEntry{}, History: []ExportHistory{}, Bans: []ExportBan{}}
	p, err := s.GetProfile(ctx, member)
	switch {
	case err == nil:
		out.Profile = &p
	case !errors.Is(err, ErrNoProfile):
		return Export{}, err
	}
	now, err := s.Now(ctx)
	if err != nil {
		return Export{}, err
	}
	boards, err := s.Boards(ctx)
	if err != nil {
		return Export{}, err
	}
	for _, b := range boards {
		if err := exportBoard(ctx, s, b, member, now, &out); err != nil && !errors.Is(err, ErrUnknownBoard) {
			return Export{}, fmt.Errorf("board %s: %w", b.ID, err)
		}
	}
	gbans, err := s.GlobalBans(ctx)
	if err != nil {
		return Export{}, err
	}
	for _, ban := range gbans {
		if ban.Member == member {
			out.Bans = append(out.Bans, exportBan("", ban))
		}
	}
	return out, nil
}

// exportBoard adds what board b holds of member to out.
func exportBoard(ctx context.Context, s Store, b Board, member string, now time.Time, out *Export) error {
	kept := KeptPeriods(b, now)
	slices.Sort(kept)
	kept = slices.Compact(kept)
	for _, idx := range kept {
		sel := PeriodSel("")
		if b.Reset != None {
			sel = PeriodSel(fmt.Sprint(idx))
		}
		rs, err := s.Ranks(ctx, b.ID, sel, []string{member}, 0)
		if err != nil {
			return err
		}
		if len(rs.Members) == 1 && rs.Members[0].Found {
			mr := rs.Members[0]
			e := ExportEntry{Board: b.ID, Period: rs.Period, Score: mr.Score, Rank: mr.Rank, Cohort: mr.Cohort, Tier: mr.Tier, Decimals: rs.Decimals}
			for _, a := range mr.Around {
				if a.Member == member {
					e.Meta = a.Meta
				}
			}
			out.Entries = append(out.Entries, e)
		}
		if b.History == 0 {
			continue
		}
		hs, err := s.History(ctx, b.ID, sel, member)
		if err != nil {
			return err
		}
		for _, h := range hs {
			x := ExportHistory{Board: b.ID, Period: idx, ID: h.ID, Score: h.Score, At: h.At, Meta: h.Meta}
			amt := h.Amount
			if h.Op == OpDelta {
				x.Delta = &amt
			} else {
				x.Value = &amt
			}
			out.History = append(out.History, x)
		}
	}
	bans, err := s.Bans(ctx, b.ID)
	if err != nil {
		return err
	}
	for _, ban := range bans {
		if ban.Member == member {
			out.Bans = append(out.Bans, exportBan(b.ID, ban))
		}
	}
	return nil
}

// AddHidden adds entries a ban hides to x, keeping the entries in board
// and period order.
func (x *Export) AddHidden(es ...ExportEntry) {
	for _, e := range es {
		e.Hidden, e.Rank = true, 0
		x.Entries = append(x.Entries, e)
	}
	slices.SortStableFunc(x.Entries, func(a, b ExportEntry) int {
		if a.Board != b.Board {
			return strings.Compare(a.Board, b.Board)
		}
		return cmp.Compare(a.Period, b.Period)
	})
}

func exportBan(board string, b Ban) ExportBan {
	x := ExportBan{Board: board, Reason: b.Reason, At: b.At}
	if !b.Until.IsZero() {
		u := b.Until
		x.Until = &u
	}
	return x
}
