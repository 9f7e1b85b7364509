package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// populateSharded fills a tiebreak-first board of the given shards with n
// members directly, in the key layout apply.lua writes (each member in its
// shard's key space).
func populateSharded(b *testing.B, s *Store, id string, shards, n int) {
	b.Helper()
	ctx := context.Background()
	cfg := rank.DefaultBoard(id)
	cfg.Shards = shards
	if _, err := s.PutBoard(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const chunk = 5000
	for start := 0; start < n; start += chunk {
		pipe := s.client.Pipeline()
		for i := start; i < min(start+chunk, n); i++ {
			m := "m" + strconv.Itoa(i)
			ks := id
			if shards > 1 {
				ks = shardID(id, rank.ShardOf(m, shards))
			}
			z := fmt.Sprintf("%016d|%s", int64(9999999999999999)-int64(i+1), m)
			pipe.ZAdd(ctx, s.zkey(ks, 0), redis.Z{Score: float64(rng.IntN(1_000_000)), Member: z})
			pipe.HSet(ctx, s.mkey(ks, 0), m, z)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShardedTop reads the top 100 of a 100k-member board of 1 and
// of 16 shards (R24's merged read: the board's seq, then one pipelined
// range per shard, merged); and one member's rank with 5 neighbours.
func BenchmarkShardedTop(b *testing.B) {
	srv := testenv.StartRedis(b)
	s := newStore(b, srv, Config{})
	const n = 100_000
	for _, shards := range []int{1, 16} {
		id := "top" + strconv.Itoa(shards)
		populateSharded(b, s, id, shards, n)
		b.Run(fmt.Sprintf("shards=%d/top100", shards), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := s.Top(context.Background(), id, "", 0, 100)
				if err != nil || len(p.Entries) != 100 || p.Total != n {
					b.Fatalf("Top = %d entries of %d, %v", len(p.Entries), p.Total, err)
				}
			}
		})
		b.Run(fmt.Sprintf("shards=%d/rank_around5", shards), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m := "m" + strconv.Itoa(rand.IntN(n))
				r, err := s.Ranks(context.Background(), id, "", []string{m}, 5)
				if err != nil || !r.Members[0].Found {
					b.Fatalf("Ranks(%s) = %+v, %v", m, r, err)
				}
			}
		})
	}
}
