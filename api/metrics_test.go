package api_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestPublicMetricsFoldBoards is issue 33 B9: the public /metrics names no
// board to a client beyond this machine and its private network: series
// labelled with a board are summed under board="all" (counters,
// histograms), the others are left alone, and nothing gathered is changed
// (the next scrape, and a local one, still see every board).
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
	e := newEnv(t, memEngine().new(t), func(c *setup) {
		c.Registry = reg
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	remote := func() string {
		req := newRequest(t, e, "GET", "/metrics", "")
		req.Header.Set("X-Forwarded-For", "198.51.100.7")
		r := e.send(req)
		r.wantStatus(t, 200)
		return string(r.body)
	}
	remote()
	text := remote() // the second scrape: the first changed nothing
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
	local := e.do("GET", "/metrics", "", "")
	if !strings.Contains(string(local.body), `t_events_total{board="private-finals",outcome="applied"} 2`) {
		t.Errorf("a scrape from this machine lost the per-board series:\n%s", local.body)
	}
}
