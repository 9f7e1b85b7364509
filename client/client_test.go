package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

func TestDialCarriesToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		subprotocol bool
	}{{"authorization header", false}, {"subprotocol", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, nil)
			c, err := client.Dial(testCtx(t), f.URL, "tok123", &client.Options{SubprotocolToken: tc.subprotocol})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			h := f.header(1)
			auth, protos := h.Get("Authorization"), h.Get("Sec-WebSocket-Protocol")
			if tc.subprotocol {
				if auth != "" || protos != "lb.v1,bearer.tok123" {
					t.Errorf("Authorization %q, Sec-WebSocket-Protocol %q; want none and lb.v1,bearer.tok123", auth, protos)
				}
			} else if auth != "Bearer tok123" || protos != "lb.v1" {
				t.Errorf("Authorization %q, Sec-WebSocket-Protocol %q; want Bearer tok123 and lb.v1", auth, protos)
			}
			if w := c.Welcome(); w.Member != "alice" || w.Node != "fake-1" {
				t.Errorf("welcome %+v", w)
			}
			if c.State() != client.StateConnected {
				t.Errorf("state %v", c.State())
			}
		})
	}
}

func TestDialRefused(t *testing.T) {
	t.Parallel()
	f := newFake(t, nil)
	_, err := client.Dial(testCtx(t), f.URL, "bad", nil)
	var e *client.Error
	if !errors.As(err, &e) || e.Code != proto.CodeUnauthorized || e.Status != 401 || e.Message != "token is expired" {
		t.Fatalf("err = %v (%#v); want *Error unauthorized 401", err, e)
	}
}

func TestDialFallsBackToNextURL(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(nil)
	deadURL := "ws" + strings.TrimPrefix(dead.URL, "http")
	dead.Close()
	f := newFake(t, nil)
	c, err := client.Dial(testCtx(t), deadURL, "t", &client.Options{URLs: []string{f.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Page(testCtx(t), client.PageReq{Board: "b"}); err != nil {
		t.Fatal(err)
	}
}

// The fake answers scores ten at a time in reverse order: each ack must
// still reach its own caller.
func TestPipelinedCallsMatchByID(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var held []proto.Request
	f := newFake(t, nil)
	f.answer = func(n int, r proto.Request) []any {
		mu.Lock()
		defer mu.Unlock()
		held = append(held, r)
		if len(held) < 10 {
			return nil
		}
		var out []any
		for _, h := range slices.Backward(held) {
			out = append(out, f.standard(n, h)...)
		}
		held = held[:0]
		return out
	}
	c, err := client.Dial(testCtx(t), f.URL, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	ids := make(chan string, 50)
	for i := range 50 {
		wg.Go(func() {
			ack, err := c.Score(testCtx(t), client.ScoreReq{Board: "b", Member: "m", Delta: client.Int(int64(i))})
			if err != nil {
				t.Error(err)
				return
			}
			if ack.Score != int64(i) {
				t.Errorf("call %d got the ack of delta %d", i, ack.Score)
			}
			ids <- ack.ID
		})
	}
	wg.Wait()
	close(ids)
	seenIDs := map[string]bool{}
	for id := range ids {
		if seenIDs[id] {
			t.Errorf("id %s used twice", id)
		}
		seenIDs[id] = true
	}
}

// An ack's fields reach the caller whichever way it was read: the fast
// path (the gateway's own shape, here with a member other than the one
// sent, a prev_rank and a period) and encoding/json's (a hot board's
// decimal score, and an ack with its keys in another order).
func TestScoreAckFields(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(_ int, r proto.Request) []any {
		switch r.Board {
		case "hot":
			return []any{json.RawMessage(`{"type":"ack","id":"` + r.ID + `","board":"hot","member":"alice","score":7.250,"rank":1,"prev_rank":2,"duplicate":false,"seq":4}`)}
		case "reordered":
			return []any{json.RawMessage(`{"seq":4,"type":"ack","id":"` + r.ID + `","board":"reordered","member":"alice","score":7,"rank":1,"prev_rank":null,"duplicate":true}`)}
		}
		return []any{proto.Ack{Type: proto.TypeAck, ID: r.ID, Board: r.Board, Member: "alice", Score: 12, Rank: 3, PrevRank: client.Int(5), Duplicate: true, Seq: 9, Period: 2}}
	})
	c, err := client.Dial(testCtx(t), f.URL, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		board string
		want  proto.Ack
	}{
		{"b", proto.Ack{Type: proto.TypeAck, ID: "id-b", Board: "b", Member: "alice", Score: 12, Rank: 3, PrevRank: client.Int(5), Duplicate: true, Seq: 9, Period: 2}},
		{"hot", proto.Ack{Type: proto.TypeAck, ID: "id-hot", Board: "hot", Member: "alice", Score: 7250, Rank: 1, PrevRank: client.Int(2), Seq: 4, Decimals: 3}},
		{"reordered", proto.Ack{Type: proto.TypeAck, ID: "id-reordered", Board: "reordered", Member: "alice", Score: 7, Rank: 1, Duplicate: true, Seq: 4}},
	} {
		for range 3 { // recycled calls carry nothing over
			got, err := c.Score(testCtx(t), client.ScoreReq{Board: tc.board, Delta: client.Int(1), ID: "id-" + tc.board})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ack on %s = %+v, want %+v", tc.board, got, tc.want)
			}
		}
	}
}

func TestErrorReplies(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(_ int, r proto.Request) []any {
		return []any{proto.Error{Type: proto.TypeError, ID: r.ID, Code: proto.CodeRateLimited, Message: "slow down", RetryAfterMS: 250}}
	})
	c, err := client.Dial(testCtx(t), f.URL, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Score(testCtx(t), client.ScoreReq{Board: "b", Delta: client.Int(1)})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != proto.CodeRateLimited || e.RetryAfter != 250*time.Millisecond {
		t.Fatalf("err = %v; want rate_limited, retry after 250ms", err)
	}
}

func TestScoreNeedsOneOfDeltaAndValue(t *testing.T) {
	t.Parallel()
	f := newFake(t, nil)
	c, err := client.Dial(testCtx(t), f.URL, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, r := range []client.ScoreReq{
		{Board: "b"},
		{Board: "b", Delta: client.Int(1), Value: client.Int(2)},
	} {
		if _, err := c.Score(testCtx(t), r); err == nil {
			t.Errorf("Score(%+v) succeeded", r)
		}
	}
	if len(f.reqs) != 0 {
		t.Errorf("%d requests reached the gateway", len(f.reqs))
	}
}

// A cancelled call returns at once and frees its slot (MaxPending 1).
func TestCancelledCallFreesItsSlot(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(n int, r proto.Request) []any {
		if r.ID == "never" {
			return nil
		}
		return []any{proto.Ack{Type: proto.TypeAck, ID: r.ID, Board: r.Board}}
	})
	c, err := client.Dial(testCtx(t), f.URL, "t", &client.Options{MaxPending: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(testCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Score(ctx, client.ScoreReq{Board: "b", Delta: client.Int(1), ID: "never"})
		errc <- err
	}()
	f.next(t) // the call is in flight
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want context.Canceled", err)
	}
	if _, err := c.Score(testCtx(t), client.ScoreReq{Board: "b", Delta: client.Int(1)}); err != nil {
		t.Fatal(err)
	}
}

// The first connection dies with a score unanswered: the client redials
// with a fresh token, renews the subscription and re-sends the same id.
func TestReconnectResendsAndResubscribes(t *testing.T) {
	t.Parallel()
	f := newFake(t, nil)
	f.answer = func(n int, r proto.Request) []any {
		if n == 1 && r.Type == proto.TypeScore {
			return []any{drop}
		}
		return f.standard(n, r)
	}
	var states []client.State
	var smu sync.Mutex
	var tokens atomic.Int32
	c, err := client.Dial(testCtx(t), f.URL, "first", &client.Options{
		Reconnect: true, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		TokenFunc: func(context.Context) (string, error) { tokens.Add(1); return "fresh", nil },
		OnState: func(s client.State) {
			smu.Lock()
			states = append(states, s)
			smu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Subscribe(testCtx(t), "b", client.SubOpts{Top: 5}); err != nil {
		t.Fatal(err)
	}
	f.next(t)
	ack, err := c.Score(testCtx(t), client.ScoreReq{Board: "b", Member: "m", Delta: client.Int(7), ID: "ev-1"})
	if err != nil {
		t.Fatal(err)
	}
	if ack.ID != "ev-1" || ack.Score != 7 {
		t.Errorf("ack %+v", ack)
	}
	first := f.next(t)
	if first.conn != 1 || first.req.ID != "ev-1" {
		t.Fatalf("first score %+v", first)
	}
	renew, resent := f.next(t), f.next(t)
	if renew.conn != 2 || renew.req.Type != proto.TypeSubscribe || renew.req.Board != "b" || renew.req.Top == nil || *renew.req.Top != 5 {
		t.Errorf("renewal %+v", renew)
	}
	if resent.conn != 2 || resent.req.ID != "ev-1" || string(resent.req.Delta) != "7" {
		t.Errorf("re-sent score %+v", resent)
	}
	if got := f.header(2).Get("Authorization"); got != "Bearer fresh" || tokens.Load() != 1 {
		t.Errorf("second dial Authorization %q after %d TokenFunc calls", got, tokens.Load())
	}
	smu.Lock()
	want := []client.State{client.StateConnected, client.StateReconnecting, client.StateConnected}
	if !slices.Equal(states, want) {
		t.Errorf("states %v; want %v", states, want)
	}
	smu.Unlock()
}

func TestConnectionLoss(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		reconnect bool
		call      func(c *client.Client, ctx context.Context) error
	}{
		{"score without reconnect", false, func(c *client.Client, ctx context.Context) error {
			_, err := c.Score(ctx, client.ScoreReq{Board: "b", Delta: client.Int(1)})
			return err
		}},
		{"auth is not retried", true, func(c *client.Client, ctx context.Context) error {
			_, err := c.Auth(ctx, "new-token")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(n int, r proto.Request) []any { return []any{drop} })
			c, err := client.Dial(testCtx(t), f.URL, "t", &client.Options{Reconnect: tc.reconnect, MinBackoff: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := tc.call(c, testCtx(t)); !errors.Is(err, client.ErrConnLost) {
				t.Fatalf("err = %v; want ErrConnLost", err)
			}
			if !tc.reconnect {
				testenv.Until(t, 10*time.Second, "closed state", func() bool { return c.State() == client.StateClosed })
				if _, err := c.Page(testCtx(t), client.PageReq{Board: "b"}); !errors.Is(err, client.ErrClosed) {
					t.Errorf("after loss: %v; want ErrClosed", err)
				}
			}
		})
	}
}

// The Top channel keeps only the newest frame; OnTop sees every one.
func TestSubscriptionLatestWins(t *testing.T) {
	t.Parallel()
	f := newFake(t, nil)
	f.answer = func(n int, r proto.Request) []any {
		if r.Type != proto.TypeSubscribe {
			return f.standard(n, r)
		}
		out := []any{proto.Subscribed{Type: proto.TypeSubscribed, ID: r.ID, Board: r.Board}}
		for i := range 100 {
			out = append(out, proto.Top{Type: proto.TypeTop, Board: r.Board, Seq: int64(i + 1), Entries: []proto.Entry{}})
		}
		return out
	}
	var calls atomic.Int32
	c, err := client.Dial(testCtx(t), f.URL, "t", &client.Options{OnTop: func(proto.Top) { calls.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Subscribe(testCtx(t), "b", client.SubOpts{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 10*time.Second, "100 OnTop calls", func() bool { return calls.Load() == 100 })
	last := int64(0)
	for last < 100 {
		select {
		case top := <-s.Top():
			if top.Seq <= last {
				t.Fatalf("seq %d after %d", top.Seq, last)
			}
			last = top.Seq
		case <-time.After(10 * time.Second):
			t.Fatalf("no frame after seq %d", last)
		}
	}
	if err := c.Unsubscribe(testCtx(t), "b"); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-s.Top(); ok {
		t.Error("Top channel still open after Unsubscribe")
	}
}

func TestCloseIsFinal(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(int, proto.Request) []any { return nil })
	c, err := client.Dial(testCtx(t), f.URL, "t", &client.Options{Reconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Rank(testCtx(t), client.RankReq{Board: "b"})
		errc <- err
	}()
	f.next(t)
	c.Close()
	c.Close()
	if err := <-errc; !errors.Is(err, client.ErrClosed) {
		t.Errorf("pending call: %v; want ErrClosed", err)
	}
	if _, err := c.Score(testCtx(t), client.ScoreReq{Board: "b", Delta: client.Int(1)}); !errors.Is(err, client.ErrClosed) {
		t.Errorf("call after Close: %v; want ErrClosed", err)
	}
	if c.State() != client.StateClosed {
		t.Errorf("state %v", c.State())
	}
}

// TestDialCancelledDuringWelcome: a dial whose ctx ends while the welcome
// is being read fails with ctx's error; it never hands out a connection
// that the library is already closing (its read-timeout AfterFunc fires
// even when the read itself succeeded).
func TestDialCancelledDuringWelcome(t *testing.T) {
	t.Parallel()
	f := newFake(t, nil)
	for i := range 20 {
		ctx, cancel := context.WithCancel(testCtx(t))
		hc := &http.Client{Transport: &http.Transport{DialContext: func(dctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(dctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &cancelOnWelcome{Conn: c, cancel: cancel}, nil
		}}}
		c, err := client.Dial(ctx, f.URL, "tok", &client.Options{HTTPClient: hc})
		cancel()
		if err == nil {
			c.Close()
			t.Fatalf("dial %d: ctx ended during the welcome, yet Dial succeeded", i)
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("dial %d: %v; want context.Canceled", i, err)
		}
	}
}

// cancelOnWelcome cancels the dial's ctx as the bytes of the welcome frame
// arrive, before the read that carries them returns.
type cancelOnWelcome struct {
	net.Conn
	cancel context.CancelFunc
}

func (c *cancelOnWelcome) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if bytes.Contains(p[:n], []byte(`"welcome"`)) {
		c.cancel()
	}
	return n, err
}
