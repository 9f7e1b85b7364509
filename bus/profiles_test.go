package bus

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// profileRecorder collects the member ids a Bus delivers.
type profileRecorder struct {
	mu      sync.Mutex
	members []string
	events  int
}

func (r *profileRecorder) wire(cfg Config) Config {
	cfg.OnProfiles = func(e ProfileEvent) {
		r.mu.Lock()
		r.members = append(r.members, e.Members...)
		r.events++
		r.mu.Unlock()
	}
	return cfg
}

func (r *profileRecorder) got() ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.members), r.events
}

// TestProfileEvents: member ids published on one node reach the other in
// order, batched, and never echo back.
func TestProfileEvents(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	var pa, pb profileRecorder
	a := newBus(t, pa.wire(Config{URL: srv.URL(), Node: "a"}))
	b := newBus(t, pb.wire(Config{URL: srv.URL(), Node: "b"}))
	ready(t, a, b)
	var want []string
	for i := range 1500 {
		want = append(want, fmt.Sprintf("m%d", i))
	}
	a.PublishProfiles(want[:1])
	a.PublishProfiles(want[1:])
	testenv.Until(t, 10*time.Second, "1500 ids at b", func() bool { m, _ := pb.got(); return len(m) >= len(want) })
	got, events := pb.got()
	if !slices.Equal(got, want) {
		t.Fatalf("b got %d ids (first %v), want %d in order", len(got), got[:min(3, len(got))], len(want))
	}
	if events > 3 { // the first id alone, then at most two of 1024
		t.Errorf("%d messages for 1500 ids", events)
	}
	if m, _ := pa.got(); len(m) != 0 {
		t.Errorf("a heard its own profile events: %d ids", len(m))
	}
}

// TestBadProfileEventResyncs: an unreadable profile event means changes
// were missed: everything is resynced (which drops every cached profile).
func TestBadProfileEventResyncs(t *testing.T) {
	t.Parallel()
	var ra recorder
	var pa profileRecorder
	a := newBus(t, pa.wire(ra.wire(Config{})))
	ready(t, a)
	peer, err := nats.Connect("", nats.InProcessServer(a.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	for _, payload := range []string{`{not json`, `{"members":[]}`} {
		from := ra.resyncCount()
		if err := peer.Publish("lb.profiles", []byte(payload)); err != nil {
			t.Fatal(err)
		}
		testenv.Until(t, 10*time.Second, "resync of everything", func() bool { return ra.resyncedSince(from, "") && ra.resyncCount() > from })
	}
	if m, n := pa.got(); n != 0 {
		t.Errorf("delivered %v from bad payloads", m)
	}
}
