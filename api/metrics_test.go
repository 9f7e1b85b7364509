package api_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestPublicMetricsFoldBoards: the /metrics of the main port names no
// board to a client other than this machine or a trusted proxy
// (--trusted-proxies), private addresses included: series
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
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.9.0.0/16")}
	})
	from := func(client string) string {
		req := newRequest(t, e, "GET", "/metrics", "")
		req.Header.Set("X-Forwarded-For", client)
		r := e.send(req)
		r.wantStatus(t, 200)
		return string(r.body)
	}
	remote := func() string { return from("198.51.100.7") }
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
	// A private address is not trusted for being private (any pod behind
	// an Ingress has one); a trusted proxy's own address is.
	for client, full := range map[string]bool{"10.1.2.3": false, "192.168.7.7": false, "fd00::7": false, "10.9.0.5": true} {
		if got := strings.Contains(from(client), "private-finals"); got != full {
			t.Errorf("a scrape from %s: per-board series %v, want %v", client, got, full)
		}
	}
}

// gatherCounter is a collector that counts the registry's gathers.
type gatherCounter struct{ n atomic.Int64 }

func (g *gatherCounter) Describe(chan<- *prometheus.Desc) {}
func (g *gatherCounter) Collect(chan<- prometheus.Metric) { g.n.Add(1) }

// TestPublicMetricsCached: a flood of public /metrics requests gathers the
// registry at most once a second, and each answer is the exposition
// (plain or gzip, as asked); the trusted /metrics is rendered anew each
// time.
func TestPublicMetricsCached(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	gathers := &gatherCounter{}
	reg.MustRegister(gathers)
	e := newEnv(t, memEngine().new(t), func(c *setup) {
		c.Registry = reg
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	began := time.Now()
	const n = 50
	for i := range n {
		req := newRequest(t, e, "GET", "/metrics", "")
		req.Header.Set("X-Forwarded-For", "198.51.100.7")
		if i%2 == 1 {
			req.Header.Set("Accept-Encoding", "gzip") // the client then leaves the body compressed
		}
		r := e.send(req)
		r.wantStatus(t, 200)
		body := r.body
		if i%2 == 1 {
			if r.header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("asked for gzip, got Content-Encoding %q", r.header.Get("Content-Encoding"))
			}
			zr, err := gzip.NewReader(bytes.NewReader(r.body))
			if err != nil {
				t.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if !strings.Contains(string(body), "# TYPE wsgateway_api_body_reads gauge") || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain; version=0.0.4") {
			t.Fatalf("answer %d: %s %q", i, r.header.Get("Content-Type"), body)
		}
	}
	if most := int64(time.Since(began)/time.Second) + 1; gathers.n.Load() > most {
		t.Fatalf("%d public scrapes gathered %d times in %s, want at most %d", n, gathers.n.Load(), time.Since(began), most)
	}
	before := gathers.n.Load()
	for range 3 {
		e.do("GET", "/metrics", "", "").wantStatus(t, 200) // from this machine
	}
	if got := gathers.n.Load() - before; got != 3 {
		t.Fatalf("3 local scrapes gathered %d times, want 3 (fresh figures for the operator)", got)
	}
}
