package rank

// A board's frame stream as a resume (§15) compares with it: the epoch that
// names the stream, the board's seq, and the seq at which each transition
// of its schedule was recorded. Frames are latest-wins state, so a client
// that comes back with the greatest seq it received needs only to know
// whether anything moved after it: events move the seq, and so does each
// transition of the schedule (a period starting, a period or the board
// becoming final), which the store records lazily, the first time any node
// sees the transition on the store's clock (Streams.MarkStream). "Changed
// after seq N" is then one comparison for events and transitions alike,
// and the final frames a client missed are those of the periods whose
// finality was recorded after N.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strconv"
	"time"
)

// Phase is what a board's `board` and final `top` frames show of its
// schedule at a moment (R19): the state, the current period, and the latest
// period (or the board itself) that is final.
type Phase struct {
	State  State
	Period int64
	// Final is the latest final period (0 on a board without reset, where
	// only the board itself becomes final), valid when HasFinal.
	Final    int64
	HasFinal bool
}

// PhaseAt is the board's phase at t (the store's clock).
func (b Board) PhaseAt(t time.Time) Phase {
	ph := Phase{State: b.StateAt(t)}
	cur := PeriodAt(b, t)
	ph.Period = cur.Index
	switch {
	case ph.State == Scheduled:
	case ph.State == Final:
		ph.Final, ph.HasFinal = PeriodAt(b, b.EndsAt.Add(-time.Millisecond)).Index, true
	case b.Reset != None:
		// The latest period whose grace has ended: the one before unless a
		// grace longer than a period keeps it (and more) open.
		grace := time.Duration(b.Grace)
		p := cur.Previous(b)
		for range maxGracePeriods {
			if !b.StartsAt.IsZero() && !p.End.After(b.StartsAt.Time) {
				break // the tournament had not started in that period
			}
			if !t.Before(p.End.Add(grace)) {
				ph.Final, ph.HasFinal = p.Index, true
				break
			}
			q := p.Previous(b)
			if q.Index == p.Index {
				break
			}
			p = q
		}
	}
	return ph
}

// maxGracePeriods bounds PhaseAt's walk back: a grace of 24h over periods
// of a minute spans 1441 of them.
const maxGracePeriods = 24*60 + 2

// Transition is a moment at which the board's phase changes with no event.
type Transition struct {
	At time.Time
	// Final: the phase from At on has a final period (or board) that the
	// phase before did not have: that period (FinalPeriod) became final.
	Final       bool
	FinalPeriod int64
}

// Transitions lists the last n transitions at or before now, oldest first:
// the moments where PhaseAt changes (starts_at, ends_at, final_at, each
// period's start and each period's end + grace).
func (b Board) Transitions(now time.Time, n int) []Transition {
	if n <= 0 {
		return nil
	}
	var cand []time.Time
	add := func(t time.Time) {
		if !t.IsZero() && !t.After(now) {
			cand = append(cand, t)
		}
	}
	add(b.StartsAt.Time)
	add(b.EndsAt.Time)
	add(b.FinalAt())
	if b.Reset != None {
		// Each period gives two candidates; a grace longer than a period
		// puts an earlier period's final after a later one's start, so walk
		// back a few periods more than n needs.
		p := PeriodAt(b, now)
		grace := time.Duration(b.Grace)
		back := n/2 + 3
		if d, ok := b.Reset.Duration(); ok && grace > 0 {
			back += int(grace / d)
		}
		for range back {
			add(p.Start)
			add(p.End.Add(grace))
			q := p.Previous(b)
			if q.Index == p.Index {
				break
			}
			p = q
		}
	}
	slices.SortFunc(cand, func(x, y time.Time) int { return y.Compare(x) })
	cand = slices.CompactFunc(cand, func(x, y time.Time) bool { return x.Equal(y) })
	var out []Transition
	for _, t := range cand {
		before, at := b.PhaseAt(t.Add(-time.Millisecond)), b.PhaseAt(t)
		if before == at {
			continue
		}
		tr := Transition{At: t}
		if at.HasFinal && (!before.HasFinal || before.Final != at.Final) {
			tr.Final, tr.FinalPeriod = true, at.Final
		}
		out = append(out, tr)
		if len(out) == n {
			break
		}
	}
	slices.Reverse(out)
	return out
}

// NextTransition is the first transition after t; zero when there is none
// (a board without reset whose schedule is behind it).
func (b Board) NextTransition(t time.Time) time.Time {
	for range maxNextSteps {
		c := b.nextCandidate(t)
		if c.IsZero() || b.PhaseAt(c.Add(-time.Millisecond)) != b.PhaseAt(c) {
			return c
		}
		t = c
	}
	return time.Time{}
}

// maxNextSteps bounds NextTransition's walk over moments that change
// nothing (a period's end inside a grace longer than the period).
const maxNextSteps = 64

// nextCandidate is the earliest moment after t at which the phase may
// change; zero: none.
func (b Board) nextCandidate(t time.Time) time.Time {
	var next time.Time
	consider := func(c time.Time) {
		if !c.IsZero() && c.After(t) && (next.IsZero() || c.Before(next)) {
			next = c
		}
	}
	consider(b.StartsAt.Time)
	consider(b.EndsAt.Time)
	consider(b.FinalAt())
	if b.Reset == None {
		return next
	}
	grace := time.Duration(b.Grace)
	p := PeriodAt(b, t)
	consider(p.End)
	for range maxGracePeriods {
		fin := p.End.Add(grace)
		if !fin.After(t) {
			break
		}
		consider(fin)
		q := p.Previous(b)
		if q.Index == p.Index {
			break
		}
		p = q
	}
	return next
}

// ScheduleKey is the part of a config the transitions follow: a change of
// it is itself a change of the board frame (starts_at, ends_at, final_at)
// and may move transitions, so the store records it like one.
func (b Board) ScheduleKey() string {
	return strconv.FormatInt(b.StartsAt.Ms(), 10) + "," + strconv.FormatInt(b.EndsAt.Ms(), 10) + "," +
		strconv.FormatInt(int64(b.Grace), 10) + "," + string(b.Reset) + "," + b.TZ
}

// Mark is one recorded transition: At (unix ms) was first seen at Seq.
type Mark struct {
	At  int64
	Seq int64
}

// Stream is a board's frame stream as a resume compares with it.
type Stream struct {
	// Epoch names the stream: it changes only when the board is made
	// again (deleted and re-created) or its seq went back.
	Epoch string
	// Seq is the board's seq when the stream was read.
	Seq int64
	// Marks are the recorded transitions, oldest first.
	Marks []Mark
	// Schedule is the ScheduleKey recorded, first recorded at ScheduleSeq.
	Schedule    string
	ScheduleSeq int64
}

// MarkOf is the seq at which the transition at t was recorded, false when
// it was not.
func (s Stream) MarkOf(t time.Time) (int64, bool) {
	ms := t.UnixMilli()
	i, ok := slices.BinarySearchFunc(s.Marks, ms, func(m Mark, ms int64) int {
		switch {
		case m.At < ms:
			return -1
		case m.At > ms:
			return 1
		}
		return 0
	})
	if !ok {
		return 0, false
	}
	return s.Marks[i].Seq, true
}

// Recorded reports whether every transition up to now, and cfg's schedule,
// are recorded in s: a node that holds such a stream needs no MarkStream
// before showing the board as of now.
func (s Stream) Recorded(cfg Board, now time.Time) bool {
	if s.Schedule != cfg.ScheduleKey() {
		return false
	}
	tr := cfg.Transitions(now, 1)
	if len(tr) == 0 {
		return true
	}
	_, ok := s.MarkOf(tr[0].At)
	return ok
}

// Streams is the part of a Store that records and reads the streams (§15).
type Streams interface {
	// MarkStream records the board's transitions up to the store's clock
	// and its schedule, and returns its stream. Every transition of cfg
	// (up to the last MarkDepth(cfg)) at or before the store's clock that
	// is not recorded yet, and cfg's ScheduleKey when it is not the one
	// recorded, are recorded at one new seq (the board's seq moves by one,
	// as an event moves it); nothing moves when all are recorded already.
	// Transitions before the retained periods are forgotten.
	// ErrUnknownBoard when there is no board.
	MarkStream(ctx context.Context, board string) (Stream, error)
	// RenewEpoch gives the board a new epoch when its epoch is still old
	// (a node found its seq had gone back, after a store loss) and returns
	// the board's epoch, renewed or not.
	RenewEpoch(ctx context.Context, board, old string) (string, error)
}

// MarkDepth is how many of a board's latest transitions a stream keeps:
// enough for every retained period's start and final, the board's own
// start, end and final.
func MarkDepth(b Board) int { return 2*b.Retained() + 5 }

// MarkKeep is the oldest transition a stream recorded at now still needs.
func MarkKeep(b Board, now time.Time) int64 {
	tr := b.Transitions(now, MarkDepth(b))
	if len(tr) == 0 {
		return 0
	}
	return tr[0].At.UnixMilli()
}

// NewEpoch is a fresh epoch: random, so that a board made again, on any
// engine, never takes an epoch it had.
func NewEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
