package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/rank"
)

// TestGatewayCaps (§18): on a capped board the ack of an event cut by the
// cap says capped and the part applied, and the next one is limit_reached.
func TestGatewayCaps(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	ctx := testCtx(t)
	b := rank.DefaultBoard("capped")
	b.Cap = rank.Cap{Points: 100, Per: rank.CapPeriod}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := g.Store.PutBoard(pctx, b); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(ctx, g.URL, mint("game", auth.Server), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ack, err := c.Score(ctx, client.ScoreReq{Board: "capped", Member: "ann", Delta: client.Int(70)})
	if err != nil || ack.Capped || ack.Score != 70 {
		t.Fatalf("70 of 100: %+v, %v", ack, err)
	}
	ack, err = c.Score(ctx, client.ScoreReq{Board: "capped", Member: "ann", Delta: client.Int(50)})
	if err != nil || !ack.Capped || ack.Applied != 30 || ack.Score != 100 {
		t.Fatalf("50 past 70 of 100: %+v, %v; want capped, applied 30, score 100", ack, err)
	}
	var ce *client.Error
	if _, err = c.Score(ctx, client.ScoreReq{Board: "capped", Member: "ann", Delta: client.Int(1)}); !errors.As(err, &ce) || ce.Code != "limit_reached" {
		t.Fatalf("past the cap: %v, want limit_reached", err)
	}
}
