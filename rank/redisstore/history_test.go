package redisstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// TestHistoryKeysBounded: what the reads cannot see (they read at most N)
// is held to the same bounds in Redis: a member's history list never
// grows past the board's history, it expires with its period, and a
// board's meta hash does too; a board whose events carry no meta has no
// meta hash at all.
func TestHistoryKeysBounded(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{})
	ctx := context.Background()
	b := rank.DefaultBoard("hk")
	b.History, b.Reset = 3, rank.Daily
	if _, err := s.PutBoard(ctx, b); err != nil {
		t.Fatal(err)
	}
	plain := rank.DefaultBoard("hk-plain")
	if _, err := s.PutBoard(ctx, plain); err != nil {
		t.Fatal(err)
	}
	var period int64
	for i := range 10 {
		e := rank.Event{Board: b.ID, ID: fmt.Sprintf("e%d", i), Member: "ann", Op: rank.OpDelta, Amount: 1, Meta: meta.Meta(`{"i":1}`)}
		r, err := rank.ApplyWait(ctx, s, e)
		if err != nil {
			t.Fatal(err)
		}
		period = r.Period
		if _, err := rank.ApplyWait(ctx, s, rank.Event{Board: plain.ID, ID: e.ID, Member: "ann", Op: rank.OpDelta, Amount: 1}); err != nil {
			t.Fatal(err)
		}
	}
	hk := s.historyKey(s.ref(b.ID), period, "ann")
	if n := s.client.LLen(ctx, hk).Val(); n != 3 {
		t.Errorf("history list %s holds %d events, want 3", hk, n)
	}
	for _, k := range []string{hk, s.metaKey(s.ref(b.ID), period)} {
		if ttl := s.client.PTTL(ctx, k).Val(); ttl <= 0 {
			t.Errorf("%s: TTL %v, want one (it expires with its period)", k, ttl)
		}
	}
	if n := s.client.Exists(ctx, s.metaKey(s.ref(plain.ID), 0)).Val(); n != 0 {
		t.Errorf("a board without meta has a meta hash")
	}
}
