package client_test

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// TestDrainAndResume (§15): told the gateway drains, the client reconnects
// when it says and not before, resumes its subscription from the epoch and
// greatest seq it holds, keeps that seq when the gateway resumed and starts
// again when it did not, and re-sends a score left unanswered with its id.
func TestDrainAndResume(t *testing.T) {
	t.Parallel()
	const after = 400 * time.Millisecond
	var hintAt, reconnectAt atomic.Int64
	f := newFake(t, nil)
	f.answer = func(n int, r proto.Request) []any {
		switch {
		case r.Type == proto.TypeSubscribe && n == 1:
			return []any{
				proto.Subscribed{Type: proto.TypeSubscribed, ID: r.ID, Board: r.Board, Epoch: "e1"},
				proto.Top{Type: proto.TypeTop, Board: r.Board, Seq: 7, Entries: []proto.Entry{}},
				proto.View{Type: proto.TypeView, Board: r.Board, Seq: 9, Around: []proto.Entry{}},
			}
		case r.Type == proto.TypeScore && r.ID == "left" && n == 1:
			// Not answered: the drain comes first.
			hintAt.Store(time.Now().UnixNano())
			return []any{proto.Draining{Type: proto.TypeDraining, ReconnectAfterMS: after.Milliseconds()}, goingAway}
		case r.Type == proto.TypeSubscribe && n == 2:
			reconnectAt.CompareAndSwap(0, time.Now().UnixNano())
			yes := true
			return []any{proto.Subscribed{Type: proto.TypeSubscribed, ID: r.ID, Board: r.Board, Epoch: "e1", Resumed: &yes}}
		case r.Type == proto.TypeSubscribe && n == 3:
			return []any{proto.Subscribed{Type: proto.TypeSubscribed, ID: r.ID, Board: r.Board, Epoch: "e2", Resumed: new(bool)}}
		case r.Type == proto.TypeScore && r.ID == "cut" && n == 2:
			return []any{drop}
		}
		return f.standard(n, r)
	}
	var told atomic.Int64
	c, err := client.Dial(testCtx(t), f.URL, "t", &client.Options{
		Reconnect: true, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		OnDraining: func(d time.Duration) { told.Store(int64(d)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(testCtx(t), "b", client.SubOpts{Top: 3, Around: 1})
	if err != nil {
		t.Fatal(err)
	}
	f.next(t)
	<-sub.View()
	if sub.Epoch() != "e1" || sub.Seq() != 9 || sub.Resumed() {
		t.Fatalf("after subscribing: epoch %q seq %d resumed %v; want e1, 9, false", sub.Epoch(), sub.Seq(), sub.Resumed())
	}

	// The score left unanswered by the drain is answered on the next
	// connection, re-sent with its id.
	ack, err := c.Score(testCtx(t), client.ScoreReq{Board: "b", Member: "m", Delta: client.Int(2), ID: "left"})
	if err != nil || ack.ID != "left" {
		t.Fatalf("score across the drain: %+v, %v", ack, err)
	}
	if f.next(t).req.ID != "left" {
		t.Fatal("the score did not reach the first connection")
	}
	renew, resent := f.next(t), f.next(t)
	if renew.conn != 2 || renew.req.Type != proto.TypeSubscribe || renew.req.Since == nil || *renew.req.Since != (proto.Since{Epoch: "e1", Seq: 9}) {
		b, _ := json.Marshal(renew.req)
		t.Fatalf("renewal on connection %d: %s; want since {e1, 9}", renew.conn, b)
	}
	if resent.conn != 2 || resent.req.ID != "left" {
		t.Fatalf("re-sent %+v, want the score left on connection 2", resent)
	}
	if waited := time.Duration(reconnectAt.Load() - hintAt.Load()); waited < after {
		t.Fatalf("reconnected %s after the hint, before its reconnect_after_ms %s", waited, after)
	}
	if time.Duration(told.Load()) != after {
		t.Fatalf("OnDraining told %s, want %s", time.Duration(told.Load()), after)
	}
	testenv.Until(t, 10*time.Second, "the renewal to be answered", func() bool { return sub.Resumed() })
	if sub.Seq() != 9 || sub.Epoch() != "e1" {
		t.Fatalf("after a resume: epoch %q seq %d, want e1 and 9 kept", sub.Epoch(), sub.Seq())
	}

	// A connection lost without a hint is redialled with backoff; the
	// gateway does not resume (another epoch): the seq starts again.
	if _, err := c.Score(testCtx(t), client.ScoreReq{Board: "b", Member: "m", Delta: client.Int(1), ID: "cut"}); err != nil {
		t.Fatal(err)
	}
	for s := f.next(t); s.conn != 3 || s.req.Type != proto.TypeSubscribe; s = f.next(t) {
	}
	testenv.Until(t, 10*time.Second, "the second renewal to be answered", func() bool { return sub.Epoch() == "e2" })
	if sub.Resumed() || sub.Seq() != 0 {
		t.Fatalf("after a fresh renewal: resumed %v seq %d; want false, 0", sub.Resumed(), sub.Seq())
	}
}

// TestRenewalRetried: a renewal answered unavailable (a store slow under a
// storm of them) is sent again after retry_after_ms, resuming as before; a
// renewal refused for good is not.
func TestRenewalRetried(t *testing.T) {
	t.Parallel()
	var renewals atomic.Int32
	f := newFake(t, nil)
	f.answer = func(n int, r proto.Request) []any {
		switch {
		case r.Type == proto.TypeSubscribe && n == 1:
			return []any{proto.Subscribed{Type: proto.TypeSubscribed, ID: r.ID, Board: r.Board, Epoch: "e1"},
				proto.Top{Type: proto.TypeTop, Board: r.Board, Seq: 4, Entries: []proto.Entry{}}}
		case r.Type == proto.TypeScore && r.ID == "cut" && n == 1:
			return []any{drop}
		case r.Type == proto.TypeSubscribe && renewals.Add(1) < 3:
			return []any{proto.Error{Type: proto.TypeError, ID: r.ID, Code: proto.CodeUnavailable, Message: "slow", RetryAfterMS: 20}}
		case r.Type == proto.TypeSubscribe:
			yes := true
			return []any{proto.Subscribed{Type: proto.TypeSubscribed, ID: r.ID, Board: r.Board, Epoch: "e1", Resumed: &yes}}
		}
		return f.standard(n, r)
	}
	c, err := client.Dial(testCtx(t), f.URL, "t", &client.Options{Reconnect: true, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(testCtx(t), "b", client.SubOpts{Top: 3})
	if err != nil {
		t.Fatal(err)
	}
	<-sub.Top()
	c.Score(testCtx(t), client.ScoreReq{Board: "b", Member: "m", Delta: client.Int(1), ID: "cut"})
	testenv.Until(t, 10*time.Second, "the renewal retried until resumed", func() bool { return sub.Resumed() })
	var sinces []proto.Since
	for range 3 {
		for s := f.next(t); ; s = f.next(t) {
			if s.conn == 2 && s.req.Type == proto.TypeSubscribe {
				if s.req.Since == nil {
					t.Fatal("a renewal without since: it does not resume")
				}
				sinces = append(sinces, *s.req.Since)
				break
			}
		}
	}
	for _, s := range sinces {
		if s != (proto.Since{Epoch: "e1", Seq: 4}) {
			t.Fatalf("renewals resumed from %v, want e1 and seq 4 each time", sinces)
		}
	}
}
