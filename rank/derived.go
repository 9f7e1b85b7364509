package rank

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Derived boards (docs/protocol.md §8, R22–R23): a board with a Source is a
// read-only, incrementally maintained weighted sum of other boards. Every
// applied event that moves a member's score on a source by d adds w × d to
// each view of the derived board the event's period belongs to, in the same
// atomic step (the engines; same Redis hash slot: the group). A union's view
// of period p is Σ w_i × source_i[p]; a window's view of period p is
// Σ source[q] over the `periods` periods ending at p, so an event of period
// q lands in the views of q and the periods-1 after it, and nothing happens
// at a boundary.

// SourceKind says how a derived board combines its sources.
type SourceKind string

const (
	Union  SourceKind = "union"  // Σ weight × score over several boards
	Window SourceKind = "window" // Σ over the last `periods` periods of one board
)

// Limits of a source.
const (
	MaxSources       = 16
	MaxWeight        = 1000
	MaxWindowPeriods = 400
	// MaxFanIn bounds the work one event of a source board costs its
	// derived boards: the views the event lands in, summed over them (a
	// window's periods, 1 per union; FanIn). Each view is a write in the
	// event's own atomic step, so without it a few long windows over one
	// board would multiply the cost of every score on it. It admits one
	// window of MaxWindowPeriods and more besides.
	MaxFanIn = 512
)

// Source is a derived board's definition. The zero value means "not
// derived". It holds arrays so that Board stays comparable.
type Source struct {
	Kind    SourceKind
	n       int
	boards  [MaxSources]string
	weights [MaxSources]int64
	Periods int // window only
}

// UnionOf is a union source of boards with weights (nil: all 1). It does not
// validate; Board.Validate does.
func UnionOf(boards []string, weights []int64) Source {
	s := Source{Kind: Union, n: min(len(boards), MaxSources)}
	copy(s.boards[:], boards)
	for i := range s.n {
		s.weights[i] = 1
		if i < len(weights) {
			s.weights[i] = weights[i]
		}
	}
	return s
}

// WindowOf is a window source: the last periods periods of board.
func WindowOf(board string, periods int) Source {
	s := Source{Kind: Window, n: 1, Periods: periods}
	s.boards[0], s.weights[0] = board, 1
	return s
}

// IsZero reports whether s is unset (the board is not derived).
func (s Source) IsZero() bool { return s.Kind == "" }

// Boards lists the source boards (one for a window).
func (s Source) Boards() []string { return slices.Clone(s.boards[:s.n]) }

// Weights lists the weight of each source board (1 for a window).
func (s Source) Weights() []int64 { return slices.Clone(s.weights[:s.n]) }

// Span is how many consecutive periods, from an event's own, each event of
// a source lands in: 1 for a union, Periods for a window.
func (s Source) Span() int {
	if s.Kind == Window {
		return s.Periods
	}
	return 1
}

type sourceJSON struct {
	Kind    SourceKind `json:"kind"`
	Boards  []string   `json:"boards,omitempty"`
	Weights []int64    `json:"weights,omitempty"`
	Board   string     `json:"board,omitempty"`
	Periods int        `json:"periods,omitempty"`
}

// MarshalJSON writes a union as kind, boards, weights and a window as kind,
// board, periods.
func (s Source) MarshalJSON() ([]byte, error) {
	if s.Kind == Window {
		return json.Marshal(sourceJSON{Kind: s.Kind, Board: s.boards[0], Periods: s.Periods})
	}
	return json.Marshal(sourceJSON{Kind: s.Kind, Boards: s.Boards(), Weights: s.Weights()})
}

// UnmarshalJSON reads a source strictly; shapes that cannot be held (too
// many boards, weights not matching boards) are errors naming the field.
func (s *Source) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = Source{}
		return nil
	}
	if _, err := strictKeys(b, func(k string) bool {
		return k == "kind" || k == "boards" || k == "weights" || k == "board" || k == "periods"
	}); err != nil {
		return fmt.Errorf("field source: %v", err)
	}
	var j sourceJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("field source: %v", err)
	}
	switch j.Kind {
	case Union:
		if j.Board != "" || j.Periods != 0 {
			return fmt.Errorf("field source: a union takes boards and weights, not board or periods")
		}
		if len(j.Boards) < 1 || len(j.Boards) > MaxSources {
			return fmt.Errorf("field source: a union takes 1..%d boards, got %d", MaxSources, len(j.Boards))
		}
		if j.Weights != nil && len(j.Weights) != len(j.Boards) {
			return fmt.Errorf("field source: %d weights for %d boards", len(j.Weights), len(j.Boards))
		}
		*s = UnionOf(j.Boards, j.Weights)
	case Window:
		if j.Boards != nil || j.Weights != nil {
			return fmt.Errorf("field source: a window takes board and periods, not boards or weights")
		}
		*s = WindowOf(j.Board, j.Periods)
	default:
		return fmt.Errorf("field source: kind %q is not union or window", j.Kind)
	}
	return nil
}

// validate is the single-board check of a source (Board.Validate).
func (s Source) validate(self string) error {
	if s.IsZero() {
		return nil
	}
	switch s.Kind {
	case Union, Window:
	default:
		return fmt.Errorf("kind %q is not union or window", s.Kind)
	}
	if s.n < 1 {
		return fmt.Errorf("no source board")
	}
	seen := map[string]bool{}
	for i, id := range s.boards[:s.n] {
		if !ValidBoardID(id) {
			return fmt.Errorf("board %q must match [A-Za-z0-9_.-]{1,64}", clipID(id))
		}
		if id == self {
			return fmt.Errorf("board %s cannot be its own source", id)
		}
		if seen[id] {
			return fmt.Errorf("board %s appears twice", id)
		}
		seen[id] = true
		if w := s.weights[i]; w < 1 || w > MaxWeight {
			return fmt.Errorf("weight %d of %s is not within 1..%d", w, id, MaxWeight)
		}
	}
	if s.Kind == Window && (s.Periods < 1 || s.Periods > MaxWindowPeriods) {
		return fmt.Errorf("periods %d is not within 1..%d", s.Periods, MaxWindowPeriods)
	}
	if s.Kind == Union && s.Periods != 0 {
		return fmt.Errorf("a union has no periods")
	}
	return nil
}

// GroupID is the board's effective group: Group, or the id when unset (a
// config stored before v1.1).
func (b Board) GroupID() string {
	if b.Group == "" {
		return b.ID
	}
	return b.Group
}

// Derived reports whether b is a derived board (it has a source).
func (b Board) Derived() bool { return !b.Source.IsZero() }

// Dep is one dependant of a source board: the derived board, the weight of
// the source in it and its span (Source.Span).
type Dep struct {
	Board  string
	Weight int64
	Span   int
}

// FanIn is the views one event of a source board lands in, over its
// dependants deps (their spans summed), leaving out board self.
func FanIn(deps []Dep, self string) int {
	n := 0
	for _, d := range deps {
		if d.Board != self {
			n += d.Span
		}
	}
	return n
}

// ResolveDerived checks a derived board against its sources (found by get,
// with their dependants: ok false = no such board) and returns it with the
// fields it takes from them: order, reset and tz of the sources, tiebreak
// shared. A new board that would take a source's fan-in past MaxFanIn is
// refused. Errors are ErrInvalidConfig naming `source`. old is the stored
// config when the board exists (zero otherwise): a board's source and group
// are fixed at creation.
func ResolveDerived(b, old Board, get func(id string) (Board, []Dep, bool)) (Board, error) {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: field %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	if b.Group == "" {
		b.Group = b.ID
	}
	if old.ID != "" {
		if old.GroupID() != b.Group {
			return Board{}, bad("group", "%q is fixed at creation (the board has group %q): delete and re-create the board to move it", b.Group, old.GroupID())
		}
		if old.Source != b.Source {
			return Board{}, bad("source", "fixed at creation: delete and re-create the board to change it")
		}
	}
	if !b.Derived() {
		return b, nil
	}
	var first Board
	for i, id := range b.Source.Boards() {
		src, deps, ok := get(id)
		if !ok {
			return Board{}, bad("source", "board %s does not exist", id)
		}
		if n := FanIn(deps, b.ID); old.ID == "" && n+b.Source.Span() > MaxFanIn {
			return Board{}, bad("source", "board %s already feeds %d views per event to its derived boards; %d more would pass the bound of %d (fewer or shorter windows over it)",
				id, n, b.Source.Span(), MaxFanIn)
		}
		if src.Derived() {
			return Board{}, bad("source", "board %s is itself derived: a source must be a plain board", id)
		}
		if src.Hot() || src.Sharded() {
			return Board{}, bad("source", "board %s is hot or sharded: a source must be a plain board", id)
		}
		if src.Cohorted() {
			return Board{}, bad("source", "board %s has a cohort: a source must be a plain board", id)
		}
		if src.GroupID() != b.Group {
			return Board{}, bad("source", "board %s is in group %q, this board in %q: combined boards must share a group", id, src.GroupID(), b.Group)
		}
		if i == 0 {
			first = src
			continue
		}
		if src.Order != first.Order {
			return Board{}, bad("source", "boards %s and %s differ in order", first.ID, id)
		}
		if src.Reset != first.Reset || src.TZ != first.TZ {
			return Board{}, bad("source", "boards %s and %s differ in reset or tz", first.ID, id)
		}
	}
	if b.Source.Kind == Window {
		if first.Reset == None {
			return Board{}, bad("source", "board %s has no reset: a window needs periods", first.ID)
		}
		if first.Retain < b.Source.Periods-1 {
			return Board{}, bad("source", "board %s keeps %d past periods, a window of %d needs retain >= %d", first.ID, first.Retain, b.Source.Periods, b.Source.Periods-1)
		}
	}
	b.Order, b.Tiebreak, b.Reset, b.TZ = first.Order, Shared, first.Reset, first.TZ
	return b, nil
}

// CheckSourceChange refuses a new config of a board with dependants that
// would break them: another order, reset or tz, or a retain too short for a
// window over it.
func CheckSourceChange(old, b Board, deps []Dep) error {
	if len(deps) == 0 || old.ID == "" {
		return nil
	}
	bad := func(field string) error {
		return fmt.Errorf("%w: field %s: board %s is a source of %s: its %s is fixed while it has derived boards", ErrInvalidConfig, field, b.ID, deps[0].Board, field)
	}
	switch {
	case old.Order != b.Order:
		return bad("order")
	case old.Reset != b.Reset:
		return bad("reset")
	case old.TZ != b.TZ:
		return bad("tz")
	}
	for _, d := range deps {
		if d.Span > 1 && b.Retain < d.Span-1 {
			return fmt.Errorf("%w: field retain: board %s is the source of window %s of %d periods: retain must stay >= %d", ErrInvalidConfig, b.ID, d.Board, d.Span, d.Span-1)
		}
	}
	return nil
}

// ErrHasDependants refuses deleting a source board, or removing a member
// from it, while derived boards depend on it.
var ErrHasDependants = fmt.Errorf("%w: the board is a source of derived boards", ErrBadRequest)

// ViewPeriods lists the n consecutive periods of b from p on: the views
// of a derived board an event of period p lands in (n = Span).
func ViewPeriods(b Board, p Period, n int) []Period {
	if b.Reset == None || b.Reset == "" {
		return []Period{p}
	}
	out := make([]Period, 0, n)
	for range n {
		out = append(out, p)
		p = PeriodAt(b, p.End)
	}
	return out
}

// PeriodOf is the period of b whose index is idx, found from now (the
// store's clock) by stepping back; ok is false when it is not within max
// periods before now.
func PeriodOf(b Board, idx int64, now time.Time, max int) (Period, bool) {
	p := PeriodAt(b, now)
	for range max + 1 {
		if p.Index == idx {
			return p, true
		}
		if p.Index < idx || p.Start.IsZero() {
			return Period{}, false
		}
		p = p.Previous(b)
	}
	return Period{}, false
}
