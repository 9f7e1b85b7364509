package api_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wsgateway/wsgateway/api"
)

// TestPublicMetricsFoldBoards is issue 33 B9: the public /metrics names no
// board: series labelled with a board are summed under board="all"
// (counters, histograms), the others are left alone.
func TestPublicMetricsFoldBoards(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	events := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t_events_total", Help: "h"}, []string{"board", "outcome"})
	ack := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "t_ack_seconds", Help: "h", Buckets: []float64{1}}, []string{"board"})
	reg.MustRegister(events, ack)
	events.WithLabelValues("private-finals", "applied").Add(2)
	events.WithLabelValues("public-b", "applied").Add(3)
	events.WithLabelValues("public-b", "refused").Add(1)
	ack.WithLabelValues("private-finals").Observe(0.5)
	ack.WithLabelValues("public-b").Observe(2)
	e := newEnv(t, memEngine().new(t), func(c *api.Config) { c.Registry = reg })
	r := e.do("GET", "/metrics", "", "")
	r.wantStatus(t, 200)
	text := string(r.body)
	for _, want := range []string{
		`t_events_total{board="all",outcome="applied"} 5`,
		`t_events_total{board="all",outcome="refused"} 1`,
		`t_ack_seconds_bucket{board="all",le="1"} 1`,
		`t_ack_seconds_count{board="all"} 2`,
		`wsgateway_api_body_reads 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(text, "private-finals") || strings.Contains(text, "public-b") {
		t.Errorf("a board id is on the public /metrics:\n%s", text)
	}
}
