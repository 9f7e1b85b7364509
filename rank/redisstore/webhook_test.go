package redisstore

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// TestOutboxOneQueueMoves: a delivery an older version queued in the one
// due set of the outbox is leased from it (the lease moves it to its
// webhook's queue), its retry scheduled in that queue, and the old set
// ends empty.
func TestOutboxOneQueueMoves(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	clk := ranktest.NewClock(time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC))
	s := newStore(t, srv, Config{Now: clk.Now})
	ctx := context.Background()
	if _, err := s.PutWebhook(ctx, rank.Webhook{ID: "old", URL: "https://hooks.example/old", Secret: "0123456789abcdef", Events: []string{rank.EventBoardFinal}}); err != nil {
		t.Fatal(err)
	}
	ev := rank.OutboxEvent{Event: rank.EventBoardFinal, Board: "b", TS: clk.Now(), Data: json.RawMessage(`{}`)}
	if _, err := s.AppendOutbox(ctx, "old-final", 0, ev); err != nil {
		t.Fatal(err)
	}
	// As an older version left it: in the one due set, no queue of its own.
	ds, _ := s.Deliveries(ctx, "old")
	id := ds[0].ID
	c := s.client
	if err := c.Del(ctx, s.whKey("q", "old"), s.whKey("ready")).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ZAdd(ctx, s.whKey("due"), redis.Z{Score: float64(clk.Now().UnixMilli()), Member: id}).Err(); err != nil {
		t.Fatal(err)
	}
	d, _, ok, err := s.LeaseDelivery(ctx, "n1", time.Minute)
	if !ok || err != nil || d.ID != id {
		t.Fatalf("lease: %+v %v %v, want the delivery queued the old way", d, ok, err)
	}
	if n, _ := c.ZCard(ctx, s.whKey("due")).Result(); n != 0 {
		t.Fatalf("the old due set still holds %d", n)
	}
	if ok, err := s.RecordAttempt(ctx, id, "n1", "HTTP 503"); !ok || err != nil {
		t.Fatalf("record: %v %v", ok, err)
	}
	clk.Advance(rank.RetryFirst)
	if d, _, ok, _ := s.LeaseDelivery(ctx, "n2", time.Minute); !ok || d.ID != id || d.Attempts != 1 {
		t.Fatalf("the retry: %+v %v", d, ok)
	}
}
