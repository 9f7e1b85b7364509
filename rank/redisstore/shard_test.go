package redisstore

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

// testShardsSpread: one 16-shard board's writes reach every master of the
// cluster (S0): each master holds some of its members.
func testShardsSpread(t *testing.T, s *Store) {
	cc, ok := s.client.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("not a cluster client: %T", s.client)
	}
	ctx := t.Context()
	b := rank.DefaultBoard("spread")
	b.Shards = 16
	if _, err := s.PutBoard(ctx, b); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		e := rank.Event{Board: b.ID, ID: "e", Member: fmt.Sprintf("m%03d", i), Op: rank.OpDelta, Amount: int64(i)}
		if _, err := rank.ApplyWait(ctx, s, e); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var perMaster []int
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		n := 0
		iter := c.Scan(ctx, 0, escapeGlob(s.cfg.Prefix)+":{spread#*}:z:*", 100).Iterator()
		for iter.Next(ctx) {
			card, err := c.ZCard(ctx, iter.Val()).Result()
			if err != nil {
				return err
			}
			n += int(card)
		}
		mu.Lock()
		perMaster = append(perMaster, n)
		mu.Unlock()
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range perMaster {
		total += n
		if n == 0 {
			t.Errorf("members per master %v: one holds none", perMaster)
		}
	}
	if len(perMaster) != 3 || total != 200 {
		t.Fatalf("members per master %v, want 3 masters holding 200", perMaster)
	}
	t.Logf("members per master: %v", perMaster)
}
