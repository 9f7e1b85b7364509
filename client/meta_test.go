package client_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestGatewayScoreMeta: a score's Meta reaches the board and comes back on
// the entries of Page and Rank (docs/lists.md), and not on top frames,
// which carry it only on request; a Meta that is not a JSON object is
// refused before anything is sent.
func TestGatewayScoreMeta(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t)
	ctx := testCtx(t)
	c, err := client.Dial(ctx, g.URL, mint("admin", auth.Admin), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, "metas", client.SubOpts{Top: 3})
	if err != nil {
		t.Fatal(err)
	}
	const replay = `{"replay":"https://r.example/9"}`
	if _, err := c.Score(ctx, client.ScoreReq{Board: "metas", Member: "ann", Delta: client.Int(5), Meta: json.RawMessage(replay)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Score(ctx, client.ScoreReq{Board: "metas", Member: "bob", Delta: client.Int(3), Meta: json.RawMessage(`[1]`)}); err == nil {
		t.Fatal("a meta that is not an object was sent")
	}
	page, err := c.Page(ctx, client.PageReq{Board: "metas", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 1 || page.Entries[0].Meta != meta.Meta(replay) {
		t.Fatalf("page entries %+v, want ann with meta %s", page.Entries, replay)
	}
	rk, err := c.Rank(ctx, client.RankReq{Board: "metas", Member: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rk.Around) != 1 || rk.Around[0].Meta != meta.Meta(replay) {
		t.Fatalf("rank around %+v, want ann with meta %s", rk.Around, replay)
	}
	testenv.Until(t, 10*time.Second, "a top frame with ann", func() bool {
		select {
		case top := <-sub.Top():
			if len(top.Entries) == 1 && top.Entries[0].Meta != "" {
				t.Fatalf("top frame carries meta: %+v", top.Entries)
			}
			return len(top.Entries) == 1 && top.Entries[0].Member == "ann"
		default:
			return false
		}
	})
}
