package rank

import (
	"testing"
	"time"
)

func TestPeriodAt(t *testing.T) {
	t.Parallel()
	board := func(r Reset, tz string) Board { b := DefaultBoard("b"); b.Reset, b.TZ = r, tz; return b }
	at := time.Date(2026, 11, 21, 23, 30, 0, 0, time.UTC) // a Saturday, ISO week 47
	for _, tc := range []struct {
		b          Board
		idx        int64
		start, end string
	}{
		{board(None, "UTC"), 0, "", ""},
		{board(Hourly, "UTC"), 2026112123, "2026-11-21T23:00:00Z", "2026-11-22T00:00:00Z"},
		{board(Daily, "UTC"), 20261121, "2026-11-21T00:00:00Z", "2026-11-22T00:00:00Z"},
		{board(Daily, "Asia/Tokyo"), 20261122, "2026-11-22T00:00:00+09:00", "2026-11-23T00:00:00+09:00"},
		{board(Weekly, "UTC"), 202647, "2026-11-16T00:00:00Z", "2026-11-23T00:00:00Z"},
		{board(Monthly, "UTC"), 202611, "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"},
		// Duration resets (v1.1), aligned to midnight in tz.
		{board("1m", "UTC"), 202611211410, "2026-11-21T23:30:00Z", "2026-11-21T23:31:00Z"},
		{board("15m", "UTC"), 202611211410, "2026-11-21T23:30:00Z", "2026-11-21T23:45:00Z"},
		{board("6h", "UTC"), 202611211080, "2026-11-21T18:00:00Z", "2026-11-22T00:00:00Z"},
		{board("90m", "UTC"), 202611211350, "2026-11-21T22:30:00Z", "2026-11-22T00:00:00Z"},
		// 23:30 UTC is 05:00 in Kolkata (+05:30): the 6h period from 00:00 local.
		{board("6h", "Asia/Kolkata"), 202611220000, "2026-11-22T00:00:00+05:30", "2026-11-22T06:00:00+05:30"},
	} {
		p := PeriodAt(tc.b, at)
		if p.Index != tc.idx {
			t.Errorf("%s/%s: index %d, want %d", tc.b.Reset, tc.b.TZ, p.Index, tc.idx)
		}
		if tc.start != "" && (p.Start.Format(time.RFC3339) != tc.start || p.End.Format(time.RFC3339) != tc.end) {
			t.Errorf("%s/%s: [%s, %s), want [%s, %s)", tc.b.Reset, tc.b.TZ, p.Start.Format(time.RFC3339), p.End.Format(time.RFC3339), tc.start, tc.end)
		}
	}
	// A 25-hour DST day (New York, 2026-11-01): periods count elapsed
	// minutes from midnight, so the repeated 01:00 hour gets its own
	// indexes, and the last period ends at midnight.
	ny := board("6h", "America/New_York")
	nyLoc, _ := time.LoadLocation("America/New_York")
	seen := map[int64]bool{}
	for at := time.Date(2026, 11, 1, 0, 0, 0, 0, nyLoc); at.Day() == 1; at = at.Add(time.Hour) {
		p := PeriodAt(ny, at)
		if !(!at.Before(p.Start) && at.Before(p.End)) {
			t.Fatalf("%s not in its period [%s, %s)", at, p.Start, p.End)
		}
		seen[p.Index] = true
	}
	if len(seen) != 5 { // 00-06, 06-12, 12-18, 18-24 (elapsed), 24-25
		t.Errorf("a 25-hour day with 6h resets has %d periods, want 5: %v", len(seen), seen)
	}
	// Consecutive periods chain: Previous of a period ends where it starts.
	for _, r := range []Reset{"1m", "15m", "6h"} {
		b := board(r, "Europe/Paris")
		p := PeriodAt(b, at)
		if q := p.Previous(b); !q.End.Equal(p.Start) || q.Index >= p.Index {
			t.Errorf("%s: previous %+v of %+v", r, q, p)
		}
	}
	// ISO week-year: 2027-01-01 is a Friday in week 53 of 2026.
	if p := PeriodAt(board(Weekly, "UTC"), time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC)); p.Index != 202653 {
		t.Errorf("ISO week of 2027-01-01 = %d, want 202653", p.Index)
	}
	// Previous of January is December of the year before.
	m := board(Monthly, "UTC")
	if p := PeriodAt(m, time.Date(2027, 1, 10, 0, 0, 0, 0, time.UTC)).Previous(m); p.Index != 202612 {
		t.Errorf("previous month = %d", p.Index)
	}
	// A daylight-saving day in Paris lasts 23 hours.
	paris := board(Daily, "Europe/Paris")
	if p := PeriodAt(paris, time.Date(2026, 3, 29, 12, 0, 0, 0, time.UTC)); p.End.Sub(p.Start) != 23*time.Hour {
		t.Errorf("DST day lasts %s", p.End.Sub(p.Start))
	}
	h := board(Hourly, "UTC")
	p := PeriodAt(h, at)
	if got := p.ExpireAt(2); !got.Equal(p.End.Add(2 * time.Hour)) {
		t.Errorf("ExpireAt = %s, want two periods after the end", got)
	}
}

func TestPeriodSel(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	daily := DefaultBoard("d")
	daily.Reset = Daily
	none := DefaultBoard("n")
	for _, tc := range []struct {
		b    Board
		sel  PeriodSel
		want int64
		ok   bool
	}{
		{daily, "", 20261121, true},
		{daily, "current", 20261121, true},
		{daily, "previous", 20261120, true},
		{daily, "20261101", 20261101, true},
		{daily, "yesterday", 0, false},
		{daily, "-5", 0, false},
		{none, "", 0, true},
		{none, "previous", 0, false},
		{none, "20261101", 0, false},
	} {
		got, err := tc.sel.Resolve(tc.b, now)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q on %s: %d, %v", tc.sel, tc.b.Reset, got, err)
		}
	}
}
