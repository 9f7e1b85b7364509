package redisstore

import (
	"testing"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// TestRegionKeys: a region board's keys as apply.lua and ban.lua keep
// them. An event places the member in the period's hash and its region's
// set and lists the region; a move leaves the old region's set; a removal
// drops the placement with the entry (the member's next event places it
// anew), so no field outlives the entry it placed.
func TestRegionKeys(t *testing.T) {
	t.Parallel()
	s := newStore(t, testenv.StartRedis(t), Config{})
	ctx := t.Context()
	b := rank.DefaultBoard("rk")
	b.Regions = true
	if _, err := s.PutBoard(ctx, b); err != nil {
		t.Fatal(err)
	}
	apply := func(id, member, region string, d int64) {
		t.Helper()
		if _, err := rank.ApplyWait(ctx, s, rank.Event{Board: b.ID, ID: id, Member: member, Op: rank.OpDelta, Amount: d, Region: region}); err != nil {
			t.Fatal(err)
		}
	}
	gk := s.gkey(&b, 0)
	placed := func(member string) string {
		t.Helper()
		v, err := s.client.HGet(ctx, gk, member).Result()
		if err != nil {
			return ""
		}
		return v
	}
	apply("1", "a", "DE", 5)
	apply("1", "b", "", 3)
	if placed("a") != "DE" || placed("b") != "ZZ" {
		t.Fatalf("placements a=%q b=%q, want DE and ZZ", placed("a"), placed("b"))
	}
	if rs, err := s.client.SMembers(ctx, gk+"/r").Result(); err != nil || len(rs) != 2 {
		t.Fatalf("regions placed in: %v, %v", rs, err)
	}
	apply("2", "a", "FR", 1)
	if n, _ := s.client.ZCard(ctx, gk+"/DE").Result(); n != 0 || placed("a") != "FR" {
		t.Fatalf("after a's move: DE holds %d, a placed in %q", n, placed("a"))
	}
	if err := s.RemoveMember(ctx, b.ID, "a", ""); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.client.ZCard(ctx, gk+"/FR").Result(); n != 0 || placed("a") != "" {
		t.Fatalf("after a's removal: FR holds %d, a placed in %q", n, placed("a"))
	}
}
