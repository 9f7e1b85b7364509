package hub

import (
	"testing"
	"time"
)

// TestMemberRatesShared: connections of one member share one limiter, which
// is dropped with the member's last connection.
func TestMemberRatesShared(t *testing.T) {
	t.Parallel()
	var r memberRates
	r.init(10) // burst 20
	a, b := r.acquire("pat"), r.acquire("pat")
	if a != b {
		t.Fatal("two connections of one member got two budgets")
	}
	other := r.acquire("sam")
	now := time.Now()
	for i := range 20 {
		lim := a
		if i%2 == 1 {
			lim = b
		}
		if d := wait(lim, now); d != 0 {
			t.Fatalf("event %d of a burst of 20 refused (wait %s)", i, d)
		}
	}
	if d := wait(b, now); d <= 0 {
		t.Fatal("the 21st event of the shared burst was allowed")
	}
	if d := wait(other, now); d != 0 {
		t.Fatal("another member's budget was spent too")
	}
	r.release("pat")
	r.release("sam")
	if n := r.held(); n != 1 {
		t.Fatalf("%d limiters held, want pat's only (one connection left)", n)
	}
	r.release("pat")
	if n := r.held(); n != 0 {
		t.Fatalf("%d limiters held after every connection ended", n)
	}
}
