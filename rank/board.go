package rank

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/wsgateway/wsgateway/internal/names"
)

// Order says which end of the board ranks first.
type Order string

const (
	Desc Order = "desc" // higher scores rank first
	Asc  Order = "asc"  // lower scores rank first
)

// Mode says how an event combines with a member's current score.
type Mode string

const (
	Incr Mode = "incr" // add the event's delta
	Best Mode = "best" // keep the better of the old score and the event's value
	Set  Mode = "set"  // the event's value replaces the score
)

// Tiebreak orders members with equal scores.
type Tiebreak string

const (
	First  Tiebreak = "first"  // the member that reached the score earlier ranks higher
	Last   Tiebreak = "last"   // the member that reached the score later ranks higher
	Shared Tiebreak = "shared" // equal scores share a rank (1, 1, 3)
)

// Reset is how often a board starts a new period: one of the names below,
// or a duration that divides 24h, from 1m up ("1m", "15m", "6h"; v1.1),
// with periods aligned to midnight in the board's tz.
type Reset string

const (
	None    Reset = "none"
	Hourly  Reset = "hourly"
	Daily   Reset = "daily"
	Weekly  Reset = "weekly" // ISO weeks, Monday 00:00 in the board's tz
	Monthly Reset = "monthly"
)

// MaxScore is the largest magnitude of a score, delta or value: 2^53-1, the
// largest integer every JSON client represents exactly.
const MaxScore int64 = 1<<53 - 1

// Limits of a board config.
const (
	MaxTop               = 100
	MaxAround            = 25 // the neighbours a rank read or view shows on each side of its member
	MaxTitle             = 128
	MinIdempotencyWindow = time.Second
	// MaxIdempotencyWindow bounds what one member can make the store hold:
	// every record lives for the window, so the per-member score rate
	// times the window is what one player can keep in Redis
	// (docs/operations.md sizes it). A client that needs longer resends
	// with new ids (R4).
	MaxIdempotencyWindow = time.Hour
	// MaxGrace bounds how long a board or period takes late events (R17).
	MaxGrace = 24 * time.Hour
	// DefaultRetain and MaxRetain bound the past periods kept readable.
	DefaultRetain = 2
	MaxRetain     = 400
	// MaxSubmissionsLimit bounds max_submissions; any real cap is far below.
	MaxSubmissionsLimit = 1_000_000_000
	// MaxHistory bounds history: the events kept per member and period.
	MaxHistory = 100
)

// ValidBoardID reports whether id is a legal board id (R15):
// ^[A-Za-z0-9_.-]{1,64}$. A byte loop rather than a regexp, as it runs on
// every event (validid_test.go checks both against the regexps).
func ValidBoardID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// ValidMemberID reports whether id is a legal member id (R15, the `sub` rule
// of §3): ^[A-Za-z0-9_.:@-]{1,64}$.
func ValidMemberID(id string) bool { return names.ValidMember(id) }

// CheckBoardID is ValidBoardID as an error: ErrInvalidBoard naming the
// rule, worded the same wherever a board id is refused (WebSocket, REST).
func CheckBoardID(id string) error {
	if ValidBoardID(id) {
		return nil
	}
	return fmt.Errorf("%w: %q must match [A-Za-z0-9_.-]{1,64}", ErrInvalidBoard, clipID(id))
}

// CheckMemberID is ValidMemberID as an error: ErrInvalidMember naming the
// rule, worded the same wherever a member id is refused.
func CheckMemberID(id string) error {
	if ValidMemberID(id) {
		return nil
	}
	return fmt.Errorf("%w: %q must match [A-Za-z0-9_.:@-]{1,64}", ErrInvalidMember, clipID(id))
}

// clipID keeps a refused id short in an error message: no legal id is
// longer than 64 bytes.
func clipID(id string) string {
	if len(id) > 64 {
		return id[:64] + "…"
	}
	return id
}

// Duration is a time.Duration that travels in JSON as a Go duration string ("10m").
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	// An *UnmarshalTypeError gets the field name filled in by encoding/json,
	// so ParseBoard's message names the field (a plain error would not).
	bad := &json.UnmarshalTypeError{Value: "duration " + string(b) + `, want a string such as "10m"`, Type: reflect.TypeFor[Duration]()}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return bad
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return bad
	}
	*d = Duration(v)
	return nil
}

// Board is a leaderboard's configuration (docs/protocol.md §5). It is stored in the
// engine so every gateway node sees the same config.
type Board struct {
	ID                string   `json:"id"`
	Title             string   `json:"title"`
	Order             Order    `json:"order"`
	Mode              Mode     `json:"mode"`
	Tiebreak          Tiebreak `json:"tiebreak"`
	Reset             Reset    `json:"reset"`
	TZ                string   `json:"tz"`
	Top               int      `json:"top"`
	MaxDelta          int64    `json:"max_delta"`
	ClientWrites      bool     `json:"client_writes"`
	Public            bool     `json:"public"`
	IdempotencyWindow Duration `json:"idempotency_window"`

	// Lifecycle (§6, v1.1). StartsAt and EndsAt are unset (null) by
	// default: the board is open from creation and never ends.
	StartsAt Instant  `json:"starts_at"`
	EndsAt   Instant  `json:"ends_at"`
	Grace    Duration `json:"grace"` // how long after an end late events still count (R17)
	// MaxSubmissions caps the events applied per member per period (R18);
	// 0 = unlimited.
	MaxSubmissions int `json:"max_submissions"`
	// Retain is how many past periods stay readable (and are kept).
	Retain int `json:"retain"`
	// History is how many of each member's last applied events a period
	// keeps (§11); 0 (absent) keeps none.
	History int `json:"history,omitzero"`
	// Cap bounds the points a member's deltas earn per period or UTC day
	// (§18, R39; season.go). Optional.
	Cap Cap `json:"cap,omitzero"`

	// Tiers name bands of the ranking for the pages (tiers.go; an
	// extension of the contract). Optional.
	Tiers Tiers `json:"tiers,omitzero"`

	// Shards spreads the members over this many sorted sets (§9, R24;
	// shard.go), fixed at creation; 0 (absent) = 1.
	Shards int `json:"shards,omitzero"`
	// AckRank says what a sharded board's acks carry (R24 v1.3):
	// AckRankNone, or empty (absent: the default), no rank and no
	// prev_rank; AckRankGlobal the member's global ranks. An unsharded
	// board refuses it.
	AckRank AckRank `json:"ack_rank,omitempty"`
	// Cohort makes the board compete in groups (§12, R27; cohort.go),
	// League moves members between tiers each period; both fixed at
	// creation.
	Cohort Cohort `json:"cohort,omitzero"`
	League League `json:"league,omitzero"`
	// Regions ranks each entry also within its member's region (§17,
	// R37; region.go), fixed at creation.
	Regions bool `json:"regions,omitzero"`
	// Decay makes the board hot (§8, R22; decay.go). Optional.
	Decay Decay `json:"decay,omitzero"`
	// Derived boards (§8, v1.1; derived.go). Group is the Redis Cluster
	// hash tag of the board's keys (default the id, fixed at creation);
	// Source makes the board a read-only combination of other boards.
	Group  string `json:"group"`
	Source Source `json:"source,omitzero"`

	// Final events (§13, webhook.go): the rewards by rank range, and how
	// many entries a final event carries (0, absent, = DefaultStandings).
	Rewards   Rewards `json:"rewards,omitzero"`
	Standings int     `json:"standings,omitzero"`

	// Score integrity (§16, integrity.go): the hook events pass before
	// they apply, and the flags that hold a member rising too fast.
	Hook  Hook  `json:"validate,omitzero"`
	Flags Flags `json:"flags,omitzero"`
}

// DefaultBoard is the config every field of which has the contract's default.
func DefaultBoard(id string) Board {
	return Board{
		ID:                id,
		Title:             "",
		Order:             Desc,
		Mode:              Incr,
		Tiebreak:          First,
		Reset:             None,
		TZ:                "UTC",
		Top:               10,
		MaxDelta:          0,
		ClientWrites:      true,
		Public:            false,
		IdempotencyWindow: Duration(10 * time.Minute),
		Retain:            DefaultRetain,
		Group:             id,
	}
}

// ParseBoard decodes a JSON board config strictly (unknown fields are an
// error), filling every absent field with its default. id, when not empty,
// is the board id from the URL: a body naming another id is an error. The
// result is validated.
func ParseBoard(id string, body []byte) (Board, error) {
	keys, err := checkKeys(body)
	if err != nil {
		return Board{}, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	b := DefaultBoard(id)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return Board{}, fmt.Errorf("%w: %v", ErrInvalidConfig, jsonErrorText(err))
	}
	if dec.More() {
		return Board{}, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalidConfig)
	}
	if keys["standings"] && b.Standings == 0 { // as shards: an explicit 0 is not the default
		return Board{}, fmt.Errorf("%w: field standings: 0 is not within 1..%d", ErrInvalidConfig, MaxStandings)
	}
	if keys["shards"] && b.Shards == 0 { // the zero value cannot tell "shards": 0 from absent
		return Board{}, fmt.Errorf("%w: field shards: 0 is not within 1..%d", ErrInvalidConfig, MaxShards)
	}
	if b.Group == "" {
		b.Group = b.ID // the default group is the id, also when it came in the body
	}
	if id != "" && b.ID != id {
		return Board{}, fmt.Errorf("%w: field id: %q does not match the board in the path %q", ErrInvalidConfig, b.ID, id)
	}
	if b.Hot() && !keys["tiebreak"] {
		b.Tiebreak = Shared // a hot board's ties are shared (R22)
	}
	if err := b.Validate(); err != nil {
		return Board{}, err
	}
	return b, nil
}

// boardFields are the exact JSON names of Board's fields.
var boardFields = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeFor[Board]()
	for i := range t.NumField() {
		m[strings.Split(t.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	return m
}()

// checkKeys rejects what encoding/json would let through: a key that
// matches a field only case-insensitively ("Order"), and a repeated key.
// It returns the keys the body has.
func checkKeys(body []byte) (map[string]bool, error) {
	return strictKeys(body, func(key string) bool { return boardFields[key] })
}

// strictKeys checks that body is one JSON object whose keys are all known
// (exact names) and none repeated, and returns the keys. Board configs and
// the objects in them are read this way.
func strictKeys(body []byte, known func(string) bool) (map[string]bool, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		if !known(key) {
			return nil, fmt.Errorf("field %s: unknown field", key)
		}
		if seen[key] {
			return nil, fmt.Errorf("field %s: appears twice", key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return seen, nil
}

func jsonErrorText(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field != "" {
		return fmt.Sprintf("field %s: wrong type (%s)", te.Field, te.Value)
	}
	return err.Error()
}

// Validate checks every field and returns ErrInvalidConfig (or ErrInvalidBoard
// for the id) with a message naming the first bad field.
func (b Board) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: field %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	if !ValidBoardID(b.ID) {
		return fmt.Errorf("%w: field id: %q must match [A-Za-z0-9_.-]{1,64}", ErrInvalidBoard, b.ID)
	}
	if len([]rune(b.Title)) > MaxTitle {
		return bad("title", "at most %d characters", MaxTitle)
	}
	switch b.Order {
	case Desc, Asc:
	default:
		return bad("order", "%q is not desc or asc", b.Order)
	}
	switch b.Mode {
	case Incr, Best, Set:
	default:
		return bad("mode", "%q is not incr, best or set", b.Mode)
	}
	switch b.Tiebreak {
	case First, Last, Shared:
	default:
		return bad("tiebreak", "%q is not first, last or shared", b.Tiebreak)
	}
	switch b.Reset {
	case None, Hourly, Daily, Weekly, Monthly:
	default:
		if _, ok := b.Reset.Duration(); !ok {
			return bad("reset", "%q is not none, hourly, daily, weekly, monthly or a duration from 1m that divides 24h (1m, 15m, 6h)", b.Reset)
		}
	}
	if _, err := b.Location(); err != nil {
		return bad("tz", "unknown time zone %q", b.TZ)
	}
	if b.Top < 1 || b.Top > MaxTop {
		return bad("top", "%d is not within 1..%d", b.Top, MaxTop)
	}
	if b.MaxDelta < 0 || b.MaxDelta > MaxScore {
		return bad("max_delta", "%d is not within 0..2^53-1", b.MaxDelta)
	}
	w := time.Duration(b.IdempotencyWindow)
	if w < MinIdempotencyWindow || w > MaxIdempotencyWindow {
		return bad("idempotency_window", "%s is not within %s..%s", w, MinIdempotencyWindow, MaxIdempotencyWindow)
	}
	if !b.StartsAt.IsZero() && !b.StartsAt.valid() {
		return bad("starts_at", "%s is outside the years 1970..9999", b.StartsAt.Time)
	}
	if !b.EndsAt.IsZero() && !b.EndsAt.valid() {
		return bad("ends_at", "%s is outside the years 1970..9999", b.EndsAt.Time)
	}
	if !b.StartsAt.IsZero() && !b.EndsAt.IsZero() && !b.EndsAt.After(b.StartsAt.Time) {
		return bad("ends_at", "%s is not after starts_at %s", b.EndsAt.Format(time.RFC3339Nano), b.StartsAt.Format(time.RFC3339Nano))
	}
	if g := time.Duration(b.Grace); g < 0 || g > MaxGrace || g%time.Millisecond != 0 {
		return bad("grace", "%s is not within 0s..%s (whole milliseconds)", g, MaxGrace)
	}
	if b.MaxSubmissions < 0 || b.MaxSubmissions > MaxSubmissionsLimit {
		return bad("max_submissions", "%d is not within 0..%d", b.MaxSubmissions, MaxSubmissionsLimit)
	}
	if b.Retain < 1 || b.Retain > MaxRetain {
		return bad("retain", "%d is not within 1..%d", b.Retain, MaxRetain)
	}
	switch {
	case b.History < 0 || b.History > MaxHistory:
		return bad("history", "%d is not within 0..%d", b.History, MaxHistory)
	case b.History > 0 && b.Derived():
		return bad("history", "a board with source applies no events, so it keeps no history")
	case b.History > 0 && b.Hot():
		return bad("history", "a board with decay keeps no history")
	}
	if err := b.validateCap(); err != nil {
		return err
	}
	if err := validateTiers(b.Tiers); err != nil {
		return bad("tiers", "%v", err)
	}
	if err := b.validateShards(); err != nil {
		return err
	}
	switch {
	case b.AckRank != "" && !b.Sharded():
		return bad("ack_rank", "only a sharded board has it (shards > 1); an unsharded board's acks always carry rank and prev_rank")
	case b.AckRank != "" && b.AckRank != AckRankNone && b.AckRank != AckRankGlobal:
		return bad("ack_rank", "%q is not none or global", b.AckRank)
	}
	if err := b.validateCohort(); err != nil {
		return err
	}
	if err := b.validateRegions(); err != nil {
		return err
	}
	if err := validateDecay(b); err != nil {
		return bad("decay", "%v", err)
	}
	if b.Hot() && b.Tiebreak != Shared {
		return bad("tiebreak", "a board with decay ranks equal scores together: tiebreak must be shared, not %s", b.Tiebreak)
	}
	if b.Group != "" && !ValidBoardID(b.Group) {
		return bad("group", "%q must match [A-Za-z0-9_.-]{1,64}", clipID(b.Group))
	}
	if err := b.Source.validate(b.ID); err != nil {
		return bad("source", "%v", err)
	}
	if b.Standings < 0 || b.Standings > MaxStandings {
		return bad("standings", "%d is not within 1..%d", b.Standings, MaxStandings)
	}
	if err := validateRewards(b.Rewards); err != nil {
		return bad("rewards", "%v", err)
	}
	if err := b.validateIntegrity(); err != nil {
		return err
	}
	// Derived, hot and sharded are three kinds of board: one each (§8, §9).
	// A board that is hot or sharded is never a source either (derived.go),
	// so its keys keep their own slot: a group is for boards combined.
	switch {
	case b.Derived() && b.Hot():
		return bad("decay", "a board with source is not hot")
	case b.Derived() && b.Sharded():
		return bad("shards", "a board with source is not sharded")
	case (b.Hot() || b.Sharded()) && b.GroupID() != b.ID:
		return bad("group", "a hot or sharded board keeps its own group (%q), not %q", b.ID, b.Group)
	}
	return nil
}

// AckRank is what a sharded board's acks carry (R24 v1.3).
type AckRank string

const (
	// AckRankNone: no rank and no prev_rank; the event touches its own
	// shard only. The default on a sharded board.
	AckRankNone AckRank = "none"
	// AckRankGlobal: the member's global rank and previous rank, read
	// right after its step, at the price of a count on every other shard.
	AckRankGlobal AckRank = "global"
)

// RanksInAck reports whether the board's acks carry rank and prev_rank:
// always on an unsharded board, with ack_rank global on a sharded one.
func (b Board) RanksInAck() bool { return !b.Sharded() || b.AckRank == AckRankGlobal }

// Instant is a moment of a board's schedule: an RFC 3339 string in JSON,
// null when unset (the zero value). It is kept in UTC to the millisecond,
// the precision of the store clock, of `at` and of frames.
type Instant struct{ time.Time }

// At is t as an Instant (UTC, to the millisecond).
func At(t time.Time) Instant { return Instant{time.UnixMilli(t.UnixMilli()).UTC()} }

func (t Instant) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.Format(time.RFC3339Nano))
}

func (t *Instant) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = Instant{}
		return nil
	}
	bad := &json.UnmarshalTypeError{Value: "time " + string(b) + `, want an RFC 3339 string such as "2026-12-01T18:00:00Z" or null`, Type: reflect.TypeFor[Instant]()}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return bad
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return bad
	}
	*t = At(v)
	return nil
}

// valid reports whether t is a time frames and scripts carry exactly.
func (t Instant) valid() bool { return t.Year() >= 1970 && t.Year() <= 9999 }

// Ms is t in unix milliseconds, 0 when unset.
func (t Instant) Ms() int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// Location is the board's time zone, in which period boundaries fall.
func (b Board) Location() (*time.Location, error) {
	if b.TZ == "" || b.TZ == "UTC" {
		return time.UTC, nil
	}
	return time.LoadLocation(b.TZ)
}
