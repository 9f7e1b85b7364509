package rank

import (
	"fmt"
	"strconv"
	"time"
)

// Period is one span of a resetting board. Its Index is readable and sorts in
// time order: YYYYMMDDHH (hourly), YYYYMMDD (daily), YYYYWW with the ISO year
// and week (weekly), YYYYMM (monthly), YYYYMMDDmmmm for a duration reset
// (mmmm: the minutes from midnight to the period's start; elapsed minutes,
// not the clock's, so a day that repeats an hour for DST has no duplicate),
// and 0 for a board that never resets.
type Period struct {
	Index int64
	Start time.Time // inclusive
	End   time.Time // exclusive; zero for reset none
}

// PeriodAt is the period of board b that contains t.
func PeriodAt(b Board, t time.Time) Period {
	if b.Reset == None || b.Reset == "" {
		return Period{}
	}
	loc, err := b.Location()
	if err != nil {
		loc = time.UTC
	}
	t = t.In(loc)
	y, mo, d := t.Date()
	var start, end time.Time
	var idx int64
	switch b.Reset {
	case Hourly:
		start = time.Date(y, mo, d, t.Hour(), 0, 0, 0, loc)
		// Add rather than Date(...hour+1) so a DST fold yields a real hour.
		end = start.Add(time.Hour)
		idx = int64(y)*1000000 + int64(mo)*10000 + int64(d)*100 + int64(t.Hour())
	case Daily:
		start = time.Date(y, mo, d, 0, 0, 0, 0, loc)
		end = time.Date(y, mo, d+1, 0, 0, 0, 0, loc)
		idx = int64(y)*10000 + int64(mo)*100 + int64(d)
	case Weekly:
		wd := (int(t.Weekday()) + 6) % 7 // Monday = 0
		start = time.Date(y, mo, d-wd, 0, 0, 0, 0, loc)
		end = time.Date(y, mo, d-wd+7, 0, 0, 0, 0, loc)
		iy, iw := t.ISOWeek()
		idx = int64(iy)*100 + int64(iw)
	case Monthly:
		start = time.Date(y, mo, 1, 0, 0, 0, 0, loc)
		end = time.Date(y, mo+1, 1, 0, 0, 0, 0, loc)
		idx = int64(y)*100 + int64(mo)
	default:
		span, ok := b.Reset.Duration()
		if !ok {
			return Period{}
		}
		midnight := time.Date(y, mo, d, 0, 0, 0, 0, loc)
		next := time.Date(y, mo, d+1, 0, 0, 0, 0, loc)
		k := t.Sub(midnight) / span
		start = midnight.Add(k * span)
		end = start.Add(span)
		if end.After(next) {
			end = next // the last period of a 25-hour DST day ends at midnight
		}
		idx = int64(y)*100000000 + int64(mo)*1000000 + int64(d)*10000 + int64(start.Sub(midnight)/time.Minute)
	}
	return Period{Index: idx, Start: start, End: end}
}

// Duration is the period length of a duration reset ("15m"), and whether r
// is one: at least a minute, dividing 24h exactly.
func (r Reset) Duration() (time.Duration, bool) {
	switch r {
	case None, Hourly, Daily, Weekly, Monthly, "":
		return 0, false
	}
	d, err := time.ParseDuration(string(r))
	if err != nil || d < time.Minute || (24*time.Hour)%d != 0 {
		return 0, false
	}
	return d, true
}

// Previous is the period just before p.
func (p Period) Previous(b Board) Period {
	if p.Start.IsZero() {
		return p
	}
	return PeriodAt(b, p.Start.Add(-time.Nanosecond))
}

// ExpireAt is when a period's data may be dropped: retain whole period
// lengths after its end (Board.Retained), so the last retain past periods
// stay readable. Both engines use it.
func (p Period) ExpireAt(retain int) time.Time {
	if p.End.IsZero() {
		return time.Time{}
	}
	return p.End.Add(time.Duration(retain) * p.End.Sub(p.Start))
}

// PeriodSel selects the period a read looks at: "" or "current", "previous",
// or a period index as decimal digits.
type PeriodSel string

// Resolve turns a selection into a period index for board b at time now (the
// store's clock). A board without periods accepts only the current period.
func (s PeriodSel) Resolve(b Board, now time.Time) (int64, error) {
	cur := PeriodAt(b, now)
	switch s {
	case "", "current":
		return cur.Index, nil
	case "previous":
		if b.Reset == None {
			return 0, fmt.Errorf("%w: board %s has no periods", ErrBadRequest, b.ID)
		}
		return cur.Previous(b).Index, nil
	}
	if b.Reset == None {
		return 0, fmt.Errorf("%w: board %s has no periods", ErrBadRequest, b.ID)
	}
	idx, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil || idx <= 0 {
		return 0, fmt.Errorf("%w: period %q is not current, previous or a period index", ErrBadRequest, string(s))
	}
	return idx, nil
}
