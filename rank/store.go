// Package rank owns leaderboards: board configs, the Store interface and its
// two engines (Redis with Lua scripts, and an in-memory B+tree), periods,
// and the conformance suite both engines pass (rank/ranktest).
package rank

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/wsgateway/wsgateway/internal/meta"
)

// Op says which number an event carries.
type Op uint8

const (
	OpDelta Op = 1 // "delta": boards with mode incr
	OpValue Op = 2 // "value": boards with modes best and set
)

// Event is one score event. ID is the idempotency key within the board and
// the member (R4 v1.1): two members' equal ids are two events.
type Event struct {
	Board  string
	ID     string
	Member string
	Name   string // display name to remember for the member; "" keeps the stored one
	Op     Op
	Amount int64
	// At is when the scored thing happened (§6, server and admin only);
	// zero = the store's clock when the event is applied. The store
	// refuses one more than MaxAhead ahead of its clock.
	At time.Time
	// Submitter names who submitted the event (a connection, a REST
	// request), for order only: a store applies one submitter's events to
	// one board in the order submitted, and may apply different submitters'
	// events (or one submitter's to different boards) in either order, as
	// it would events sent to two nodes. Not part of the
	// payload. Callers that leave it zero share one submitter; two that
	// happen to share a number are only kept in order together.
	Submitter uint64
	// Meta is the event's metadata (§11), "" for none: kept with the
	// score it sets, in the same atomic step (R26).
	Meta meta.Meta
	// Into, when not 0, is the past period an admin's import writes
	// (§18): the event is applied to it at its start (Board.Restore)
	// instead of by R17. Only the API's import sets it.
	Into int64
	// Region is the member's region on a region board (§17): its
	// profile's country as the submitting node knows it, "" = RegionNone.
	// The profile lives apart from the board's data, so the node passes
	// it; not part of the payload (a retry after a move is a retry).
	Region string
	// Verdict is the board's hook's answer (§16), set when the event is
	// applied after its call; Reason is a flag's, and Claim the token of
	// the claim the call was made under (ValidateError). Not part of
	// the payload.
	Verdict Verdict
	Reason  string
	Claim   string
}

// PayloadHash identifies what an event asks for, so a repeated request id with
// another payload is told apart from a retry (R4). The display name is not
// part of it: a retry may carry a refreshed token.
func (e Event) PayloadHash() uint64 {
	h := fnv.New64a()
	h.Write([]byte(e.Member))
	var b [9]byte
	b[0] = byte(e.Op)
	binary.BigEndian.PutUint64(b[1:], uint64(e.Amount))
	h.Write(b[:])
	if !e.At.IsZero() {
		// Part of the payload, but only when sent: an event without at
		// keeps the hash it had before v1.1.
		binary.BigEndian.PutUint64(b[1:], uint64(e.At.UnixMilli()))
		b[0] = '@'
		h.Write(b[:])
	}
	if e.Into != 0 {
		binary.BigEndian.PutUint64(b[1:], uint64(e.Into))
		b[0] = '>'
		h.Write(b[:])
	}
	x := h.Sum64()
	if e.Meta != "" {
		// Likewise only when sent: another meta under the same id is
		// another request, not a retry. FNV-1a goes on over "#" and the
		// meta by hand: a Write of the string's bytes would allocate.
		const prime = 1099511628211
		x = (x ^ '#') * prime
		for i := 0; i < len(e.Meta); i++ {
			x = (x ^ uint64(e.Meta[i])) * prime
		}
	}
	return x
}

// Result is what applying an event produced, read in the same atomic step as
// the write (R3). A duplicate returns the first result with Duplicate set.
type Result struct {
	Board     string
	Member    string
	Score     int64
	Rank      int64 // 1-based; 0: not read (a sharded board's ack without ack_rank global, R24)
	PrevRank  int64 // 0: the member was not on the board (null on the wire), or Rank is 0
	PrevScore int64 // meaningful when Had
	Had       bool  // the member had an entry before the event (PrevRank > 0 when ranks were read)
	Duplicate bool
	Seq       int64 // the board's change sequence number of this event
	Period    int64 // the period index written to (0 for reset none)
	// Decimals says the scores are in units of 10^-Decimals (Board.Decimals:
	// 3 on hot boards, else 0); the wire prints them with that many decimals.
	Decimals int
	// Cohort is the id of the member's cohort on a cohort board (§12),
	// where Rank and PrevRank are ranks within it; Tier its tier on a
	// league board.
	Cohort string
	Tier   string
	// Capped says the board's cap (§18) cut the event's delta to Applied.
	Capped  bool
	Applied int64
	// Region is the member's region on a region board (§17) and
	// RegionRank its rank there, read in the same step (R37); RegionFrom
	// the region its entry left in this step ("" when it did not move).
	Region     string
	RegionRank int64
	RegionFrom string
	// Held: the member is held in the event's period after it (§16): its
	// entry is hidden from everyone's reads but its own and admins'.
	// Hold is the reason when this event held it (a flag, a gain or a
	// jump), "" otherwise.
	Held bool
	Hold string
}

// Entry is one ranked member.
type Entry struct {
	Rank   int64  `json:"rank"`
	Member string `json:"member"`
	Score  int64  `json:"score"`
	Name   string `json:"name,omitempty"`
	// Avatar and Country come from the member's profile (R20).
	Avatar  string `json:"avatar,omitempty"`
	Country string `json:"country,omitempty"`
	// Meta is that of the event that set the score (§11), "" for none.
	Meta meta.Meta `json:"meta,omitempty"`
}

// Page is a slice of a board in rank order.
type Page struct {
	Board   string
	Period  int64
	Offset  int
	Entries []Entry
	Total   int64 // members on the board (in this period)
	Seq     int64 // the board's seq when the page was read
	// Decimals: as Result.Decimals, for every score of the page.
	Decimals int
}

// MemberRank is one member's position and its neighbours.
type MemberRank struct {
	Member string
	Found  bool  // false: not on the board; Rank and Score are then 0
	Rank   int64 // 1-based
	Score  int64
	Name   string
	// Around holds up to `around` entries above and below the member, the
	// member's own entry included, in rank order. Empty when not found.
	Around []Entry
	// Cohort is the member's cohort on a cohort board (§12), where Rank
	// and Around are within it; Tier its tier on a league board.
	Cohort string
	Tier   string
	// Region is the member's region on a region board (§17) and
	// RegionRank its rank there (Ranks); RegionRanks puts Rank and Around
	// within it too.
	Region     string
	RegionRank int64
}

// HistoryEvent is one applied event as a board with history keeps it
// (§11): its request id, number, the member's score after it, its time
// (unix ms) and meta.
type HistoryEvent struct {
	ID     string
	Op     Op
	Amount int64
	Score  int64
	At     int64
	Meta   meta.Meta
}

// Ranks is a consistent snapshot of several members of one board.
type Ranks struct {
	Board   string
	Period  int64
	Members []MemberRank // in the order asked
	Total   int64
	Seq     int64
	// Decimals: as Result.Decimals, for every score read.
	Decimals int
}

// Hooks are what an engine calls back into: dependencies, not tuning.
type Hooks struct {
	Sink     Sink             // hears of every change (nil: nobody)
	Complete func(run func()) // runs one batch's Done callbacks at the batch boundary; nil: run directly
}

// Completes runs a batch's Done callbacks through h.Complete: both engines
// call it once per batch (a Redis pipeline; a memory Apply, a batch of
// one), so a caller whose callbacks queue work (the hub's acks) hands it on
// once per batch. Complete must call run exactly once, before it returns,
// and must not call the store.
func (h Hooks) Completes(run func()) {
	if h.Complete == nil {
		run()
		return
	}
	h.Complete(run)
}

// BoardRanks, as Ranks' around, asks for each member's rank on the whole
// board and no neighbours, on cohort boards too: member lists rank on the
// whole board (§11), a member's own reads within its cohort (§12).
const BoardRanks = -1

// Store is a leaderboard engine: everything both engines implement, so a
// wrapper that embeds it forwards every capability and none is found by
// type assertion. All methods are safe for concurrent use. Errors are the
// sentinels of errors.go (wrapped with detail) or internal.
type Store interface {
	BoardCache
	Profiles
	Moderation
	Outbox
	Eraser       // erase.go (§13, R29)
	Streams      // stream.go (§15)
	Integrity    // integrity.go (§16, R35)
	RegionReader // region.go (§17)
	Seasons      // season.go (§18)

	// PutBoard creates or replaces a board config (validated). Changing the
	// order, mode or tiebreak of a board that has data is allowed and takes
	// effect for later events; callers should avoid it. The config of a
	// board that is final (§6) no longer changes: ErrBoardClosed.
	PutBoard(ctx context.Context, b Board) (Board, error)
	// GetBoard returns ErrUnknownBoard for a board that does not exist.
	GetBoard(ctx context.Context, id string) (Board, error)
	// Boards lists every board, sorted by id.
	Boards(ctx context.Context) ([]Board, error)
	// DeleteBoard removes the board and every key of its data.
	DeleteBoard(ctx context.Context, id string) error
	// Count is the number of members on the board in the current period.
	Count(ctx context.Context, board string) (int64, error)

	// Board returns the config the engine applies events with: the Redis
	// engine's is cached for a few seconds (each stored config carries a
	// version its scripts check, so a stale one is never applied), the
	// memory engine's is the stored one. This is the gateway's one board
	// cache: callers that need a config on a hot path ask here.
	Board(ctx context.Context, id string) (Board, error)
	// Forget drops the cached config of a board that changed elsewhere
	// (another node's PUT or DELETE, heard over the bus).
	Forget(id string)

	// Apply submits one event to be applied atomically and idempotently
	// (R3–R6, R16) and returns without waiting: done is called exactly once
	// with its outcome, possibly before Apply returns (the memory engine
	// completes inline), else from a goroutine of the store (the Redis
	// engine completes a pipeline's events together); it must not block and
	// must not call the store. The engine's Hooks.Sink hears of the change
	// before done runs, and done runs inside Hooks.Complete. Events of one Submitter to one board are applied in the order
	// Apply was called for them.
	// Apply blocks only while the store's queue is full
	// (backpressure) or until ctx ends; an event whose ctx ended before it
	// was sent is not applied. There is no other apply path.
	Apply(ctx context.Context, e Event, done Done)

	// Top reads entries [offset, offset+limit) of a period.
	Top(ctx context.Context, board string, period PeriodSel, offset, limit int) (Page, error)
	// Ranks reads several members with `around` neighbours each in one
	// snapshot; on a cohort board ranks and neighbours are within each
	// member's cohort (§12), unless around is BoardRanks.
	Ranks(ctx context.Context, board string, period PeriodSel, members []string, around int) (Ranks, error)
	// History reads a member's last applied events in a period, newest
	// first (§11): empty on a board without history or for a member
	// without events there.
	History(ctx context.Context, board string, period PeriodSel, member string) ([]HistoryEvent, error)
	// CohortTop reads entries [offset, offset+limit) of one cohort of a
	// period (§12): ErrUnknownBoard for no board; ErrBadRequest naming the
	// cohort on a board without cohorts or for a malformed cohort id; an
	// empty Page (Total 0) for a well-formed cohort nobody is in. The
	// page's Total is the cohort's member count.
	CohortTop(ctx context.Context, board string, period PeriodSel, cohort string, offset, limit int) (Page, error)
	// Cohorts lists the cohorts of a period (§12) in order: "1", "2", … on
	// a board without a league, else each tier's from the lowest
	// ("bronze-1", "bronze-2", "silver-1", …); every cohort a member was
	// placed in, so one whose members are all banned or removed is still
	// listed. Empty on a board without cohorts or a period nobody played;
	// ErrUnknownBoard for no board.
	Cohorts(ctx context.Context, board string, period PeriodSel) ([]string, error)
	// MemberTier is the member's tier on a league board in the period
	// (§12): the tier it was placed in when it has an entry there, else
	// the tier it would be placed in by an event (a member never seen is
	// in the lowest tier); "" on a board without a league.
	MemberTier(ctx context.Context, board string, period PeriodSel, member string) (string, error)

	// Now is the store's clock, the one that decides periods and board
	// states (§6): a node follows it, never its own.
	Now(ctx context.Context) (time.Time, error)

	// Ping reports whether the store answers (for /readyz).
	Ping(ctx context.Context) error
	Close() error
}

// BoardCache is the part of a Store that answers Board from memory (the
// Redis engine's cache, the memory engine's boards).
// CachedBoard returns the config Board would return when it is at hand
// without I/O, else false: ask Board. It needs no context, so a hot path
// (every score reads its board) spends nothing on the bound of a call that
// might wait. The config is shared with the cache: the caller must not
// modify it.
type BoardCache interface {
	CachedBoard(id string) (*Board, bool)
}

// Check validates an event against its board before any engine touches data
// (R6, R15): ids, the number's kind for the board's mode, its magnitude and the
// board's max_delta. Engines call it; callers may call it early.
func (e Event) Check(b Board) error {
	if b.Derived() {
		return fmt.Errorf("%w: board %s", ErrReadOnly, b.ID)
	}
	if !ValidMemberID(e.Member) {
		return ErrInvalidMember
	}
	if e.ID == "" {
		return fmt.Errorf("%w: missing request id", ErrBadRequest)
	}
	switch {
	case e.Op == OpDelta && b.Mode != Incr:
		return fmt.Errorf("%w: board %s has mode %s: send value, not delta", ErrBadRequest, b.ID, b.Mode)
	case e.Op == OpValue && b.Mode == Incr:
		return fmt.Errorf("%w: board %s has mode incr: send delta, not value", ErrBadRequest, b.ID)
	case e.Op != OpDelta && e.Op != OpValue:
		return fmt.Errorf("%w: event carries neither delta nor value", ErrBadRequest)
	}
	if e.Amount > MaxScore || e.Amount < -MaxScore {
		return ErrInvalidScore
	}
	if b.MaxDelta > 0 && (e.Amount > b.MaxDelta || e.Amount < -b.MaxDelta) {
		return ErrDeltaTooLarge
	}
	if e.Region != "" && !ValidRegion(e.Region) {
		return fmt.Errorf("%w: region %q is not an ISO 3166-1 alpha-2 code or ZZ", ErrBadRequest, truncate(e.Region, 16))
	}
	if e.Meta != "" {
		if b.Hot() {
			return fmt.Errorf("%w: board %s is hot: its scores carry no meta", ErrBadRequest, b.ID)
		}
		if !e.Meta.Valid() {
			return fmt.Errorf("%w: %w", ErrBadRequest, meta.ErrInvalid)
		}
	}
	return nil
}

// Combine computes a member's new score under mode m (old is ignored when
// !had). It returns ErrOutOfRange when the result leaves ±MaxScore. The Lua
// script implements the same function; the conformance suite holds them equal.
func Combine(b Board, had bool, old int64, e Event) (int64, error) {
	var n int64
	switch b.Mode {
	case Incr:
		n = e.Amount
		if had {
			n = old + e.Amount // both within ±2^53, so no int64 overflow
		}
	case Best:
		n = e.Amount
		if had && !b.Better(e.Amount, old) {
			n = old
		}
	case Set:
		n = e.Amount
	}
	if n > MaxScore || n < -MaxScore {
		return 0, ErrOutOfRange
	}
	return n, nil
}

// Better reports whether score a ranks strictly ahead of score b on this board.
func (b Board) Better(x, y int64) bool {
	if b.Order == Asc {
		return x < y
	}
	return x > y
}
