package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
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

	// With as many shards as masters, one shard per master (shardID).
	three := rank.DefaultBoard("three")
	three.Shards = 3
	if _, err := s.PutBoard(ctx, three); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		e := rank.Event{Board: three.ID, ID: "e", Member: fmt.Sprintf("m%03d", i), Op: rank.OpDelta, Amount: int64(i)}
		if _, err := rank.ApplyWait(ctx, s, e); err != nil {
			t.Fatal(err)
		}
	}
	var shardsPer []int
	err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		keys, err := c.Keys(ctx, escapeGlob(s.cfg.Prefix)+":{three#*}:z:*").Result()
		mu.Lock()
		shardsPer = append(shardsPer, len(keys))
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(shardsPer) != "[1 1 1]" {
		t.Errorf("3 shards' sorted sets per master: %v, want one on each", shardsPer)
	}
}

// TestShardPlacement: shard i's hash tag lies in the middle half of the
// i-th of n equal slot ranges, so masters owning equal ranges hold n/m
// shards each when their number m divides n (one each when shards =
// masters), and never two more on one than on another otherwise; the
// tags are distinct, stable and start "<board>#<i>".
func TestShardPlacement(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31c3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3 (Redis Cluster spec)", got)
	}
	slot := func(tag string) int { return int(crc16([]byte(tag))) % clusterSlots }
	for _, board := range []string{"hot", "b", "a-long.board_id-0123456789"} {
		for n := 2; n <= rank.MaxShards; n++ {
			seen := map[string]bool{}
			for i := range n {
				tag := shardID(board, n, i)
				lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n
				if sl := slot(tag); sl < lo+(hi-lo)/4 || sl >= hi-(hi-lo)/4 {
					t.Fatalf("%s, %d shards: shard %d's tag %q in slot %d, outside the middle of [%d, %d)", board, n, i, tag, sl, lo, hi)
				}
				if seen[tag] || !strings.HasPrefix(tag, board+"#"+strconv.Itoa(i)) || shardID(board, n, i) != tag {
					t.Fatalf("%s, %d shards: shard %d's tag %q repeated, unstable or misnamed", board, n, i, tag)
				}
				seen[tag] = true
			}
		}
		for _, m := range []int{2, 3, 4, 5} {
			for _, n := range []int{m, 2 * m, 16, rank.MaxShards} {
				per := make([]int, m)
				for i := range n {
					per[slot(shardID(board, n, i))*m/clusterSlots]++
				}
				even := slices.Max(per) == n/m && slices.Min(per) == n/m
				if n%m == 0 && !even || slices.Max(per)-slices.Min(per) > 2 {
					t.Errorf("%s: %d shards on %d masters of equal ranges: %v per master", board, n, m, per)
				}
			}
		}
	}
}

// TestShardMetaScore: shard.lua's meta op, with which a sharded page reads
// its entries' names and meta, gives an entry's meta only while the entry
// has the score the page read (R26: never a score with another event's
// meta), and its name either way.
func TestShardMetaScore(t *testing.T) {
	t.Parallel()
	s := newStore(t, testenv.StartRedis(t), Config{})
	ctx := t.Context()
	b := rank.DefaultBoard("shmeta")
	b.Shards = 2
	if _, err := s.PutBoard(ctx, b); err != nil {
		t.Fatal(err)
	}
	const mt = `{"replay":"r1"}`
	e := rank.Event{Board: b.ID, ID: "e1", Member: "ann", Name: "Ann", Op: rank.OpDelta, Amount: 7, Meta: mt}
	if _, err := rank.ApplyWait(ctx, s, e); err != nil {
		t.Fatal(err)
	}
	c, err := s.board(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	idx, _, err := shardPeriod(c.b, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sh := c.shards[rank.ShardOf("ann", b.Shards)]
	z, err := s.client.HGet(ctx, s.mkey(s.ref(sh.b.ID), idx), "ann").Result()
	if errors.Is(err, redis.Nil) {
		z = "ann"
	} else if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		score string
		want  []any
	}{
		{"7", []any{"Ann", mt}},
		{"6", []any{"Ann", ""}}, // the score moved since the page read it
	} {
		if err := s.shard.load(ctx, s.client); err != nil {
			t.Fatal(err)
		}
		got, err := s.client.EvalSha(ctx, s.shard.sha, s.shardKeys(sh, idx), c.ver, "", 0, 0, 0, "meta", tc.score, z).Slice()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("meta op at score %s: %q, want %q", tc.score, got, tc.want)
		}
	}
}
