package integrity

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the hook calls' (docs/integrity.md, "Metrics").
type metrics struct {
	verdicts *prometheus.CounterVec // by outcome
	latency  prometheus.Histogram
	inFlight prometheus.Gauge
	held     *prometheus.CounterVec // by reason kind
	heldLost prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wsgateway_validate_calls_total",
			Help: "Validation hook calls by outcome: accept, reject, flag, timeout, error (any other answer), busy (not made: too many in flight).",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wsgateway_validate_seconds",
			Help:    "Time from sending a validation hook call to its answer (or its timeout).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wsgateway_validate_in_flight",
			Help: "Validation hook calls in flight on this node.",
		}),
		held: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wsgateway_held_total",
			Help: "Members held by events applied on this node, by why: hook (its flag), gain, jump.",
		}, []string{"reason"}),
		heldLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wsgateway_held_webhooks_dropped_total",
			Help: "member.held webhook events not appended because the node's queue of them was full or the store failed.",
		}),
	}
	// Every series exists from the start, so a rate over it is never absent.
	for _, o := range []string{"accept", "reject", "flag", "timeout", "error", "busy"} {
		m.verdicts.WithLabelValues(o)
	}
	for _, r := range []string{"hook", "gain", "jump"} {
		m.held.WithLabelValues(r)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.verdicts, m.latency, m.inFlight, m.held, m.heldLost} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("integrity: register metrics: %w", err)
		}
	}
	return m, nil
}
