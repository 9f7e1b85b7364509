package node

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wsgateway/wsgateway/api"
	"github.com/wsgateway/wsgateway/bus"
)

// opsCollector exports what an operator alerts on and no other package
// counts in Prometheus terms: the bus's NATS counters and the readiness
// checks' outcome (so "store unavailable" is a series, not a log line). It
// reads both at scrape time, so nothing is kept twice; the checks are
// /readyz's last round (api.Failing), not pinged again per scrape.
type opsCollector struct {
	stats   func() bus.Stats
	checks  []api.Check
	failing func() []string

	reconnects, resyncs, dropped, published, received, checkOK *prometheus.Desc
}

func newOpsCollector(stats func() bus.Stats, checks []api.Check, failing func() []string) *opsCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &opsCollector{
		stats:      stats,
		checks:     checks,
		failing:    failing,
		reconnects: d("wsgateway_nats_reconnects_total", "Reconnects to NATS."),
		resyncs:    d("wsgateway_nats_resyncs_total", "Times live frames were re-read from the store because change events may have been missed (reconnects, drops)."),
		dropped:    d("wsgateway_nats_dropped_total", "Change and board events not published to NATS (queue overflow, publish error)."),
		published:  d("wsgateway_nats_published_total", "Changes handed to NATS."),
		received:   d("wsgateway_nats_received_total", "Changes received from other nodes."),
		checkOK:    d("wsgateway_check_ok", "1 when the readiness check answers (the same checks as /readyz), else 0.", "check"),
	}
}

func (c *opsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.reconnects, c.resyncs, c.dropped, c.published, c.received, c.checkOK} {
		ch <- d
	}
}

func (c *opsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, m := range []struct {
		d *prometheus.Desc
		v int64
	}{{c.reconnects, s.Reconnects}, {c.resyncs, s.Resyncs}, {c.dropped, s.Dropped}, {c.published, s.Published}, {c.received, s.Received}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, float64(m.v))
	}
	failing := c.failing()
	for _, chk := range c.checks {
		ok := 1.0
		if slices.Contains(failing, chk.Name) {
			ok = 0
		}
		ch <- prometheus.MustNewConstMetric(c.checkOK, prometheus.GaugeValue, ok, chk.Name)
	}
}
