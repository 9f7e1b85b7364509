package memstore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// TestEraseBlanksQueuedKeys: after an erasure the records' expiry queue
// (more than one block of it) holds no key of the member, keeps the
// others' in order, and the sweep still drains it.
func TestEraseBlanksQueuedKeys(t *testing.T) {
	t.Parallel()
	clk := ranktest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := mustStore(t, Config{Now: clk.Now, SweepInterval: -1})
	cfg := rank.DefaultBoard("erq")
	cfg.IdempotencyWindow = rank.Duration(time.Second)
	if _, err := s.PutBoard(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	n := 3 * queueBlockLen
	for i := range n {
		m := "bob"
		if i%3 == 0 {
			m = "eve"
		}
		mustApply(t, s, incr(cfg.ID, fmt.Sprintf("r%d", i), m, 1))
	}
	if _, err := s.Erase(t.Context(), "eve"); err != nil {
		t.Fatal(err)
	}
	s.peek(cfg.ID, func(b *board) {
		bobs := 0
		for bl, i := b.queue.head, b.queue.hi; bl != nil; bl, i = bl.next, 0 {
			end := queueBlockLen
			if bl == b.queue.tail {
				end = b.queue.ti
			}
			for ; i < end; i++ {
				switch k := bl.items[i].key; k.member {
				case "eve":
					t.Fatalf("queue item %d still names eve: %+v", i, k)
				case "bob":
					bobs++
				}
			}
		}
		if b.queue.len() != n || bobs != 2*queueBlockLen || len(b.idem) != 2*queueBlockLen {
			t.Fatalf("queue %d (bob %d), records %d; want %d queued, bob's %d kept", b.queue.len(), bobs, len(b.idem), n, 2*queueBlockLen)
		}
	})
	clk.Advance(2 * time.Second)
	s.Sweep()
	s.peek(cfg.ID, func(b *board) {
		if len(b.idem) != 0 || b.queue.len() != 0 {
			t.Fatalf("after Sweep: %d records, %d queued", len(b.idem), b.queue.len())
		}
	})
}

// TestMarkersNameNoMember (R29): the outbox keeps a marker by its hash,
// so a marker naming a member (a ban's) leaves no key holding the id; the
// hash still lets one append through per marker.
func TestMarkersNameNoMember(t *testing.T) {
	t.Parallel()
	s := mustStore(t, Config{SweepInterval: -1})
	ctx := t.Context()
	if _, err := s.PutWebhook(ctx, rank.Webhook{ID: "bans", URL: "https://hooks.example/bans", Secret: "0123456789abcdef", Events: []string{rank.EventMemberBanned}}); err != nil {
		t.Fatal(err)
	}
	ev := rank.OutboxEvent{Event: rank.EventMemberBanned, Board: "b", TS: time.Now(), Data: []byte(`{"member":"eve"}`)}
	for i, want := range []bool{true, false} {
		if ok, err := s.AppendOutbox(ctx, "banned|b|eve|1700000000000", 0, ev); ok != want || err != nil {
			t.Fatalf("append %d: %v %v, want %v", i, ok, err, want)
		}
	}
	if _, err := s.Erase(ctx, "eve"); err != nil {
		t.Fatal(err)
	}
	s.Outbox.mu.Lock()
	defer s.Outbox.mu.Unlock()
	for k := range s.Outbox.markers {
		if strings.Contains(k, "eve") {
			t.Fatalf("a marker key names the member: %q", k)
		}
	}
}

// TestForgetRecordsInChunks: an erasure forgets a member's records a chunk
// of the expiry queue at a time, each under the board's lock; a sweep
// popping items between two chunks (the front moves past the position)
// loses nothing: every record of the member is gone, the others' stay,
// and the count is the records deleted.
func TestForgetRecordsInChunks(t *testing.T) {
	t.Parallel()
	clk := ranktest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := mustStore(t, Config{Now: clk.Now, SweepInterval: -1, EraseChunk: 100})
	cfg := rank.DefaultBoard("erc")
	cfg.IdempotencyWindow = rank.Duration(time.Minute)
	if _, err := s.PutBoard(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	// The first 1024 records expire first; eve has every fourth.
	eves := 0
	for i := range 3 * queueBlockLen {
		if i == queueBlockLen {
			clk.Advance(30 * time.Second)
		}
		m := "bob"
		if i%4 == 0 {
			m = "eve"
			if i >= queueBlockLen {
				eves++ // those the sweep below leaves
			}
		}
		mustApply(t, s, incr(cfg.ID, fmt.Sprintf("r%d", i), m, 1))
	}
	var b *board
	s.peek(cfg.ID, func(x *board) { b = x })
	b.mu.Lock()
	n, pos, done := b.forgetChunk("eve", 0, 100)
	b.mu.Unlock()
	if done || pos != 100 || n != 25 {
		t.Fatalf("first chunk: %d records, next %d, done %v; want 25, 100, false", n, pos, done)
	}
	// The sweep pops the first block (expired) before the next chunk.
	clk.Advance(31 * time.Second)
	b.mu.Lock()
	swept := b.sweepIdem(clk.Now(), queueBlockLen)
	b.mu.Unlock()
	if swept != queueBlockLen {
		t.Fatalf("swept %d", swept)
	}
	var total int64
	for !done {
		b.mu.Lock()
		n, pos, done = b.forgetChunk("eve", pos, 100)
		b.mu.Unlock()
		total += n
	}
	if total != int64(eves) {
		t.Fatalf("forgot %d of eve's records after the sweep, want %d", total, eves)
	}
	s.peek(cfg.ID, func(b *board) {
		for k := range b.idem {
			if k.member == "eve" {
				t.Fatalf("a record of eve is left: %+v", k)
			}
		}
		if len(b.idem) != 2*queueBlockLen-eves {
			t.Fatalf("%d records left, want bob's %d", len(b.idem), 2*queueBlockLen-eves)
		}
	})
	// Through Erase, chunk by chunk: nothing left to forget.
	e, err := s.Erase(t.Context(), "eve")
	if err != nil || !e.Done || e.Records != 0 {
		t.Fatalf("Erase after: %+v %v", e, err)
	}
}
