package bus

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wsgateway/wsgateway/internal/testenv"

	"github.com/wsgateway/wsgateway/rank"
)

// Two nodes on one real nats-server: every change reaches the other node,
// per board in seq order, exactly once, and never comes back to its sender.
func TestTwoNodesOrderedNoEcho(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	var ra, rb recorder
	a := newBus(t, ra.wire(Config{URL: srv.URL(), Node: "a"}))
	b := newBus(t, rb.wire(Config{URL: srv.URL(), Node: "b"}))
	ready(t, a, b)

	boards := []string{"run_hero", "cup.2026.final", "x-y"}
	const perBoard = 300
	for i := 1; i <= perBoard; i++ {
		for j, board := range boards {
			var old *int64
			if i > 1 {
				old = ptr(int64(i - 1))
			}
			a.Publish(rank.Change{Board: board, Seq: int64(i), Member: fmt.Sprintf("m%d", j), Old: old, New: int64(i), Rank: 1, Name: "Ann"})
		}
	}
	want := perBoard * len(boards)
	testenv.Until(t, 20*time.Second, "all changes at b", func() bool { return rb.count() >= want })

	got := rb.changes()
	if len(got) != want {
		t.Fatalf("b received %d changes, want %d", len(got), want)
	}
	next := map[string]int64{}
	for _, c := range got {
		if c.Seq != next[c.Board]+1 {
			t.Fatalf("board %s: seq %d after %d", c.Board, c.Seq, next[c.Board])
		}
		next[c.Board] = c.Seq
		if c.Seq > 1 && (c.Old == nil || *c.Old != c.Seq-1) || c.Seq == 1 && c.Old != nil || c.Name != "Ann" {
			t.Fatalf("change not carried intact: %+v", c)
		}
	}
	for _, board := range boards {
		if next[board] != perBoard {
			t.Errorf("board %s: last seq %d, want %d", board, next[board], perBoard)
		}
	}
	rb.mu.Lock()
	for _, batch := range rb.batches {
		for _, c := range batch {
			if c.Board != batch[0].Board {
				t.Errorf("one message mixed boards %s and %s", batch[0].Board, c.Board)
			}
		}
	}
	rb.mu.Unlock()

	// A marker from b reaches a after any echo of a's own changes would
	// have (the server delivers to a in the order it processed): so if a
	// has only the marker, nothing was echoed.
	b.Publish(rank.Change{Board: "marker", Seq: 1, Member: "z", New: 1, Rank: 1})
	testenv.Until(t, 10*time.Second, "marker at a", func() bool { return ra.count() >= 1 })
	if got := ra.changes(); len(got) != 1 || got[0].Board != "marker" {
		t.Errorf("a received %d changes (%v...), want only b's marker", len(got), got[0])
	}
	if s := a.Stats(); s.Published != int64(want) || s.Dropped != 0 {
		t.Errorf("a stats %+v, want %d published, none dropped", s, want)
	}
	if s := b.Stats(); s.Received != int64(want) {
		t.Errorf("b stats %+v, want %d received", s, want)
	}
}

// Under a burst, changes collected within one FlushInterval share one
// message per board: far fewer messages than changes, and none lost.
func TestBatching(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	var rb recorder
	a := newBus(t, Config{URL: srv.URL(), Node: "a", FlushInterval: 20 * time.Millisecond})
	b := newBus(t, rb.wire(Config{URL: srv.URL(), Node: "b"}))

	// Count the messages on the wire with a plain client.
	spy, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close()
	var wireMsgs atomic.Int64
	if _, err := spy.Subscribe("lb.changes.>", func(*nats.Msg) { wireMsgs.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	ready(t, a, b)

	const n = 6000
	boards := []string{"b1", "b.2", "b3"}
	for i := range n {
		board := boards[i%len(boards)]
		a.Publish(rank.Change{Board: board, Seq: int64(i/len(boards) + 1), Member: "m", New: int64(i), Rank: 1})
	}
	testenv.Until(t, 20*time.Second, "burst at b", func() bool { return rb.count() >= n })
	testenv.Until(t, 10*time.Second, "spy count", func() bool { return wireMsgs.Load() == a.Stats().Messages })

	if got := rb.count(); got != n {
		t.Fatalf("b received %d changes, want %d", got, n)
	}
	msgs := wireMsgs.Load()
	t.Logf("%d changes in %d messages", n, msgs)
	// Even if the loop ran over many windows, a window carries at most one
	// message per board (plus chunks of maxBatch): one message per change
	// would mean batching is broken.
	if msgs*10 > n {
		t.Errorf("%d messages for %d changes: not batched", msgs, n)
	}
	if s := a.Stats(); s.Published != n || s.Messages != msgs || s.Dropped != 0 {
		t.Errorf("a stats %+v, want %d published in %d messages", s, n, msgs)
	}
}

// An idle bus publishes at once: a lone change arrives without waiting for
// a long FlushInterval.
func TestIdleFlushesImmediately(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	var rb recorder
	a := newBus(t, Config{URL: srv.URL(), Node: "a", FlushInterval: time.Hour})
	b := newBus(t, rb.wire(Config{URL: srv.URL(), Node: "b"}))
	ready(t, a, b)
	a.Publish(rank.Change{Board: "solo", Seq: 1, Member: "m", New: 1, Rank: 1})
	// With an hour-long window, arrival proves the idle path skipped it.
	testenv.Until(t, 10*time.Second, "lone change", func() bool { return rb.count() == 1 })
}

func TestBoardEvents(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	var ra, rb recorder
	a := newBus(t, ra.wire(Config{URL: srv.URL(), Node: "a", Subject: "tenant1.lb"}))
	b := newBus(t, rb.wire(Config{URL: srv.URL(), Node: "b", Subject: "tenant1.lb"}))
	ready(t, a, b)

	want := []BoardEvent{{Board: "cup.final"}, {Board: "old", Deleted: true}}
	for _, e := range want {
		a.PublishBoard(e)
	}
	testenv.Until(t, 10*time.Second, "board events at b", func() bool { return len(rb.boardEvents()) >= len(want) })
	got := rb.boardEvents()
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("b got %v, want %v", got, want)
	}
	if len(ra.boardEvents()) != 0 {
		t.Errorf("a heard its own board events: %v", ra.boardEvents())
	}
}

// Different subject prefixes are separate buses on one server.
func TestSubjectPrefixIsolates(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	var rb, rc recorder
	a := newBus(t, Config{URL: srv.URL(), Node: "a", Subject: "one"})
	b := newBus(t, rb.wire(Config{URL: srv.URL(), Node: "b", Subject: "one"}))
	c := newBus(t, rc.wire(Config{URL: srv.URL(), Node: "c", Subject: "two"}))
	ready(t, a, b, c)
	a.Publish(rank.Change{Board: "x", Seq: 1, Member: "m", New: 1, Rank: 1})
	a.Publish(rank.Change{Board: "x", Seq: 2, Member: "m", New: 2, Rank: 1})
	testenv.Until(t, 10*time.Second, "changes at b", func() bool { return rb.count() == 2 })
	// c would have had them at the same time as b.
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rc.count() != 0 {
		t.Errorf("bus with prefix two heard prefix one: %v", rc.changes())
	}
}

// The server is killed and restarted on the same port: both nodes call
// OnResync("") after reconnecting and delivery resumes.
func TestReconnectResyncs(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	srv := testenv.StartNATS(t)
	var ra, rb recorder
	cfg := Config{URL: srv.URL(), ReconnectMax: 200 * time.Millisecond}
	cfg.Node = "a"
	a := newBus(t, ra.wire(cfg))
	cfg.Node = "b"
	b := newBus(t, rb.wire(cfg))
	ready(t, a, b)

	a.Publish(rank.Change{Board: "r", Seq: 1, Member: "m", New: 1, Rank: 1})
	testenv.Until(t, 10*time.Second, "first change", func() bool { return rb.count() == 1 })
	fromA, fromB := ra.resyncCount(), rb.resyncCount()

	srv.Kill()
	testenv.Until(t, 10*time.Second, "a to notice", func() bool { return a.Ping(context.Background()) != nil })
	srv.Start()

	testenv.Until(t, 20*time.Second, "resync at a", func() bool { return ra.resyncedSince(fromA, "") })
	testenv.Until(t, 20*time.Second, "resync at b", func() bool { return rb.resyncedSince(fromB, "") })
	ready(t, a, b) // b's subscription is back on the server
	if a.Stats().Reconnects < 1 || b.Stats().Reconnects < 1 {
		t.Errorf("reconnects a=%d b=%d, want ≥ 1", a.Stats().Reconnects, b.Stats().Reconnects)
	}

	a.Publish(rank.Change{Board: "r", Seq: 2, Member: "m", New: 2, Rank: 1})
	testenv.Until(t, 10*time.Second, "change after restart", func() bool {
		got := rb.changes()
		return len(got) > 0 && got[len(got)-1].Seq == 2
	})
}

// A server that stops reading: Publish keeps returning, the bounded queue
// drops (and counts) the oldest, and once the server is back the other
// node is told to re-read the board.
func TestPublishNeverBlocksWhenServerHangs(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	srv := testenv.StartNATS(t)
	var rb recorder
	a := newBus(t, Config{URL: srv.URL(), Node: "a", MaxPending: 100, WriteTimeout: 300 * time.Millisecond,
		ReconnectBuffer: -1, ReconnectMax: 200 * time.Millisecond})
	b := newBus(t, rb.wire(Config{URL: srv.URL(), Node: "b"}))
	ready(t, a, b)
	from := rb.resyncCount()

	srv.Pause()
	name := strings.Repeat("n", 32)
	member := strings.Repeat("m", 64)
	published := 0
	// Rounds of MaxPending calls, each started on an empty queue, cannot
	// overflow while the publisher keeps up: drops come only from the hung
	// server (a publisher stuck in a write, then a failed connection). The
	// TCP buffers fill within a few megabytes.
	testenv.Until(t, 60*time.Second, "drops counted", func() bool {
		for range 100 {
			published++
			a.Publish(rank.Change{Board: "hot", Seq: int64(published), Member: member, New: int64(published), Rank: 1, Name: name})
		}
		if q := a.queued(); q > 100 {
			t.Fatalf("queue holds %d changes, bound is 100", q)
		}
		deadline := time.Now().Add(5 * time.Second)
		for a.queued() > 0 && a.Stats().Dropped == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		return a.Stats().Dropped > 0
	})
	t.Logf("published %d, stats %+v", published, a.Stats())

	srv.Resume()
	testenv.Until(t, 30*time.Second, "resync of hot at b", func() bool { return rb.resyncedSince(from, "hot") })
}

// With the server gone and no reconnect buffer, publishes are dropped and
// counted, never blocking; Close still returns promptly.
func TestPublishWhileServerDown(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	srv := testenv.StartNATS(t)
	a := newBus(t, Config{URL: srv.URL(), Node: "a", ReconnectBuffer: -1, MaxPending: 50})
	ready(t, a)
	srv.Kill()
	testenv.Until(t, 10*time.Second, "a to notice", func() bool { return a.Ping(context.Background()) != nil })
	for i := range 10000 {
		a.Publish(rank.Change{Board: "down", Seq: int64(i + 1), Member: "m", New: 1, Rank: 1})
	}
	testenv.Until(t, 10*time.Second, "all counted as dropped", func() bool { return a.Stats().Dropped == 10000 })
	if err := a.Ping(context.Background()); err == nil {
		t.Error("Ping succeeded with the server down")
	}
	if err := a.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// With an empty URL the bus runs its own server, with no TCP listener, and
// works end to end.
func TestInProcess(t *testing.T) {
	t.Parallel()
	var ra recorder
	a := newBus(t, ra.wire(Config{Node: "solo"}))
	if a.ns == nil {
		t.Fatal("no in-process server")
	}
	if addr := a.ns.Addr(); addr != nil {
		t.Fatalf("in-process server listens on %v", addr)
	}
	if err := a.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A second in-memory client plays the other node.
	peer, err := nats.Connect("", nats.InProcessServer(a.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	got := make(chan *nats.Msg, 16)
	if _, err := peer.ChanSubscribe("lb.changes.>", got); err != nil {
		t.Fatal(err)
	}
	if err := peer.Flush(); err != nil {
		t.Fatal(err)
	}

	a.Publish(rank.Change{Board: "a.b", Seq: 1, Member: "m", New: 5, Rank: 1})
	select {
	case m := <-got:
		batch, err := decodeChanges(m.Data)
		if m.Subject != "lb.changes.a%2Eb" || err != nil || len(batch) != 1 || batch[0].New != 5 || batch[0].Board != "a.b" {
			t.Errorf("peer got %s %+v, %v", m.Subject, batch, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("peer never got the change")
	}

	if err := peer.Publish("lb.changes.a%2Eb", []byte(`[{"board":"a.b","seq":2,"member":"p","old":null,"new":9,"rank":1,"prev_rank":0}]`)); err != nil {
		t.Fatal(err)
	}
	if err := peer.Publish("lb.resync", []byte("a.b")); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 10*time.Second, "peer's change at a", func() bool { return ra.count() == 1 && ra.resyncedSince(0, "a.b") })
	if c := ra.changes()[0]; c.Member != "p" || c.New != 9 || c.Old != nil {
		t.Errorf("a got %+v", c)
	}

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if a.ns.Running() {
		t.Error("in-process server still running after Close")
	}
}

// A malformed payload is not delivered; the board is resynced instead.
func TestBadPayloadResyncs(t *testing.T) {
	t.Parallel()
	var ra recorder
	a := newBus(t, ra.wire(Config{}))
	ready(t, a)
	peer, err := nats.Connect("", nats.InProcessServer(a.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if err := peer.Publish("lb.changes.q", []byte(`{not json`)); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 10*time.Second, "resync of q", func() bool { return ra.resyncedSince(0, "q") })
	if ra.count() != 0 {
		t.Errorf("delivered %v from a bad payload", ra.changes())
	}
}

func TestCloseTwice(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	for _, url := range []string{"", srv.URL()} {
		a, err := New(context.Background(), Config{URL: url, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); err != nil {
			t.Errorf("first Close(%q): %v", url, err)
		}
		if err := a.Close(); err != nil {
			t.Errorf("second Close(%q): %v", url, err)
		}
		a.Publish(rank.Change{Board: "late", Seq: 1, Member: "m"})
		a.PublishBoard(BoardEvent{Board: "late"})
		if got := a.Stats().Dropped; got != 2 {
			t.Errorf("Publish after Close: dropped %d, want 2", got)
		}
		if err := a.Ping(context.Background()); err == nil {
			t.Error("Ping succeeded after Close")
		}
	}
}

// Close publishes what was queued before it returned.
func TestCloseFlushesQueue(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	var rb recorder
	a := newBus(t, Config{URL: srv.URL(), Node: "a", FlushInterval: time.Hour})
	b := newBus(t, rb.wire(Config{URL: srv.URL(), Node: "b"}))
	ready(t, a, b)
	for i := range 500 {
		a.Publish(rank.Change{Board: "q", Seq: int64(i + 1), Member: "m", New: 1, Rank: 1})
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 10*time.Second, "queued changes at b", func() bool { return rb.count() == 500 })
}

// With the server down at start, New succeeds, Ping fails, and once the
// server appears the bus connects and resyncs.
func TestStartsBeforeServer(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	srv := testenv.StartNATS(t)
	srv.Kill()
	var ra recorder
	a := newBus(t, ra.wire(Config{URL: srv.URL(), Node: "early", ReconnectMax: 200 * time.Millisecond}))
	if err := a.Ping(context.Background()); err == nil {
		t.Fatal("Ping succeeded with no server")
	}
	srv.Start()
	ready(t, a)
	testenv.Until(t, 10*time.Second, "resync after first connect", func() bool { return ra.resyncedSince(0, "") })
}
