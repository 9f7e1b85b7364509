package live

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
)

// BenchmarkRegionsWatched: 200 regions of a 20,000-member region board
// watched at once, each by one top-10 subscriber (docs/performance.md,
// "Region boards"). One op is one tick after the events of an interval:
// "one" changes one region's top, "all" every region's (200 events, one
// each). Reports the store reads and the frames encoded per tick; the
// events themselves are applied with the timer stopped.
func BenchmarkRegionsWatched(b *testing.B) {
	const members, nregions = 20_000, 200
	var codes []string
	for c := 'A'; c <= 'Z' && len(codes) < nregions; c++ {
		for d := 'A'; d <= 'Z' && len(codes) < nregions; d++ {
			if code := string([]rune{c, d}); rank.ValidCountry(code) {
				codes = append(codes, code)
			}
		}
	}
	ms, err := memstore.New(rank.Hooks{}, memstore.Config{SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ms.Close() })
	ctx := context.Background()
	cfg := rank.DefaultBoard("g")
	cfg.Regions = true
	if _, err := ms.PutBoard(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	seq := int64(0)
	apply := func(i int, amount int64) rank.Change {
		seq++
		e := rank.Event{Board: "g", ID: fmt.Sprint("e", seq), Member: fmt.Sprintf("p%05d", i), Op: rank.OpDelta, Amount: amount, Region: codes[i%nregions]}
		r, err := rank.ApplyWait(ctx, ms, e)
		if err != nil {
			b.Fatal(err)
		}
		c, _ := rank.ChangeOf(e, r)
		return c
	}
	for i := range members {
		apply(i, int64(10*(members-i)))
	}
	rs := &regionStore{countingStore: &countingStore{Store: ms}}
	clock := time.Unix(1e9, 0)
	e, err := New(Config{Store: rs, Refresh: -1, Now: func() time.Time { return clock }})
	if err != nil {
		b.Fatal(err)
	}
	for _, code := range codes {
		if err := e.SubscribeSpec(ctx, NewOutbox(0, nil), Spec{Board: "g", Group: Group{Region, code}, Top: 10}); err != nil {
			b.Fatal(err)
		}
	}
	e.Changed([]rank.Change{apply(members-1, 0)})
	e.tick(ctx) // the first frames
	for _, tc := range []struct {
		name    string
		regions int
	}{{"one", 1}, {"all", nregions}} {
		b.Run(tc.name, func(b *testing.B) {
			reads, encoded := rs.regionTops.Load(), e.encoded.Load()
			lead := int64(0)
			for b.Loop() {
				b.StopTimer()
				lead += 100_000
				cs := make([]rank.Change, 0, tc.regions)
				for r := range tc.regions {
					cs = append(cs, apply(nregions+r, lead)) // a new leader of region r
				}
				e.Changed(cs)
				clock = clock.Add(time.Second)
				b.StartTimer()
				e.tick(ctx)
			}
			b.ReportMetric(float64(rs.regionTops.Load()-reads)/float64(b.N), "reads/op")
			b.ReportMetric(float64(e.encoded.Load()-encoded)/float64(b.N), "frames/op")
		})
	}
}
