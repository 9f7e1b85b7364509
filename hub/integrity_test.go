package hub_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/hooktest"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// Score integrity over the WebSocket (docs/protocol.md §16, R35, R36).

const hookSecret = "hub-test-hook-secret"

// hookBoard creates a board whose hook is h (every event, 2 s timeout,
// on_error reject), edited by edit.
func (g *gateway) hookBoard(id string, h *hooktest.Hook, edit func(*rank.Board)) rank.Board {
	g.t.Helper()
	return g.board(id, func(b *rank.Board) {
		b.Hook = rank.Hook{URL: h.URL, Secret: h.Secret, Timeout: rank.Duration(2 * time.Second), OnError: rank.OnErrorReject}
		if edit != nil {
			edit(b)
		}
	})
}

// scoreErr sends a score and wants an error reply with code.
func (c *wsClient) scoreErr(id, board, member string, delta int64, code string) proto.Error {
	c.t.Helper()
	c.send(proto.TypeScore, id, map[string]any{"board": board, "member": member, "delta": delta})
	m := c.reply(id)
	if m.Type != proto.TypeError || m.Code != code {
		c.t.Fatalf("score %s of %s: %s, want error %s", id, member, m, code)
	}
	return as[proto.Error](c.t, m)
}

// scoreID sends a score with id and wants its ack.
func (c *wsClient) scoreID(id, board, member string, delta int64) proto.Ack {
	c.t.Helper()
	c.send(proto.TypeScore, id, map[string]any{"board": board, "member": member, "delta": delta})
	m := c.reply(id)
	if m.Type != proto.TypeAck {
		c.t.Fatalf("score %s of %s: %s, want an ack", id, member, m)
	}
	return as[proto.Ack](c.t, m)
}

// rankOf reads member's rank with c's token: nil when absent.
func (c *wsClient) rankOf(board, member string) *int64 {
	c.t.Helper()
	return as[proto.RankReply](c.t, c.expectOK(proto.TypeRank, proto.TypeRank, map[string]any{"board": board, "member": member, "around": 1})).Rank
}

// TestHookVerdicts: accept acks, reject answers rejected with the hook's
// reason and applies nothing, flag acks held; a re-send gets the same
// answer without another call; the held member is in no one else's read
// but its own and an admin's.
func TestHookVerdicts(t *testing.T) {
	t.Parallel()
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{allowPrivate: true})
		h := hooktest.New(t, hookSecret, func(c hooktest.Call) hooktest.Answer {
			switch c.Body["member"] {
			case "rej":
				return hooktest.Reject("impossible run")
			case "sneak":
				return hooktest.Flag("too fast")
			}
			return hooktest.Accept()
		})
		b := g.hookBoard("hv", h, nil)
		srv := g.dial(in.token(t, "game", auth.Server))
		if a := srv.score(b.ID, "ok", 10); a.Score != 10 || a.Rank != 1 || a.Held {
			t.Fatalf("accepted: %+v", a)
		}
		for range 2 {
			e := srv.scoreErr("r1", b.ID, "rej", 500, proto.CodeRejected)
			if e.Reason != "impossible run" || e.RetryAfterMS != 0 {
				t.Fatalf("rejected: %+v", e)
			}
		}
		for i := range 2 {
			a := srv.scoreID("f1", b.ID, "sneak", 5)
			if !a.Held || a.Score != 5 || a.Rank != 2 || a.Duplicate != (i == 1) {
				t.Fatalf("flagged (send %d): %+v", i+1, a)
			}
		}
		if h.CallsOf("r1") != 1 || h.CallsOf("f1") != 1 {
			t.Fatalf("calls: r1 %d, f1 %d; want one each", h.CallsOf("r1"), h.CallsOf("f1"))
		}
		pg := as[proto.PageReply](t, srv.expectOK(proto.TypePage, proto.TypePage, map[string]any{"board": b.ID, "offset": 0, "limit": 10}))
		if len(pg.Entries) != 1 || pg.Entries[0].Member != "ok" || pg.Total != 1 {
			t.Fatalf("page with a held member and a rejected one: %+v", pg)
		}
		if r := srv.rankOf(b.ID, "sneak"); r != nil {
			t.Fatalf("a server token reads the held member at %d", *r)
		}
		if r := g.dial(in.token(t, "sneak", auth.Player)).rankOf(b.ID, "sneak"); r == nil || *r != 2 {
			t.Fatalf("the held member's own rank: %v, want 2", r)
		}
		if r := g.dial(in.token(t, "boss", auth.Admin)).rankOf(b.ID, "sneak"); r == nil || *r != 2 {
			t.Fatalf("an admin's read of the held member: %v, want 2", r)
		}
		if r := g.dial(in.token(t, "other", auth.Player)).rankOf(b.ID, "sneak"); r != nil {
			t.Fatalf("another player reads the held member at %d", *r)
		}
	})
}

// TestHookSlowDelaysNothingElse (R36): while a board's hook holds an
// event, the same connection's later event on another board is applied at
// once (its ack waits behind the held one's reply, R2), and another
// connection's events on that board are acked at once.
func TestHookSlowDelaysNothingElse(t *testing.T) {
	t.Parallel()
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{allowPrivate: true})
		release := make(chan struct{})
		h := hooktest.New(t, hookSecret, func(hooktest.Call) hooktest.Answer { return hooktest.Answer{Until: release} })
		slow := g.hookBoard("slow", h, func(b *rank.Board) { b.Hook.Timeout = rank.Duration(5 * time.Second) })
		fast := g.board("fast", nil)
		c1 := g.dial(in.token(t, "game1", auth.Server))
		c1.send(proto.TypeScore, "s1", map[string]any{"board": slow.ID, "member": "ann", "delta": 7})
		testenv.Until(t, 5*time.Second, "the hook is called", func() bool { return len(h.Calls()) == 1 })
		c1.send(proto.TypeScore, "f1", map[string]any{"board": fast.ID, "member": "bob", "delta": 3})

		c2 := g.dial(in.token(t, "game2", auth.Server))
		for i := range 20 {
			if a := c2.score(fast.ID, fmt.Sprintf("m%d", i), 1); a.Score != 1 {
				t.Fatalf("another connection's event on another board: %+v", a)
			}
		}
		testenv.Until(t, 5*time.Second, "c1's event on the other board to be applied", func() bool {
			return c2.rankOf(fast.ID, "bob") != nil
		})
		if len(h.Calls()) != 1 {
			t.Fatalf("%d hook calls", len(h.Calls()))
		}
		close(release)
		if m := c1.next(); m.ID != "s1" || m.Type != proto.TypeAck {
			t.Fatalf("first reply %s, want s1's ack (R2)", m)
		}
		if m := c1.next(); m.ID != "f1" || m.Type != proto.TypeAck {
			t.Fatalf("second reply %s, want f1's ack", m)
		}
	})
}

// TestHookOnError: a dead hook and a slow one, with each on_error: reject
// answers unavailable with the claim's retry_after_ms, accept applies.
func TestHookOnError(t *testing.T) {
	t.Parallel()
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{allowPrivate: true})
		slowHook := hooktest.New(t, hookSecret, func(hooktest.Call) hooktest.Answer { return hooktest.Answer{Delay: 3 * time.Second} })
		deadURL := fmt.Sprintf("http://127.0.0.1:%d/validate", testenv.FreePort(t)) // nothing listens
		c := g.dial(in.token(t, "game", auth.Server))
		for _, tc := range []struct{ name, url string }{{"dead", deadURL}, {"slow", slowHook.URL}} {
			for _, onErr := range []string{rank.OnErrorReject, rank.OnErrorAccept} {
				b := g.board(tc.name+"-"+onErr, func(b *rank.Board) {
					b.Hook = rank.Hook{URL: tc.url, Secret: hookSecret, Timeout: rank.Duration(100 * time.Millisecond), OnError: onErr}
				})
				if onErr == rank.OnErrorAccept {
					if a := c.score(b.ID, "ann", 4); a.Score != 4 {
						t.Fatalf("%s hook, on_error accept: %+v", tc.name, a)
					}
					continue
				}
				e := c.scoreErr(c.id(), b.ID, "ann", 4, proto.CodeUnavailable)
				if e.RetryAfterMS <= 0 || e.RetryAfterMS > (100*time.Millisecond+rank.ClaimMargin).Milliseconds() {
					t.Fatalf("%s hook, on_error reject: %+v", tc.name, e)
				}
				if p := g.top(b.ID, 10); p.Total != 0 {
					t.Fatalf("%s hook, on_error reject applied it: %+v", tc.name, p)
				}
			}
		}
	})
}

// TestHookTopContenders: with top K only events that reach the top K are
// sent to the hook; the rest apply with no call.
func TestHookTopContenders(t *testing.T) {
	t.Parallel()
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{allowPrivate: true})
		h := hooktest.New(t, hookSecret, nil)
		b := g.hookBoard("topk", h, func(b *rank.Board) { b.Hook.Top = 3 })
		c := g.dial(in.token(t, "game", auth.Server))
		for i, m := range []string{"a", "b", "c"} {
			c.score(b.ID, m, int64(100-10*i)) // fewer than 3: each is a contender
		}
		for i := range 50 {
			c.score(b.ID, fmt.Sprintf("low%d", i), 79)
		}
		if n := len(h.Calls()); n != 3 {
			t.Fatalf("%d calls after 50 events below the 3rd, want the first 3", n)
		}
		if a := c.score(b.ID, "low7", 10); a.Score != 89 || a.Rank != 3 {
			t.Fatalf("a contender: %+v", a)
		}
		if calls := h.Calls(); len(calls) != 4 || calls[3].Body["member"] != "low7" || calls[3].Body["score"] != 79.0 {
			t.Fatalf("the contender's call: %d calls, last %s", len(calls), calls[len(calls)-1].Raw)
		}
	})
}

// TestHookMemberOrder: on a board with a hook, a member's events apply in
// the order sent even when the first waits for its verdict.
func TestHookMemberOrder(t *testing.T) {
	t.Parallel()
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{allowPrivate: true})
		h := hooktest.New(t, hookSecret, func(c hooktest.Call) hooktest.Answer {
			if c.Body["value"] == 100.0 {
				return hooktest.Answer{Delay: 300 * time.Millisecond}
			}
			return hooktest.Accept()
		})
		b := g.hookBoard("order", h, func(b *rank.Board) { b.Mode = rank.Set })
		c := g.dial(in.token(t, "game", auth.Server))
		c.send(proto.TypeScore, "v1", map[string]any{"board": b.ID, "member": "ann", "value": 100})
		c.send(proto.TypeScore, "w1", map[string]any{"board": b.ID, "member": "zed", "value": 1})
		c.send(proto.TypeScore, "v2", map[string]any{"board": b.ID, "member": "ann", "value": 50})
		for _, id := range []string{"v1", "w1", "v2"} {
			if m := c.reply(id); m.Type != proto.TypeAck {
				t.Fatalf("%s: %s", id, m)
			}
		}
		if p := g.top(b.ID, 10); len(p.Entries) != 2 || p.Entries[0].Member != "ann" || p.Entries[0].Score != 50 {
			t.Fatalf("ann's last value sent was 50: %+v", p.Entries)
		}
	})
}

// TestHeldFrames (R35): a member held by a jump leaves every other
// subscriber's top frame from the frame of its holding event on, and comes
// back after the queue's clear.
func TestHeldFrames(t *testing.T) {
	t.Parallel()
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{allowPrivate: true})
		b := g.board("heldf", func(b *rank.Board) { b.Flags.Jump = 50 })
		srv := g.dial(in.token(t, "game", auth.Server))
		srv.score(b.ID, "ann", 10)
		srv.score(b.ID, "bob", 20)
		spec := g.dial(in.token(t, "watcher", auth.Spectator))
		spec.expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": b.ID, "top": 10})
		held := srv.score(b.ID, "cheat", 100)
		if !held.Held {
			t.Fatalf("a jump of 100: %+v", held)
		}
		members := func(f proto.Top) string {
			var out []string
			for _, e := range f.Entries {
				out = append(out, e.Member)
			}
			return strings.Join(out, ",")
		}
		frameFrom := func(seq int64) proto.Top {
			t.Helper()
			for {
				m, ok := spec.nextFrame(proto.TypeTop, 5*time.Second)
				if !ok {
					t.Fatalf("no top frame with seq >= %d", seq)
				}
				f := as[proto.Top](t, m)
				if f.Seq >= held.Seq && strings.Contains(members(f), "cheat") {
					t.Fatalf("a frame from the holding event on shows the held member: %s (seq %d)", members(f), f.Seq)
				}
				if f.Seq >= seq {
					return f
				}
			}
		}
		// The standings did not change: a later change brings the next frame.
		next := srv.score(b.ID, "ann", 1)
		if f := frameFrom(next.Seq); members(f) != "bob,ann" || f.Total != 2 {
			t.Fatalf("the frame after the holding event: %s total %d", members(f), f.Total)
		}
		status, body := post(t, g, in.token(t, "boss", auth.Admin), "/api/v1/boards/heldf/held/cheat", `{"action":"clear"}`)
		if status != http.StatusOK {
			t.Fatalf("clear: %d %s", status, body)
		}
		testenv.Until(t, 5*time.Second, "cheat back in a frame", func() bool {
			m, ok := spec.nextFrame(proto.TypeTop, 5*time.Second)
			return ok && members(as[proto.Top](t, m)) == "cheat,bob,ann"
		})
	})
}

// post sends a JSON body to the gateway's API with token.
func post(t *testing.T, g *gateway, token, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.HTTP+path, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if !json.Valid(out) {
		t.Fatalf("POST %s: %d %q is not JSON", path, resp.StatusCode, out)
	}
	return resp.StatusCode, out
}

// TestHookOneCallAcrossNodes (R35): the same event sent to two nodes at
// once is called once; the other node answers unavailable meanwhile, and
// after the verdict every re-send anywhere gets the first answer without
// a call, a reject as an accept.
func TestHookOneCallAcrossNodes(t *testing.T) {
	t.Parallel()
	in := newInfra(t, redisKind)
	g1 := in.gateway(t, gwOptions{node: "n1", allowPrivate: true})
	g2 := in.gateway(t, gwOptions{node: "n2", allowPrivate: true})
	release := make(chan struct{})
	h := hooktest.New(t, hookSecret, func(c hooktest.Call) hooktest.Answer {
		if c.Body["member"] == "rej" {
			return hooktest.Reject("replayed run")
		}
		return hooktest.Answer{Until: release}
	})
	b := g1.hookBoard("twonode", h, func(b *rank.Board) { b.Hook.Timeout = rank.Duration(5 * time.Second) })
	g2.Node.BoardChanged(b.ID, false)
	c1 := g1.dial(in.token(t, "game1", auth.Server))
	c2 := g2.dial(in.token(t, "game2", auth.Server))
	c1.send(proto.TypeScore, "x1", map[string]any{"board": b.ID, "member": "ann", "delta": 9})
	testenv.Until(t, 5*time.Second, "the hook is called", func() bool { return h.CallsOf("x1") == 1 })
	e := c2.scoreErr("x1", b.ID, "ann", 9, proto.CodeUnavailable)
	if e.RetryAfterMS <= 0 || e.RetryAfterMS > (5*time.Second+rank.ClaimMargin).Milliseconds() {
		t.Fatalf("the other node while the call is under way: %+v", e)
	}
	close(release)
	first := as[proto.Ack](t, c1.reply("x1"))
	if first.Score != 9 || first.Duplicate {
		t.Fatalf("the first node's ack: %+v", first)
	}
	for _, c := range []*wsClient{c2, c1, c2} {
		if a := c.scoreID("x1", b.ID, "ann", 9); !a.Duplicate || a.Seq != first.Seq {
			t.Fatalf("a re-send after the verdict: %+v, want the duplicate of %+v", a, first)
		}
	}
	c1.scoreErr("r1", b.ID, "rej", 5, proto.CodeRejected)
	for _, c := range []*wsClient{c2, c1} {
		if e := c.scoreErr("r1", b.ID, "rej", 5, proto.CodeRejected); e.Reason != "replayed run" {
			t.Fatalf("a re-send of the rejected event: %+v", e)
		}
	}
	if h.CallsOf("x1") != 1 || h.CallsOf("r1") != 1 {
		t.Fatalf("calls: x1 %d, r1 %d; want 1 each", h.CallsOf("x1"), h.CallsOf("r1"))
	}
	if p := g2.top(b.ID, 10); len(p.Entries) != 1 || p.Entries[0].Score != 9 {
		t.Fatalf("the board: %+v", p.Entries)
	}
}
