package memstore

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// populate fills a new board with n members directly (not through Apply),
// so a million-member setup takes about a second. Benchmarks call it once
// per size, outside b.Run, so b.N's ramp-up does not repeat it.
func populate(b *testing.B, n int) (*Store, rank.Board, []string) {
	b.Helper()
	s := mustStore(b, Config{SweepInterval: -1})
	cfg := rank.DefaultBoard("bench")
	// A short window keeps the idempotency table at steady state (a second
	// of events) instead of growing with b.N; its sweeping is measured too.
	cfg.IdempotencyWindow = rank.Duration(time.Second)
	if _, err := s.PutBoard(b.Context(), cfg); err != nil {
		b.Fatal(err)
	}
	bd := s.boards[cfg.ID]
	now := time.Now()
	z := bd.newPeriod(rank.PeriodAt(cfg, now), now)
	rng := rand.New(rand.NewPCG(1, 2))
	members := make([]string, n)
	for i := range members {
		members[i] = fmt.Sprintf("member%07d", i)
		nd := &node{}
		nd.m = members[i]
		bd.seq++
		bd.setKey(nd, int64(rng.IntN(1_000_000)), bd.seq)
		z.tr.insert(nd)
		z.members[nd.m] = nd
	}
	return s, cfg, members
}

type size struct {
	name string
	n    int
}

func sizes() []size { return []size{{"members=10k", 10_000}, {"members=1M", 1_000_000}} }

func BenchmarkApply(b *testing.B) {
	for _, sz := range sizes() {
		s, cfg, members := populate(b, sz.n)
		b.Run(sz.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(3, 4))
			ctx := b.Context()
			var buf []byte
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				buf = strconv.AppendInt(append(buf[:0], 'e'), int64(i), 10)
				e := rank.Event{Board: cfg.ID, ID: string(buf), Member: members[rng.IntN(len(members))], Op: rank.OpDelta, Amount: int64(rng.IntN(100) - 20)}
				if _, err := rank.ApplyWait(ctx, s, e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRank(b *testing.B) {
	for _, sz := range sizes() {
		s, cfg, members := populate(b, sz.n)
		b.Run(sz.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(5, 6))
			ctx := b.Context()
			ask := make([]string, 1)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ask[0] = members[rng.IntN(len(members))]
				r, err := s.Ranks(ctx, cfg.ID, "", ask, 0)
				if err != nil || !r.Members[0].Found {
					b.Fatal(r, err)
				}
			}
		})
	}
}

func BenchmarkTop(b *testing.B) {
	for _, sz := range sizes() {
		s, cfg, _ := populate(b, sz.n)
		b.Run(sz.name, func(b *testing.B) {
			ctx := b.Context()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Top(ctx, cfg.ID, "", (i*7919)%(sz.n-100), 100); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
