package api

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
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

// publicBoard is the one board label value of the public /metrics.
const publicBoard = "all"

// publicRender is how often the public /metrics is rendered at most.
const publicRender = time.Second

// renderCache serves a gatherer's text exposition rendered at most once per
// every: anyone may ask for the public /metrics, and a gather, a fold and
// an encoding per request would let a flood of them spend the node's CPU;
// a cached answer costs a write. A scraper every few seconds sees figures
// at most that old.
type renderCache struct {
	g     prometheus.Gatherer
	every time.Duration
	log   func(msg string, args ...any)
	// mu guards the rendering below; it is held while rendering, so one
	// request renders and the others arriving meanwhile take its bytes.
	mu    sync.Mutex
	at    time.Time // when plain and gz were rendered; zero: never
	plain []byte
	gz    []byte
}

func (c *renderCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	plain, gz := c.bytes()
	h := w.Header()
	h.Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	h.Set("Cache-Control", "no-store")
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		h.Set("Content-Encoding", "gzip")
		_, _ = w.Write(gz)
		return
	}
	_, _ = w.Write(plain)
}

// bytes returns the exposition, rendered again when older than every.
func (c *renderCache) bytes() (plain, gz []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < c.every {
		return c.plain, c.gz
	}
	mfs, err := c.g.Gather()
	if err != nil {
		// What was gathered is still served, as promhttp's
		// ContinueOnError does; the error goes to the log.
		c.log("api: gather metrics", "err", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			c.log("api: encode metrics", "family", mf.GetName(), "err", err)
		}
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	_, _ = zw.Write(buf.Bytes()) // into memory
	_ = zw.Close()
	c.at, c.plain, c.gz = time.Now(), buf.Bytes(), zb.Bytes()
	return c.plain, c.gz
}

// foldBoards is the gatherer of the public /metrics (the one on --addr)
// for clients other than this machine and the trusted proxies (Metrics):
// every series labelled with a board is summed under board="all", so
// board ids, private ones included, are not listed to them.
// --metrics-addr serves every series per board.
type foldBoards struct{ g prometheus.Gatherer }

func (f foldBoards) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := f.g.Gather()
	for _, mf := range mfs {
		foldFamily(mf)
	}
	return mfs, err
}

// foldFamily sums mf's series that differ only in their board label. The
// collectors hand out their own label pairs, so the summed series are new
// objects: nothing gathered is changed in place.
func foldFamily(mf *dto.MetricFamily) {
	var kept []*dto.Metric
	byKey := map[string]*dto.Metric{}
	for _, m := range mf.Metric {
		i := slices.IndexFunc(m.Label, func(lp *dto.LabelPair) bool { return lp.GetName() == "board" })
		if i < 0 {
			kept = append(kept, m)
			continue
		}
		var key strings.Builder
		for j, lp := range m.Label {
			if j != i {
				key.WriteString(lp.GetName() + "\x00" + lp.GetValue() + "\x00")
			}
		}
		if into, ok := byKey[key.String()]; ok {
			addMetric(into, m)
			continue
		}
		sum := &dto.Metric{Label: slices.Clone(m.Label)}
		sum.Label[i] = &dto.LabelPair{Name: ptr("board"), Value: ptr(publicBoard)}
		switch {
		case m.Counter != nil:
			sum.Counter = &dto.Counter{Value: ptr(0.0)}
		case m.Gauge != nil:
			sum.Gauge = &dto.Gauge{Value: ptr(0.0)}
		case m.Untyped != nil:
			sum.Untyped = &dto.Untyped{Value: ptr(0.0)}
		case m.Histogram != nil:
			sum.Histogram = &dto.Histogram{SampleCount: ptr(uint64(0)), SampleSum: ptr(0.0)}
			for _, b := range m.Histogram.Bucket {
				sum.Histogram.Bucket = append(sum.Histogram.Bucket, &dto.Bucket{UpperBound: ptr(b.GetUpperBound()), CumulativeCount: ptr(uint64(0))})
			}
		case m.Summary != nil:
			sum.Summary = &dto.Summary{SampleCount: ptr(uint64(0)), SampleSum: ptr(0.0)}
		}
		addMetric(sum, m)
		byKey[key.String()] = sum
		kept = append(kept, sum)
	}
	mf.Metric = kept
}

// addMetric adds m's values into into, a sum of foldFamily's own (same
// family, so same type and bucket bounds); a summary's quantiles cannot be
// summed and are left out.
func addMetric(into, m *dto.Metric) {
	switch {
	case into.Counter != nil && m.Counter != nil:
		into.Counter.Value = ptr(into.Counter.GetValue() + m.Counter.GetValue())
	case into.Gauge != nil && m.Gauge != nil:
		into.Gauge.Value = ptr(into.Gauge.GetValue() + m.Gauge.GetValue())
	case into.Untyped != nil && m.Untyped != nil:
		into.Untyped.Value = ptr(into.Untyped.GetValue() + m.Untyped.GetValue())
	case into.Histogram != nil && m.Histogram != nil:
		h, o := into.Histogram, m.Histogram
		h.SampleCount = ptr(h.GetSampleCount() + o.GetSampleCount())
		h.SampleSum = ptr(h.GetSampleSum() + o.GetSampleSum())
		for i, b := range h.Bucket {
			if i < len(o.Bucket) {
				b.CumulativeCount = ptr(b.GetCumulativeCount() + o.Bucket[i].GetCumulativeCount())
			}
		}
	case into.Summary != nil && m.Summary != nil:
		s, o := into.Summary, m.Summary
		s.SampleCount = ptr(s.GetSampleCount() + o.GetSampleCount())
		s.SampleSum = ptr(s.GetSampleSum() + o.GetSampleSum())
	}
}

func ptr[T any](v T) *T { return &v }
