package node

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/wsgateway/wsgateway/rank"
)

// series reads the registry's samples of one family as "label,label=value".
func series(t *testing.T, reg *prometheus.Registry, family string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := ""
			for _, lp := range m.GetLabel() {
				key += lp.GetName() + "=" + lp.GetValue() + ","
			}
			out[key] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// TestBoardSeries: a board's series are resolved once and reused, each made
// on its first use (no zero series for an outcome a board never had), and
// past maxBoardLabels boards, concurrent first sightings included, every
// further board shares "other".
func TestBoardSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	a := m.labels.of("a")
	if m.labels.of("a") != a {
		t.Fatal("a board's series are not reused")
	}
	a.outcome("applied")
	a.outcome("applied")
	a.outcome("bad_request")
	a.observeAck(time.Millisecond)
	a.observeAck(time.Millisecond)
	a.observeAck(time.Millisecond)
	ev := series(t, reg, "wsgateway_board_events_total")
	want := map[string]float64{"board=a,outcome=applied,": 2, "board=a,outcome=bad_request,": 1}
	if fmt.Sprint(ev) != fmt.Sprint(want) {
		t.Fatalf("events: %v, want %v (no duplicate series before a duplicate)", ev, want)
	}
	if ack := series(t, reg, "wsgateway_board_ack_seconds"); ack["board=a,"] != 3 {
		t.Fatalf("ack samples: %v, want 3 for a", ack)
	}

	// 200 more boards, each first seen by 4 goroutines at once.
	var wg sync.WaitGroup
	got := make([][]*boardSeries, 4)
	for g := range got {
		got[g] = make([]*boardSeries, 200)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				got[g][i] = m.labels.of(fmt.Sprintf("b%d", i))
			}
		}()
	}
	wg.Wait()
	own := map[string]bool{"a": true}
	for i := range 200 {
		b := got[0][i]
		for g := 1; g < 4; g++ {
			if got[g][i] != b {
				t.Fatalf("board b%d: two goroutines got different series", i)
			}
		}
		if b.label != otherBoards {
			own[b.label] = true
		}
		b.outcome("applied")
	}
	if len(own) != maxBoardLabels {
		t.Fatalf("%d boards with their own label, want %d", len(own), maxBoardLabels)
	}
	ev = series(t, reg, "wsgateway_board_events_total")
	if n := ev["board="+otherBoards+",outcome=applied,"]; n != float64(200-(maxBoardLabels-1)) {
		t.Fatalf("other: %v applied, want %d", n, 200-(maxBoardLabels-1))
	}
}

// lateStore completes every Apply after delay and holds one cached board.
type lateStore struct {
	rank.Store // nil: only Apply and CachedBoard are called
	delay      time.Duration
	cached     rank.Board
}

func (s lateStore) Apply(_ context.Context, e rank.Event, done rank.Done) {
	time.AfterFunc(s.delay, func() { done(rank.Result{Board: e.Board}, nil) })
}

func (s lateStore) CachedBoard(id string) (*rank.Board, bool) {
	if id == s.cached.ID {
		return &s.cached, true
	}
	return nil, false
}

// metered measures an ack from the submit to the outcome.
func TestMeteredAck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := newMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour) // the submit is not at newMetrics
		s := metered{lateStore{delay: 250 * time.Millisecond}, m}
		done := make(chan struct{})
		s.Apply(t.Context(), rank.Event{Board: "a"}, func(rank.Result, error) { close(done) })
		<-done
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, mf := range mfs {
			if mf.GetName() == "wsgateway_board_ack_seconds" {
				sum = mf.GetMetric()[0].GetHistogram().GetSampleSum()
			}
		}
		if sum != 0.25 {
			t.Fatalf("ack seconds %v, want 0.25", sum)
		}
	})
}

// metered forwards the engine's board cache (rank.BoardCache).
func TestMeteredBoardCache(t *testing.T) {
	s := metered{lateStore{cached: rank.Board{ID: "c"}}, nil}
	if b, ok := s.CachedBoard("c"); !ok || b.ID != "c" {
		t.Fatalf("CachedBoard(c) = %v, %v through metered", b, ok)
	}
	if _, ok := s.CachedBoard("d"); ok {
		t.Fatal("CachedBoard(d) answered")
	}
}
