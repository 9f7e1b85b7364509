package redisstore

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// BenchmarkRanksList (docs/performance.md, "Member lists"): one Ranks call
// for a list of random members of a 10,000-member board, as member lists
// read them (live frames: around 0, up to 1,000 ids), on a tiebreak-first
// board and a shared one. Reported: redis-server's CPU per listed member,
// the cost the list read puts on Redis.
func BenchmarkRanksList(b *testing.B) {
	const members = 10_000
	srv := testenv.StartRedis(b)
	s := newStore(b, srv, Config{})
	populate(b, s, "list-first", members)
	populateShared(b, s, "list-shared", members)
	for _, bc := range []struct {
		name, board string
		ids, around int
	}{
		{"first/1000ids/around0", "list-first", 1000, 0},
		{"first/50ids/around0", "list-first", 50, 0},
		{"first/50ids/around2", "list-first", 50, 2},
		{"shared/1000ids/around0", "list-shared", 1000, 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			list := make([]string, bc.ids)
			cpu := redisCPU(b, s)
			for b.Loop() {
				for i := range list {
					list[i] = "m" + strconv.Itoa(rng.IntN(members))
				}
				r, err := s.Ranks(context.Background(), bc.board, "", list, bc.around)
				if err != nil || !r.Members[0].Found {
					b.Fatalf("Ranks = %+v, %v", r.Members[0], err)
				}
			}
			b.ReportMetric((redisCPU(b, s)-cpu)*1e6/float64(b.N*bc.ids), "redis-cpu-µs/member")
		})
	}
}

// populateShared is populate for a tiebreak-shared board, whose sorted-set
// members are the member ids themselves (no member hash).
func populateShared(b *testing.B, s *Store, id string, n int) {
	b.Helper()
	ctx := context.Background()
	bd := rank.DefaultBoard(id)
	bd.Tiebreak = rank.Shared
	if _, err := s.PutBoard(ctx, bd); err != nil {
		b.Fatal(err)
	}
	pipe := s.client.Pipeline()
	for i := range n {
		pipe.ZAdd(ctx, s.zkey(s.ref(id), 0), redis.Z{Score: float64(rand.IntN(1_000)), Member: "m" + strconv.Itoa(i)})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	if err := s.client.Set(ctx, s.idKey(id, "seq"), n, 0).Err(); err != nil {
		b.Fatal(err)
	}
}
