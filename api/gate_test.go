package api

import (
	"fmt"
	"io"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

// TestBodySlots: one key holds at most its share; spectators and players
// never take the reserved slots, server and admin tokens do.
func TestBodySlots(t *testing.T) {
	t.Parallel()
	s := newBodySlots(64) // 48 shared, 16 reserved, 8 per key
	gone := make(chan struct{})
	close(gone)
	var releases []slot
	for i := range 8 {
		rel, got := s.acquire("m greedy", false, nil)
		if got != slotTaken {
			t.Fatalf("slot %d of a member's 8 refused", i)
		}
		releases = append(releases, rel)
	}
	if _, got := s.acquire("m greedy", false, nil); got != slotShareUsed {
		t.Fatal("a ninth slot for one member was not refused at once")
	}
	for i := range 40 {
		rel, got := s.acquire(fmt.Sprint("m ", i), false, nil)
		if got != slotTaken {
			t.Fatalf("shared slot %d refused", 8+i)
		}
		releases = append(releases, rel)
	}
	if _, got := s.acquire("m late", false, gone); got != slotGone {
		t.Fatal("a spectator got a slot past the shared ones")
	}
	for i := range 16 {
		rel, got := s.acquire("", true, gone)
		if got != slotTaken {
			t.Fatalf("reserved slot %d refused to an admin", i)
		}
		releases = append(releases, rel)
	}
	if s.inUse() != 64 {
		t.Fatalf("%v slots in use, want 64", s.inUse())
	}
	for _, rel := range releases {
		rel.release()
	}
	if s.inUse() != 0 || len(s.held) != 0 {
		t.Fatalf("after every release: %v in use, %d keys held", s.inUse(), len(s.held))
	}
}

// trickle is a body that arrives chunk bytes every gap, n bytes in all,
// and honours the read deadline as a socket does.
type trickle struct {
	chunk, n int
	gap      time.Duration
	sent     int
	deadline time.Time
}

func (b *trickle) setDeadline(t time.Time) error { b.deadline = t; return nil }

func (b *trickle) Read(p []byte) (int, error) {
	if b.sent >= b.n {
		return 0, io.EOF
	}
	if !b.deadline.IsZero() && time.Now().Add(b.gap).After(b.deadline) {
		time.Sleep(time.Until(b.deadline))
		return 0, os.ErrDeadlineExceeded
	}
	time.Sleep(b.gap)
	k := min(b.chunk, b.n-b.sent, len(p))
	b.sent += k
	return k, nil
}

// TestMinimumUploadRate: a body at the minimum rate or above arrives whole;
// one below it is cut with 408 once the grace has passed.
func TestMinimumUploadRate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		body   trickle
		status int
	}{
		{"fast", trickle{chunk: 4096, n: 20000, gap: 10 * time.Millisecond}, 0},
		{"at twice the minimum", trickle{chunk: 2 * minBodyRate, n: 20000, gap: time.Second}, 0},
		{"a byte a second", trickle{chunk: 1, n: 20000, gap: time.Second}, 408},
		{"half the minimum", trickle{chunk: minBodyRate / 2, n: 20000, gap: time.Second}, 408},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := &API{cfg: Config{MaxBody: DefaultMaxBody}}
				b := tc.body
				start := time.Now() // the bubble's clock: exact, not the wall's
				buf, status, msg := a.readBody(&b, int64(b.n), b.setDeadline)
				if status != tc.status {
					t.Fatalf("status %d (%s) after %d of %d bytes, want %d", status, msg, b.sent, b.n, tc.status)
				}
				// Cut by the rate soon after the grace, not by the
				// whole body's bound.
				if d := time.Since(start); status == 408 && d > bodyGrace+5*time.Second {
					t.Fatalf("cut after %s, want soon after the %s grace", d, bodyGrace)
				}
				if status == 0 && len(*buf) != b.n {
					t.Fatalf("read %d bytes, want %d", len(*buf), b.n)
				}
			})
		})
	}
}
