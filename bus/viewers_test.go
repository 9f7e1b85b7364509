package bus

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestViewersReports: a node's counts reach the other nodes, split into
// messages that each stand alone when there are many boards, and never
// come back to the sender.
func TestViewersReports(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	a := newBus(t, Config{URL: srv.URL(), Node: "a", PerBoard: true})
	b := newBus(t, Config{URL: srv.URL(), Node: "b"}) // the wildcard subscription too
	var mu sync.Mutex
	heard := map[string]map[string]int{} // receiver → board → count
	msgs := map[string]int{}
	for name, bus := range map[string]*Bus{"a": a, "b": b} {
		stop, err := bus.SubscribeViewers(func(r ViewersReport) {
			mu.Lock()
			defer mu.Unlock()
			if r.Node == name {
				t.Errorf("%s heard its own report", name)
			}
			if heard[name] == nil {
				heard[name] = map[string]int{}
			}
			maps.Copy(heard[name], r.Boards)
			msgs[name]++
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stop() })
	}
	ready(t, a, b)

	many := map[string]int{"cup.2026": 2, "gone": 0}
	for i := range maxViewersBatch + 10 {
		many[fmt.Sprintf("b%05d", i)] = i%7 + 1
	}
	if err := a.PublishViewers(many); err != nil {
		t.Fatal(err)
	}
	if err := b.PublishViewers(map[string]int{"solo": 1}); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 10*time.Second, "both reports", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return maps.Equal(heard["b"], many) && maps.Equal(heard["a"], map[string]int{"solo": 1})
	})
	mu.Lock()
	defer mu.Unlock()
	if msgs["b"] != 2 {
		t.Errorf("%d boards came in %d messages, want 2", len(many), msgs["b"])
	}
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock           { return &fakeClock{t: time.Unix(1_800_000_000, 0)} }
func report(node string, boards map[string]int) ViewersReport {
	return ViewersReport{Node: node, Boards: boards}
}

// TestViewersAgeOut: another node's report counts for TTL and not a
// millisecond more; this node's own counts are the last tick's; a 0 in a
// report forgets that node's entry at once.
func TestViewersAgeOut(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	v, err := NewViewers(ViewersConfig{Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	want := func(what, board string, n int) {
		t.Helper()
		if got := v.Viewers(board); got != n {
			t.Fatalf("%s: %s has %d viewers, want %d", what, board, got, n)
		}
	}
	v.tick(map[string]int{"cup": 2})
	v.heard(report("b", map[string]int{"cup": 1, "solo": 4}))
	want("own and b's", "cup", 3)
	want("b's alone", "solo", 4)

	clk.add(3 * time.Second)
	v.heard(report("c", map[string]int{"cup": 5}))
	clk.add(DefaultViewersTTL - 3*time.Second)
	want("b's report exactly TTL old", "cup", 8)
	clk.add(time.Millisecond)
	want("b's report past TTL", "cup", 7)
	want("b's only board past TTL", "solo", 0)
	if got := v.All(); !maps.Equal(got, map[string]int{"cup": 7}) {
		t.Errorf("all %v, want cup 7", got)
	}

	v.heard(report("c", map[string]int{"cup": 0}))
	want("c's board emptied", "cup", 2)
	v.tick(map[string]int{})
	want("own counts gone", "cup", 0)
	if len(v.remote) != 0 {
		t.Errorf("stale entries kept after a tick: %v", v.remote)
	}
}

// TestViewersReport: a report names the boards with viewers, and a board
// that lost its last one with a 0 once, then no more.
func TestViewersReport(t *testing.T) {
	t.Parallel()
	v, err := NewViewers(ViewersConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range []struct {
		local, report map[string]int
	}{
		{map[string]int{}, nil},
		{map[string]int{"a": 2, "b": 1}, map[string]int{"a": 2, "b": 1}},
		{map[string]int{"a": 3}, map[string]int{"a": 3, "b": 0}},
		{map[string]int{"a": 3}, map[string]int{"a": 3}},
		{map[string]int{}, map[string]int{"a": 0}},
		{map[string]int{}, nil},
	} {
		got := v.tick(step.local)
		if !maps.Equal(got, step.report) || (got == nil) != (step.report == nil) {
			t.Fatalf("tick %d with %v: report %v, want %v", i, step.local, got, step.report)
		}
	}
}

func TestViewersConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []ViewersConfig{
		{Every: -time.Second},
		{TTL: -time.Second},
		{Every: 5 * time.Second},
		{Every: time.Second, TTL: time.Second},
	} {
		if _, err := NewViewers(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}
