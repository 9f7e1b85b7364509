package hub_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/node"
	"github.com/wsgateway/wsgateway/proto"
)

// membersOf renders a members frame's entries as "member:rank:score".
func membersOf(t *testing.T, m msg) string {
	t.Helper()
	f := as[proto.Members](t, m)
	out := make([]string, len(f.Entries))
	for i, e := range f.Entries {
		out[i] = fmt.Sprintf("%s:%d:%d", e.Member, e.Rank, e.Score)
	}
	return strings.Join(out, " ")
}

// untilMembers reads members frames until one renders as want.
func (c *wsClient) untilMembers(want string) proto.Members {
	c.t.Helper()
	t := c.t.(*testing.T)
	deadline := time.Now().Add(10 * time.Second)
	last := "(none)"
	for time.Now().Before(deadline) {
		m, ok := c.nextFrame(proto.TypeMembers, time.Until(deadline))
		if !ok {
			break
		}
		if last = membersOf(t, m); last == want {
			return as[proto.Members](t, m)
		}
	}
	t.Fatalf("no members frame %q; last %q", want, last)
	return proto.Members{}
}

// TestMembersSubscription (§11): subscribe with members gets `subscribed`,
// the board frame, then members frames of the listed members that have an
// entry, in rank order with global ranks, following an overtake by a member
// not on the list and a listed member's meta; a list of 0 or 101 ids, or
// members with around, is a bad_request naming the field that changes
// nothing; unsubscribe ends the frames.
func TestMembersSubscription(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{})
		g.board("fr", nil)
		srv := g.dial(in.token(t, "srv", auth.Server))
		for i, m := range []string{"a", "b", "c"} {
			srv.score("fr", m, int64(100-10*i))
		}
		p := g.dial(in.token(t, "a", auth.Player))
		id := p.id()
		p.send(proto.TypeSubscribe, id, map[string]any{"board": "fr", "members": []string{"c", "a", "ghost"}})
		if m := p.next(); m.Type != proto.TypeSubscribed || m.ID != id {
			t.Fatalf("got %s, want subscribed", m)
		}
		if m := p.next(); m.Type != proto.TypeBoard {
			t.Fatalf("got %s, want the board frame (R19)", m)
		}
		m := p.next()
		if m.Type != proto.TypeMembers || membersOf(t, m) != "a:1:100 c:3:80" || as[proto.Members](t, m).Total != 3 {
			t.Fatalf("first frame %s, want members a then c, total 3", m)
		}

		// A listed member's change first: the node has then seen the
		// board's change stream, so what follows is not a first sight's
		// whole re-read.
		srv.score("fr", "a", 1)
		p.untilMembers("a:1:101 c:3:80")
		srv.score("fr", "z", 85) // not listed; overtakes c
		p.untilMembers("a:1:101 c:4:80")
		srv.expectOK(proto.TypeAck, proto.TypeScore, map[string]any{
			"board": "fr", "member": "a", "delta": 0, "meta": map[string]any{"replay": "https://r.example/a"},
		})
		f := p.untilMembers("a:1:101 c:4:80")
		if f.Entries[0].Meta != `{"replay":"https://r.example/a"}` {
			t.Fatalf("members frame after a meta change: %+v", f.Entries)
		}

		ids := make([]string, 101)
		for i := range ids {
			ids[i] = fmt.Sprint("m", i)
		}
		for _, bad := range []map[string]any{
			{"board": "fr", "members": ids},
			{"board": "fr", "members": []string{}},
			{"board": "fr", "members": []string{"b"}, "around": 1},
			{"board": "fr", "members": "b"},
		} {
			e := p.expectError(proto.CodeBadRequest, proto.TypeSubscribe, bad)
			if msg := as[proto.Error](t, e).Message; !strings.Contains(msg, "members") {
				t.Errorf("subscribe %v: %q does not name members", bad, msg)
			}
		}
		p.expectError(proto.CodeInvalidMember, proto.TypeSubscribe, map[string]any{"board": "fr", "members": []string{"b", "not valid"}})
		// The refused subscribes changed nothing: the first list still
		// follows the board.
		srv.score("fr", "c", 30)
		p.untilMembers("c:1:110 a:2:101")

		p.expectOK(proto.TypeUnsubscribed, proto.TypeUnsubscribe, map[string]any{"board": "fr"})
		srv.score("fr", "c", 100)
		// A top subscription of the same board sees that change; a members
		// frame it caused would come no later, and must not come at all.
		id = p.id()
		p.send(proto.TypeSubscribe, id, map[string]any{"board": "fr", "top": 1})
		for {
			m := p.next()
			if m.Type == proto.TypeMembers {
				t.Fatalf("members frame after unsubscribe: %s", m)
			}
			if m.Type == proto.TypeTop && as[proto.Top](t, m).Entries[0].Score == 210 {
				break
			}
		}
	})
}

// TestMembersBounds (§11): one player's members subscriptions on a board
// hold at most MaxListIDs distinct ids on a node, across its connections:
// past it, bad_request naming members; the node's lists at most
// ListBudget × 10 ids: past it, rate_limited with retry_after_ms. A refused
// subscribe changes nothing.
func TestMembersBounds(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{nodeCfg: func(c *node.Config) { c.MaxListIDs, c.ListBudget = 150, 30 }})
		g.board("fr", nil)
		sc := g.dial(in.token(t, "srv", auth.Server))
		sc.score("fr", "m0", 5)
		list := func(from int) []string {
			out := make([]string, 100)
			for i := range out {
				out[i] = fmt.Sprint("m", from+i)
			}
			return out
		}
		p1, p2 := g.dial(in.token(t, "eve", auth.Player)), g.dial(in.token(t, "eve", auth.Player))
		p1.expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "fr", "members": list(0)})
		e := p2.expectError(proto.CodeBadRequest, proto.TypeSubscribe, map[string]any{"board": "fr", "members": list(100)})
		if msg := as[proto.Error](t, e).Message; !strings.Contains(msg, "members") || !strings.Contains(msg, "150") {
			t.Errorf("past the member's bound: %q does not name members and the bound", msg)
		}
		g.dial(in.token(t, "srv", auth.Server)).expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "fr", "members": list(100)})
		g.dial(in.token(t, "srv", auth.Server)).expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "fr", "members": list(200)})
		e = g.dial(in.token(t, "srv", auth.Server)).expectError(proto.CodeRateLimited, proto.TypeSubscribe, map[string]any{"board": "fr", "members": list(300)})
		if er := as[proto.Error](t, e); er.RetryAfterMS <= 0 || !strings.Contains(er.Message, "members") {
			t.Errorf("past the node's bound: %+v, want retry_after_ms and members named", er)
		}
		// The lists held still follow the board.
		sc.score("fr", "m0", 1)
		p1.untilMembers("m0:1:6")
	})
}

// TestSubscribeMetaFrames (§11): top and view frames carry entries' meta
// only when the subscription said "meta": true; meta must be a boolean.
func TestSubscribeMetaFrames(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{})
		g.board("mt", nil)
		srv := g.dial(in.token(t, "srv", auth.Server))
		const replay = `{"replay":"https://r.example/1"}`
		srv.expectOK(proto.TypeAck, proto.TypeScore, map[string]any{
			"board": "mt", "member": "a", "delta": 10, "meta": map[string]any{"replay": "https://r.example/1"},
		})
		first := func(c *wsClient, fields map[string]any) (proto.Top, proto.View) {
			t.Helper()
			c.expectOK(proto.TypeSubscribed, proto.TypeSubscribe, fields)
			top, ok := c.nextFrame(proto.TypeTop, 10*time.Second)
			view, ok2 := c.nextFrame(proto.TypeView, 10*time.Second)
			if !ok || !ok2 {
				t.Fatal("no first top and view frames")
			}
			return as[proto.Top](t, top), as[proto.View](t, view)
		}
		plain := g.dial(in.token(t, "a", auth.Player))
		top, view := first(plain, map[string]any{"board": "mt", "top": 3, "around": 1})
		if top.Entries[0].Meta != "" || view.Around[0].Meta != "" {
			t.Fatalf("frames without meta: true carry meta: %+v %+v", top.Entries, view.Around)
		}
		withMeta := g.dial(in.token(t, "a", auth.Player))
		top, view = first(withMeta, map[string]any{"board": "mt", "top": 3, "around": 1, "meta": true})
		if top.Entries[0].Meta != replay || view.Around[0].Meta != replay {
			t.Fatalf("frames with meta: true: %+v %+v", top.Entries, view.Around)
		}
		e := withMeta.expectError(proto.CodeBadRequest, proto.TypeSubscribe, map[string]any{"board": "mt", "meta": "yes"})
		if !strings.Contains(as[proto.Error](t, e).Message, "meta") {
			t.Fatalf("%s does not name meta", e)
		}
	})
}

// TestMembersMultiNode (§11, R9): a members subscription on node B follows
// an overtake applied through node A (one Redis, one nats-server).
func TestMembersMultiNode(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	in := newInfra(t, redisKind)
	a := in.gateway(t, gwOptions{node: "a"})
	b := in.gateway(t, gwOptions{node: "b"})
	a.board("mfr", nil)
	onA := a.dial(in.token(t, "srv-a", auth.Server))
	for i, m := range []string{"ann", "bob", "cat"} {
		onA.score("mfr", m, int64(100-10*i))
	}
	p := b.dial(in.token(t, "cat", auth.Player))
	p.expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "mfr", "members": []string{"cat", "ann"}})
	p.untilMembers("ann:1:100 cat:3:80")
	onA.score("mfr", "cat", 1) // a listed change first, as in TestMembersSubscription
	p.untilMembers("ann:1:100 cat:3:81")
	onA.score("mfr", "zed", 95) // not listed: ann keeps rank 1, cat falls to 4
	p.untilMembers("ann:1:100 cat:4:81")
	onA.score("mfr", "zed", 10)
	p.untilMembers("ann:2:100 cat:4:81")
}
