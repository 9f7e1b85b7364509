package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/gwtest"
	"github.com/wsgateway/wsgateway/internal/hooktest"
	"github.com/wsgateway/wsgateway/node"
	"github.com/wsgateway/wsgateway/rank"
)

// TestGatewayHeldAndRejected (§16): an ack of a flagged event says Held;
// a rejected event is an *Error with code rejected and the hook's Reason.
func TestGatewayHeldAndRejected(t *testing.T) {
	t.Parallel()
	g := gwtest.Run(t, gwtest.Options{Secret: []byte(testSecret), Config: func(c *node.Config) { c.Webhooks.AllowPrivate = true }})
	ctx := testCtx(t)
	h := hooktest.New(t, "client-test-hook-secret", func(c hooktest.Call) hooktest.Answer {
		if c.Body["member"] == "bob" {
			return hooktest.Reject("replayed run")
		}
		return hooktest.Flag("odd")
	})
	b := rank.DefaultBoard("arena")
	b.Hook = rank.Hook{URL: h.URL, Secret: h.Secret, Timeout: rank.Duration(2 * time.Second), OnError: rank.OnErrorReject}
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
	ack, err := c.Score(ctx, client.ScoreReq{Board: "arena", Member: "ann", Delta: client.Int(5)})
	if err != nil || !ack.Held || ack.Score != 5 {
		t.Fatalf("a flagged event: %+v, %v", ack, err)
	}
	_, err = c.Score(ctx, client.ScoreReq{Board: "arena", Member: "bob", Delta: client.Int(5)})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "rejected" || ce.Reason != "replayed run" {
		t.Fatalf("a rejected event: %v", err)
	}
}
