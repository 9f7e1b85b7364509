package hub

import (
	"testing"
	"time"
)

// TestPingAt: pings fall on a grid of a second (a sixteenth of a shorter
// interval), never before the time asked, so a node's pings go out in
// batches.
func TestPingAt(t *testing.T) {
	t.Parallel()
	base := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		at       time.Time
		interval time.Duration
		want     time.Time
	}{
		{base, 25 * time.Second, base},                                                        // on the grid
		{base.Add(time.Nanosecond), 25 * time.Second, base.Add(time.Second)},                  // just past it
		{base.Add(999 * time.Millisecond), time.Minute, base.Add(time.Second)},                // the grid stays a second
		{base.Add(time.Millisecond), 160 * time.Millisecond, base.Add(10 * time.Millisecond)}, // a sixteenth
		{base.Add(time.Microsecond), time.Millisecond, base.Add(time.Millisecond)},            // never finer than 1 ms
	} {
		if got := pingAt(tc.at, tc.interval); !got.Equal(tc.want) {
			t.Errorf("pingAt(%v, %v) = %v, want %v", tc.at.Sub(base), tc.interval, got.Sub(base), tc.want.Sub(base))
		}
	}
}
