package api

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the API's own collectors. Route labels are route patterns
// ("GET /api/v1/boards/:board/top"), never raw paths, so their number is fixed.
type metrics struct {
	requests *prometheus.CounterVec   // by route and status
	latency  *prometheus.HistogramVec // by route
	applied  prometheus.Counter       // non-duplicate events applied through REST
	errors   *prometheus.CounterVec   // by contract code
}

func newMetrics(reg *prometheus.Registry) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wsgateway_api_requests_total",
			Help: "REST, health and readiness requests by route pattern and HTTP status.",
		}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wsgateway_api_request_duration_seconds",
			Help:    "REST request latency by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route"}),
		applied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wsgateway_api_applied_events_total",
			Help: "Score events applied through POST /api/v1/boards/{board}/scores (duplicates excluded).",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wsgateway_api_errors_total",
			Help: "REST errors by contract code, including failed elements of a scores array.",
		}, []string{"code"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.applied, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("api: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) done(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

// routeMetrics are one route's collectors, looked up once when the route is
// added rather than by label on every request.
type routeMetrics struct {
	label   string
	ok      prometheus.Counter  // requests answered 200
	latency prometheus.Observer // every request's duration
}

func (m *metrics) route(label string) *routeMetrics {
	return &routeMetrics{label: label, ok: m.requests.WithLabelValues(label, "200"), latency: m.latency.WithLabelValues(label)}
}
