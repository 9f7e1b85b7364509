package node_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/node"
	"github.com/wsgateway/wsgateway/proto"
)

// spy counts the messages on a NATS subject (wildcards allowed), as a node
// of the same cluster would receive them.
type spy struct{ n atomic.Int64 }

func spyOn(t testing.TB, url, subject string) *spy {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s := &spy{}
	if _, err := nc.Subscribe(subject, func(*nats.Msg) { s.n.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return s
}

// settle makes sure everything node r published before has reached every
// other node: it waits until r's bus handed its changes to NATS, then sends
// a board event (a PUT of board's unchanged config) after them on the same
// connection and waits for each of others to receive it. NATS keeps one
// connection's messages in order for each receiver, so a change message
// not received by then was never sent to that node.
func settle(t testing.TB, r *running, published int64, board string, others ...*running) {
	t.Helper()
	testenv.Until(t, 5*time.Second, "the changes handed to NATS", func() bool { return r.n.Bus().Stats().Published >= published })
	before := make([]int64, len(others))
	for i, o := range others {
		before[i] = o.n.Bus().Stats().In.Boards
	}
	r.mustREST(t, "PUT", "/api/v1/boards/"+board, token(t, "root", auth.Admin), `{}`, 200)
	for i, o := range others {
		testenv.Until(t, 5*time.Second, "the board event on the other node", func() bool { return o.n.Bus().Stats().In.Boards > before[i] })
	}
}

// post applies n events of member on board through r, one REST call.
func post(t testing.TB, r *running, board, member string, n int) {
	t.Helper()
	var evs []string
	for range n {
		evs = append(evs, fmt.Sprintf(`{"id":"%d","member":%q,"delta":1}`, idSeq.Add(1), member))
	}
	r.mustREST(t, "POST", "/api/v1/boards/"+board+"/scores", token(t, "root", auth.Admin), "["+strings.Join(evs, ",")+"]", 200)
}

var idSeq atomic.Int64

// metric reads one sample of r's /metrics.
func metric(t *testing.T, r *running, sample string) string {
	t.Helper()
	resp, err := http.Get(r.http + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, sample+" "); ok {
			return v
		}
	}
	t.Fatalf("no %s in /metrics", sample)
	return ""
}

// TestInterestOnOff: a node receives a board's change messages only while
// one of its connections watches the board. Node b without a watcher gets
// none of node a's (which NATS carries: a spy sees them); with a watcher it
// subscribes, gets them and shows them; after the watcher leaves (no
// linger here) it unsubscribes and gets none again. The metrics say so.
func TestInterestOnOff(t *testing.T) {
	t.Parallel()
	nodes, url := cluster(t, 0, []string{"a", "b"}, func(c *node.Config) { c.InterestLinger = -1 })
	a, b := nodes[0], nodes[1]
	adm := token(t, "root", auth.Admin)
	a.mustREST(t, "PUT", "/api/v1/boards/io", adm, `{}`, 200)
	sp := spyOn(t, url, "lb.changes.io")

	// Nobody watches on b.
	post(t, a, "io", "ann", 3)
	settle(t, a, 3, "io", b)
	if sp.n.Load() == 0 {
		t.Fatal("the spy saw no change message: nothing was tested")
	}
	if s := b.n.Bus().Stats(); s.In.Changes != 0 || s.Watched != 0 {
		t.Fatalf("node b without watchers: %d change messages, %d subscriptions", s.In.Changes, s.Watched)
	}

	// A watcher on b: subscribed, and a's changes reach its frames.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, b.ws, token(t, "watcher", auth.Spectator), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, "io", client.SubOpts{Top: 5})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 5*time.Second, "node b subscribed to io", func() bool { return b.n.Bus().Stats().Watched == 1 })
	if v := metric(t, b, "wsgateway_bus_subscriptions"); v != "1" {
		t.Fatalf("wsgateway_bus_subscriptions %s, want 1", v)
	}
	post(t, a, "io", "bob", 4)
	waitTop(t, sub, "bob's 4 from node a", func(total int64, s []int64) bool { return total == 2 && len(s) == 2 && s[0] == 4 })
	got := b.n.Bus().Stats().In.Changes
	if got == 0 {
		t.Fatal("node b showed a's change without receiving it")
	}

	// The watcher leaves: b unsubscribes and receives nothing more.
	if err := c.Unsubscribe(ctx, "io"); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 5*time.Second, "node b unsubscribed from io", func() bool { return b.n.Bus().Stats().Watched == 0 })
	seen := sp.n.Load()
	post(t, a, "io", "cid", 5)
	settle(t, a, 3+4+5, "io", b)
	if sp.n.Load() == seen {
		t.Fatal("the spy saw no new change message: nothing was tested")
	}
	if n := b.n.Bus().Stats().In.Changes; n != got {
		t.Fatalf("node b received %d change messages after its last watcher left", n-got)
	}
	if v := metric(t, b, `wsgateway_bus_messages_received_total{kind="changes"}`); v != fmt.Sprint(got) {
		t.Fatalf(`wsgateway_bus_messages_received_total{kind="changes"} %s, want %d`, v, got)
	}
}

// TestInterestResyncOnSubscribe: changes published while a board's first
// watcher subscribes, before NATS has the node's subscription, reach the
// watcher all the same: once the subscription is confirmed, the board is
// re-read. Node b's interest function holds the subscription back until
// node a's changes went through NATS (a spy saw them) without b; the
// watcher must then show them, and b must not have received them: with
// the backstop off, they can only come from the re-read. Its bound (R7,
// one interval + 50 ms from the Resync) is proved with a fake clock in
// live.TestR20R21BoundAfterNotice; here the delay is only logged.
func TestInterestResyncOnSubscribe(t *testing.T) {
	t.Parallel()
	const interval = 100 * time.Millisecond
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	nodes, url := cluster(t, interval, []string{"a", "b"}, func(c *node.Config) {
		c.LiveRefresh = -1 // only the re-read on subscribing can show the changes
		if c.ID == "b" {
			c.Interest = func(board string) []string {
				if board == "gap" {
					<-release
				}
				return []string{board}
			}
		}
	})
	t.Cleanup(open) // before the nodes close (cleanups run last first)
	a, b := nodes[0], nodes[1]
	adm := token(t, "root", auth.Admin)
	a.mustREST(t, "PUT", "/api/v1/boards/gap", adm, `{}`, 200)
	sp := spyOn(t, url, "lb.changes.gap")
	post(t, a, "gap", "ann", 1)

	sub := subscribe(t, b, "gap", 10)
	waitTop(t, sub, "ann's 1", func(total int64, s []int64) bool { return total == 1 && len(s) == 1 && s[0] == 1 })
	post(t, a, "gap", "ann", 5) // five events of 1
	post(t, a, "gap", "bob", 3)
	// Every change message of a's passed the server (the spy has them all).
	testenv.Until(t, 5*time.Second, "a's changes through NATS", func() bool {
		s := a.n.Bus().Stats()
		return s.Published == 1+5+3 && sp.n.Load() == s.Messages
	})
	if s := b.n.Bus().Stats(); s.Watched != 0 || s.In.Changes != 0 {
		t.Fatalf("node b subscribed before its interest said so: %+v", s)
	}

	for pending := true; pending; {
		select {
		case f := <-sub.Top():
			if f.Total == 2 {
				t.Fatal("node b showed the changes before subscribing: nothing was tested")
			}
		default:
			pending = false
		}
	}
	began := time.Now()
	open()
	var at time.Time
	deadline := time.After(5 * time.Second)
	for at.IsZero() {
		select {
		case f := <-sub.Top():
			if f.Total == 2 && len(f.Entries) == 2 && f.Entries[0].Score == 6 {
				at = time.Now()
			}
		case <-deadline:
			t.Fatal("node b's watcher never saw the changes made while it subscribed")
		}
	}
	t.Logf("changes made before the subscription shown %s after it", at.Sub(began).Round(time.Millisecond))
	if n := b.n.Bus().Stats().In.Changes; n != 0 {
		t.Fatalf("node b received %d change messages: the test did not isolate the re-read", n)
	}
}

// TestInterestNoLostUpdate: while node a applies a stream of events, a
// watcher subscribes on node b (no linger, so each is a fresh NATS
// subscription racing the stream) and the stream stops right after; the
// watcher sees the final score (R7, R9). The backstop is off, so an update
// lost between the bus and the new subscription would never show. Five
// rounds, each a new subscription; the delay after the last ack is logged
// (R7's bound is proved with a fake clock in live.TestR7BoundAnyPhase).
func TestInterestNoLostUpdate(t *testing.T) {
	t.Parallel()
	const interval = 100 * time.Millisecond
	// No backstop: a lost update would never reach node b.
	nodes, _ := cluster(t, interval, []string{"a", "b"}, func(c *node.Config) { c.InterestLinger, c.LiveRefresh = -1, -1 })
	a, b := nodes[0], nodes[1]
	adm := token(t, "root", auth.Admin)
	a.mustREST(t, "PUT", "/api/v1/boards/flow", adm, `{}`, 200)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bot, err := client.Dial(ctx, a.ws, token(t, "bot", auth.Server), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bot.Close()

	var score int64
	for round := range 5 {
		// The stream: one event at a time, as fast as acks come.
		var stop atomic.Bool
		var sent atomic.Int64
		var lastAck atomic.Int64 // unix nanos
		done := make(chan error, 1)
		go func() {
			for i := 0; !stop.Load(); i++ {
				if _, err := bot.Score(ctx, client.ScoreReq{ID: fmt.Sprintf("r%d-%d", round, i), Board: "flow", Member: "m", Delta: client.Int(1)}); err != nil {
					done <- err
					return
				}
				lastAck.Store(time.Now().UnixNano())
				sent.Add(1)
			}
			done <- nil
		}()
		testenv.Until(t, 5*time.Second, "events flowing", func() bool { return sent.Load() >= 20 })

		c, err := client.Dial(ctx, b.ws, token(t, "watcher", auth.Spectator), nil)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := c.Subscribe(ctx, "flow", client.SubOpts{Top: 1})
		if err != nil {
			t.Fatal(err)
		}
		// Stamp frames as they arrive.
		var mu sync.Mutex
		var frames []stampedTop
		go func() {
			for f := range sub.Top() {
				mu.Lock()
				frames = append(frames, stampedTop{time.Now(), f})
				mu.Unlock()
			}
		}()
		testenv.Until(t, 5*time.Second, "events after the subscription", func() bool { return sent.Load() >= 40 })
		stop.Store(true)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		score += sent.Load()
		last := time.Unix(0, lastAck.Load())

		var at time.Time
		testenv.Until(t, 5*time.Second, "the final score on node b", func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, s := range frames {
				if len(s.f.Entries) == 1 && s.f.Entries[0].Score == score {
					at = s.at
					return true
				}
			}
			return false
		})
		t.Logf("round %d: %d events, final score on node b %s after the last ack", round, sent.Load(), at.Sub(last).Round(time.Millisecond))
		c.Close()
		testenv.Until(t, 5*time.Second, "node b unsubscribed", func() bool { return b.n.Bus().Stats().Watched == 0 })
	}
}

type stampedTop struct {
	at time.Time
	f  proto.Top
}
