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
	} {
		p := PeriodAt(tc.b, at)
		if p.Index != tc.idx {
			t.Errorf("%s/%s: index %d, want %d", tc.b.Reset, tc.b.TZ, p.Index, tc.idx)
		}
		if tc.start != "" && (p.Start.Format(time.RFC3339) != tc.start || p.End.Format(time.RFC3339) != tc.end) {
			t.Errorf("%s/%s: [%s, %s), want [%s, %s)", tc.b.Reset, tc.b.TZ, p.Start.Format(time.RFC3339), p.End.Format(time.RFC3339), tc.start, tc.end)
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
	if got := p.ExpireAt(); !got.Equal(p.End.Add(2 * time.Hour)) {
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
