package memstore

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// BenchmarkShardedTop reads the top 100 of a 100k-member board of 1 and of
// 16 shards (trees): the k-way merge against one tree's walk.
func BenchmarkShardedTop(b *testing.B) {
	const n = 100_000
	for _, shards := range []int{1, 16} {
		s := mustStore(b, Config{SweepInterval: -1})
		cfg := rank.DefaultBoard("bench")
		cfg.Shards = shards
		if _, err := s.PutBoard(b.Context(), cfg); err != nil {
			b.Fatal(err)
		}
		bd := s.boards[cfg.ID]
		now := time.Now()
		z := bd.newPeriod(rank.PeriodAt(cfg, now), now)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range n {
			nd := &node{}
			nd.m = fmt.Sprintf("member%07d", i)
			bd.seq++
			bd.setKey(nd, int64(rng.IntN(1_000_000)), bd.seq)
			z.tr.insert(nd)
			z.members[nd.m] = nd
		}
		b.Run(fmt.Sprintf("shards=%d/top100", shards), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := s.Top(b.Context(), cfg.ID, "", 0, 100)
				if err != nil || len(p.Entries) != 100 {
					b.Fatalf("Top = %d entries, %v", len(p.Entries), err)
				}
			}
		})
	}
}
