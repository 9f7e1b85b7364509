package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// TestGatewayCohorts (§12): acks carry the cohort and tier of a league
// board, and a subscription with SubOpts.Cohort gets that cohort's top
// frames, naming it.
func TestGatewayCohorts(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t)
	ctx := testCtx(t)
	b := rank.DefaultBoard("lg")
	b.Reset = rank.Daily
	b.Cohort = rank.Cohort{Size: 2}
	tiers, _ := rank.LeagueTiersOf("bronze", "silver")
	b.League = rank.League{Tiers: tiers, Promote: 1, Demote: 1}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := g.Store.PutBoard(pctx, b); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(ctx, g.URL, mint("admin", auth.Admin), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, m := range []string{"ann", "bob", "cat"} {
		ack, err := c.Score(ctx, client.ScoreReq{Board: "lg", Member: m, Delta: client.Int(int64(10 + i))})
		if err != nil {
			t.Fatal(err)
		}
		want := "bronze-1"
		if i == 2 {
			want = "bronze-2"
		}
		if ack.Cohort != want || ack.Tier != "bronze" {
			t.Fatalf("ack of %s: cohort %q tier %q, want %s and bronze", m, ack.Cohort, ack.Tier, want)
		}
	}
	sub, err := c.Subscribe(ctx, "lg", client.SubOpts{Top: 5, Cohort: "bronze-1"})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 10*time.Second, "a top frame of cohort bronze-1", func() bool {
		select {
		case top := <-sub.Top():
			if top.Cohort != "bronze-1" {
				t.Fatalf("top frame of cohort %q, want bronze-1: %+v", top.Cohort, top)
			}
			return top.Total == 2 && len(top.Entries) == 2 && top.Entries[0].Member == "bob"
		default:
			return false
		}
	})
}
