package hub

import (
	"testing"
	"time"
)

// drainPlan spreads n connections evenly over [0, window): the i-th at
// i·window/n, in order, so the other nodes see a ramp.
func TestDrainPlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n      int
		window time.Duration
		want   []time.Duration
	}{
		{0, 5 * time.Second, []time.Duration{}},
		{1, 5 * time.Second, []time.Duration{0}},
		{4, 5 * time.Second, []time.Duration{0, 1250 * time.Millisecond, 2500 * time.Millisecond, 3750 * time.Millisecond}},
		{3, 0, []time.Duration{0, 0, 0}},
	} {
		got := drainPlan(tc.n, tc.window)
		if len(got) != len(tc.want) {
			t.Fatalf("drainPlan(%d, %s) = %v, want %v", tc.n, tc.window, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("drainPlan(%d, %s) = %v, want %v", tc.n, tc.window, got, tc.want)
			}
		}
	}
	// Many connections: every step the same (to the millisecond), the last
	// one inside the window.
	const n = 10000
	w := 5 * time.Second
	p := drainPlan(n, w)
	for i := 1; i < n; i++ {
		if d := p[i] - p[i-1]; d < 0 || d > time.Millisecond {
			t.Fatalf("step %d of the plan is %s, want an even 0.5ms", i, d)
		}
	}
	if p[n-1] >= w || p[n-1] < w-time.Millisecond {
		t.Fatalf("last of %d at %s, want just inside %s", n, p[n-1], w)
	}
}

// A writer goroutine that gives up the writer's role wakes finish,
// waiting to take it; finish giving it up wakes nobody (it would wake
// itself and spin while a drain waits for its scores' replies), and a
// poke after that wakes it. A poke while the role is held keeps it.
func TestStopRunningWakes(t *testing.T) {
	t.Parallel()
	woken := func(c *conn) bool {
		select {
		case <-c.endWake:
			return true
		default:
			return false
		}
	}
	for _, tc := range []struct {
		name  string
		ender bool
		wake  bool
	}{
		{"a writer goroutine", false, true},
		{"finish", true, false},
	} {
		c := &conn{endWake: make(chan struct{}, 1)}
		c.wstate.Store(wRunning | wEnding)
		if !c.stopRunning(tc.ender) || c.wstate.Load()&wRunning != 0 {
			t.Fatalf("%s: the role not given up: state %b", tc.name, c.wstate.Load())
		}
		if got := woken(c); got != tc.wake {
			t.Fatalf("%s giving up the role: finish woken %v, want %v", tc.name, got, tc.wake)
		}
		c.poke() // ending, not running: it wakes finish, and starts no writer
		if !woken(c) || c.wstate.Load()&wRunning != 0 {
			t.Fatalf("%s: a poke after the role was given up: no wake, or a writer started (state %b)", tc.name, c.wstate.Load())
		}
	}
	c := &conn{endWake: make(chan struct{}, 1)}
	c.wstate.Store(wRunning | wEnding | wAgain)
	if c.stopRunning(true) || c.wstate.Load()&wRunning == 0 {
		t.Fatalf("poked while running: the role was given up (state %b)", c.wstate.Load())
	}
}
