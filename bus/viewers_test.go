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
