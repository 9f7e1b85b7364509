package hub

import (
	"testing"
	"time"
)

func TestReplyQueueBounds(t *testing.T) {
	t.Parallel()
	buf := func(n int) *[]byte { b := make([]byte, n); return &b }
	var q replyQueue
	cfg := &Config{ReplyQueue: 3, ReplyQueueBytes: 100}
	if !q.add(buf(500), cfg) {
		t.Fatal("a reply larger than the byte bound must fit an empty queue")
	}
	if q.add(buf(1), cfg) {
		t.Fatal("the queue holds 500 bytes of a 100-byte bound: a second reply must be refused")
	}
	if got := len(q.take(nil)); got != 1 {
		t.Fatalf("took %d replies, want 1", got)
	}
	for i := range 3 {
		if !q.add(buf(30), cfg) {
			t.Fatalf("reply %d of 30 bytes refused below both bounds", i)
		}
	}
	if q.add(buf(1), cfg) {
		t.Fatal("a fourth reply passed the count bound of 3")
	}
	q.take(nil)
	if !q.add(buf(60), cfg) || q.add(buf(41), cfg) || !q.add(buf(40), cfg) {
		t.Fatal("byte bound: 60 then 41 must be refused, 60 then 40 fits")
	}
}

// TestReplyQueueTakeUpTo: takeUpTo takes every reply or, over its limit,
// none (the writer writes those).
func TestReplyQueueTakeUpTo(t *testing.T) {
	t.Parallel()
	var q replyQueue
	cfg := &Config{ReplyQueue: 10, ReplyQueueBytes: 1 << 20}
	small, large := []byte("0123456789"), make([]byte, 100)
	q.add(&small, cfg)
	q.add(&small, cfg)
	if got, ok := q.takeUpTo(nil, 20); len(got) != 2 || !ok || q.len() != 0 {
		t.Fatalf("took %d at the limit, %d left; want 2, 0", len(got), q.len())
	}
	q.add(&small, cfg)
	q.add(&large, cfg)
	if got, ok := q.takeUpTo(nil, 100); len(got) != 0 || ok || q.len() != 2 {
		t.Fatalf("took %d over the limit, %d left; want 0, 2", len(got), q.len())
	}
}

func TestJitter(t *testing.T) {
	t.Parallel()
	const d = 25 * time.Second
	seen := map[time.Duration]bool{}
	for range 200 {
		j := jitter(d)
		if j <= d*4/5 || j > d {
			t.Fatalf("jitter(%s) = %s, want in (%s, %s]", d, j, d*4/5, d)
		}
		seen[j] = true
	}
	if len(seen) < 100 {
		t.Fatalf("only %d distinct intervals in 200: pings would still go out together", len(seen))
	}
}
