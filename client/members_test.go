package client_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// TestGatewayMembersAndMeta: SubOpts.Members gets members frames of the
// listed members (their meta included) on Subscription.Members and
// OnMembers; SubOpts.Meta gets top frames with meta.
func TestGatewayMembersAndMeta(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t)
	ctx := testCtx(t)
	seen := make(chan proto.Members, 16)
	c, err := client.Dial(ctx, g.URL, mint("admin", auth.Admin), &client.Options{OnMembers: func(m proto.Members) {
		select {
		case seen <- m:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const replay = `{"replay":"https://r.example/7"}`
	for _, s := range []client.ScoreReq{
		{Board: "friends", Member: "ann", Delta: client.Int(5), Meta: json.RawMessage(replay)},
		{Board: "friends", Member: "bob", Delta: client.Int(9)},
		{Board: "friends", Member: "cat", Delta: client.Int(7)},
	} {
		if _, err := c.Score(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := c.Subscribe(ctx, "friends", client.SubOpts{Members: []string{"ann", "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	var m proto.Members
	select {
	case m = <-sub.Members():
	case <-time.After(10 * time.Second):
		t.Fatal("no members frame")
	}
	if len(m.Entries) != 2 || m.Entries[0].Member != "bob" || m.Entries[1].Member != "ann" ||
		m.Entries[1].Rank != 3 || m.Entries[1].Meta != meta.Meta(replay) || m.Total != 3 {
		t.Fatalf("members frame %+v", m)
	}
	select {
	case <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("OnMembers got nothing")
	}
	select {
	case top := <-sub.Top():
		t.Fatalf("top frame %+v on a members subscription without Top", top)
	default:
	}

	sub, err = c.Subscribe(ctx, "friends", client.SubOpts{Top: 3, Meta: true})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 10*time.Second, "a top frame with ann's meta", func() bool {
		select {
		case top := <-sub.Top():
			return len(top.Entries) == 3 && top.Entries[2].Meta == meta.Meta(replay)
		default:
			return false
		}
	})
}
