package rank

import "time"

// State is where a board stands in its schedule (§6), always computed from
// the store's clock.
type State string

const (
	Scheduled State = "scheduled" // before starts_at
	Open      State = "open"
	Closing   State = "closing" // from ends_at until ends_at + grace: late events still count
	Final     State = "final"   // from ends_at + grace: nothing changes any more
)

// StateAt is the board's state at t (the store's clock).
func (b Board) StateAt(t time.Time) State {
	if !b.StartsAt.IsZero() && t.Before(b.StartsAt.Time) {
		return Scheduled
	}
	if b.EndsAt.IsZero() || t.Before(b.EndsAt.Time) {
		return Open
	}
	if t.Before(b.FinalAt()) {
		return Closing
	}
	return Final
}

// FinalAt is when the board becomes final (ends_at + grace); zero when it
// never ends.
func (b Board) FinalAt() time.Time {
	if b.EndsAt.IsZero() {
		return time.Time{}
	}
	return b.EndsAt.Add(time.Duration(b.Grace))
}

// Retained is the number of past periods kept readable: Retain, or the
// default for a config stored before v1.1 (which has none).
func (b Board) Retained() int {
	if b.Retain <= 0 {
		return DefaultRetain
	}
	return b.Retain
}

// Retains reports whether period idx is readable at now: the current
// period, a later one, or one of the last Retained past ones. Both engines
// also drop data past it (Period.ExpireAt); this rule makes what a read sees
// follow the store's clock even where expiry runs on another (Redis TTLs).
func (b Board) Retains(idx int64, now time.Time) bool {
	p := PeriodAt(b, now)
	if p.End.IsZero() || idx >= p.Index {
		return true
	}
	for range b.Retained() {
		p = p.Previous(b)
		if idx >= p.Index {
			return true
		}
	}
	return false
}

// MaxAhead is how far an event's `at` may be ahead of the store's clock.
const MaxAhead = 5 * time.Second

// Admit decides R17 for an event of time t (its `at`, else now) at store
// time now: the period it is applied to, or a *ClosedError saying why not
// (R30; or ErrBadRequest for an `at` too far ahead). cur is the period at
// now. An event counts when t is in [starts_at, ends_at) and its period is
// the current one or the one before, while now is before that period's
// end — the board's end when that comes first — plus grace. Both engines
// follow it; apply.lua restates it for Redis and answers the reason, which
// Closed turns into the same error.
func (b Board) Admit(t, now time.Time, cur Period) (Period, error) {
	if t.Sub(now) > MaxAhead {
		return Period{}, ErrAtAhead
	}
	if !b.StartsAt.IsZero() && t.Before(b.StartsAt.Time) {
		return Period{}, b.Closed(ClosedNotStarted, t)
	}
	if !b.EndsAt.IsZero() && !t.Before(b.EndsAt.Time) {
		return Period{}, b.Closed(ClosedEnded, t)
	}
	p := cur
	if !cur.End.IsZero() && (t.Before(cur.Start) || !t.Before(cur.End)) {
		p = PeriodAt(b, t)
		if p.Index > cur.Index {
			return Period{}, b.Closed(ClosedNotStarted, t) // the next period, a little ahead
		}
		if p.Index != cur.Previous(b).Index {
			return Period{}, b.Closed(ClosedPeriodOver, t)
		}
	}
	if end := b.admitEnd(p); !end.IsZero() && !now.Before(end.Add(time.Duration(b.Grace))) {
		if !b.EndsAt.IsZero() && end.Equal(b.EndsAt.Time) {
			return Period{}, b.Closed(ClosedEnded, t)
		}
		return Period{}, b.Closed(ClosedPeriodOver, t)
	}
	return p, nil
}

// admitEnd is when events of period p stop counting, before grace: the
// period's end, or the board's when that comes first; zero for never.
func (b Board) admitEnd(p Period) time.Time {
	end := p.End
	if !b.EndsAt.IsZero() && (end.IsZero() || b.EndsAt.Before(end)) {
		end = b.EndsAt.Time
	}
	return end
}

// Closed is the board_closed error of an event of time t refused for
// reason (R30), with the times that explain it, all read from the config:
// not_started names when the board opens (or, for an event a little ahead
// in the next period, when that period does), ended the board's final
// time, period_over t's period and when its grace ended. A zero t is the
// store's clock, which only not_started and ended refuse.
func (b Board) Closed(reason string, t time.Time) *ClosedError {
	e := &ClosedError{Reason: reason}
	switch reason {
	case ClosedNotStarted:
		if !b.StartsAt.IsZero() && (t.IsZero() || t.Before(b.StartsAt.Time)) {
			e.StartsAt = b.StartsAt.UnixMilli()
		} else {
			e.StartsAt = PeriodAt(b, t).Start.UnixMilli()
		}
	case ClosedEnded:
		e.FinalAt = b.FinalAt().UnixMilli()
	case ClosedPeriodOver:
		p := PeriodAt(b, t)
		e.Period = p.Index
		if end := b.admitEnd(p); !end.IsZero() {
			e.GraceEnd = end.Add(time.Duration(b.Grace)).UnixMilli()
		}
	}
	return e
}
