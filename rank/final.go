package rank

import (
	"fmt"
	"time"
)

// Facts of a board's schedule (docs/webhooks.md): what became true on the
// store's clock — a state entered, the board or a period final — and when
// the next can. Every node finds the same facts, each named by a marker so
// that however many nodes notice one, it is told once (Outbox.AppendOutbox).

// Fact is one thing that became true on a board.
type Fact struct {
	Marker string
	Event  string    // EventBoardState, EventBoardFinal or EventPeriodFinal
	At     time.Time // when it became true
	State  State     // board.state: the state entered
	Period int64     // a final event's period
	Final  bool      // carries standings: read them
	// SkipEmpty: a period nobody scored in is not news (and a new board's
	// latest final period is one from before it existed).
	SkipEmpty bool
}

// maxPeriodsBack bounds the walk back to the latest final period: the
// longest grace (24 h) over the shortest reset (1m).
const maxPeriodsBack = 24*60 + 1

// Facts lists what became true on b in the RetryFor before now: a fact is
// news for as long as a delivery of it may be retried.
func (b Board) Facts(now time.Time) []Fact {
	recent := func(t time.Time) bool { return !t.After(now) && now.Sub(t) < RetryFor }
	var out []Fact
	state := func(st State, at time.Time) {
		if recent(at) {
			out = append(out, Fact{Marker: fmt.Sprintf("state|%s|%s|%d", b.ID, st, at.UnixMilli()),
				Event: EventBoardState, At: at, State: st})
		}
	}
	if !b.StartsAt.IsZero() {
		state(Open, b.StartsAt.Time)
	}
	if !b.EndsAt.IsZero() {
		if b.Grace > 0 {
			state(Closing, b.EndsAt.Time)
		}
		fin := b.FinalAt()
		state(Final, fin)
		if recent(fin) {
			last := PeriodAt(b, b.EndsAt.Add(-time.Millisecond))
			out = append(out, Fact{Marker: fmt.Sprintf("final|%s|%d", b.ID, fin.UnixMilli()),
				Event: EventBoardFinal, At: fin, Period: last.Index, Final: true})
		}
	}
	if b.Reset == None || b.StateAt(now) == Final {
		return out // a final board's last period is its board.final
	}
	// The latest period past its grace; a grace longer than a period makes
	// it one before the last.
	p := PeriodAt(b, now)
	for range maxPeriodsBack {
		p = p.Previous(b)
		if !now.Before(p.End.Add(time.Duration(b.Grace))) {
			break
		}
	}
	fin := p.End.Add(time.Duration(b.Grace))
	if recent(fin) && !now.Before(fin) && (b.StartsAt.IsZero() || p.End.After(b.StartsAt.Time)) {
		out = append(out, Fact{Marker: fmt.Sprintf("period|%s|%d", b.ID, p.Index),
			Event: EventPeriodFinal, At: fin, Period: p.Index, Final: true, SkipEmpty: true})
	}
	return out
}

// NextFact is the earliest moment after now at which Facts can list a fact
// it does not list at now; zero: none ever will.
func (b Board) NextFact(now time.Time) time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	if !b.StartsAt.IsZero() {
		consider(b.StartsAt.Time)
	}
	if !b.EndsAt.IsZero() {
		consider(b.EndsAt.Time)
		consider(b.FinalAt())
	}
	if b.Reset == None {
		return next
	}
	// The current period's grace ends first unless a grace longer than a
	// period leaves an earlier one's still running. As in Facts, no period
	// ends before the board starts, nor once it is final.
	grace := time.Duration(b.Grace)
	p := PeriodAt(b, now)
	for range maxPeriodsBack {
		fin := p.End.Add(grace)
		if (b.StartsAt.IsZero() || p.End.After(b.StartsAt.Time)) && (b.EndsAt.IsZero() || fin.Before(b.FinalAt())) {
			consider(fin)
		}
		q := p.Previous(b)
		if q.Index == p.Index || !q.End.Add(grace).After(now) {
			break
		}
		p = q
	}
	return next
}

// Award is one member's reward in a final event (§13).
type Award struct {
	Member string `json:"member"`
	Reward string `json:"reward"`
}

// FinalStandings cuts entries (the first FinalReach of a ranking) to b's
// standings count and lists the rewards their ranks earn.
func (b Board) FinalStandings(entries []Entry) ([]Entry, []Award) {
	standings := append([]Entry{}, entries[:min(len(entries), b.StandingsCount())]...)
	awards := []Award{}
	for _, e := range entries {
		if r := b.RewardFor(e.Rank); r != "" {
			awards = append(awards, Award{Member: e.Member, Reward: r})
		}
	}
	return standings, awards
}
