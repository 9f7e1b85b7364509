package hub

import (
	"fmt"
	"testing"
	"time"
)

// TestMemberBudgetOutlivesConnections: a member's score budget is its own,
// not its connections': what one burst spent is still spent for the next
// (a reconnect meets the same bucket), another member's is apart, and a
// bucket is forgotten only once it has refilled.
func TestMemberBudgetOutlivesConnections(t *testing.T) {
	t.Parallel()
	var r memberRates
	r.init(10) // burst 20, refilled in 2s
	t0 := time.Unix(1_000_000, 0)
	for i := range 20 {
		if d := r.take("pat", t0); d != 0 {
			t.Fatalf("event %d of a burst of 20 refused (wait %s)", i, d)
		}
	}
	if d := r.take("pat", t0); d <= 0 {
		t.Fatal("the 21st event of the burst was allowed")
	}
	if d := r.take("sam", t0); d != 0 {
		t.Fatal("another member's budget was spent too")
	}
	// Half a second later (a reconnect, say) five events have refilled,
	// not twenty.
	t1 := t0.Add(500 * time.Millisecond)
	for i := range 5 {
		if d := r.take("pat", t1); d != 0 {
			t.Fatalf("refilled event %d refused (wait %s)", i, d)
		}
	}
	if d := r.take("pat", t1); d <= 0 {
		t.Fatal("a sixth event half a second after the burst was allowed: the budget was reset")
	}
}

// TestMemberBudgetsForgottenWhenFull: buckets idle for their refill time
// are swept out, so the map holds the members that scored lately only.
func TestMemberBudgetsForgottenWhenFull(t *testing.T) {
	t.Parallel()
	var r memberRates
	r.init(10)
	t0 := time.Unix(1_000_000, 0)
	const n = 1000 // enough to touch every shard
	for i := range n {
		r.take(fmt.Sprint("a", i), t0)
	}
	if h := r.held(); h != n {
		t.Fatalf("%d budgets held, want %d", h, n)
	}
	t1 := t0.Add(r.full)
	for i := range n {
		r.take(fmt.Sprint("b", i), t1)
	}
	if h := r.held(); h != n {
		t.Fatalf("%d budgets held after the first members' refill time, want only the %d new ones", h, n)
	}
}

// held is how many members have a budget remembered.
func (r *memberRates) held() int {
	n := 0
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
