package loadgen

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Report is the outcome of a run (the JSON of --json).
type Report struct {
	Started  time.Time `json:"started"`
	URL      string    `json:"url"`
	Board    string    `json:"board"`
	Members  int       `json:"members"`
	Rate     int       `json:"rate"`
	Inflight int       `json:"inflight"`
	// ChurnSeconds is the mean connection lifetime (Config.Churn); 0: none.
	ChurnSeconds float64 `json:"churn_seconds"`
	// SendSeconds is how long players started events; ElapsedSeconds adds
	// the drain of the events in flight.
	SendSeconds    float64 `json:"send_seconds"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	ConnectSeconds float64 `json:"connect_seconds"`

	Events      Events           `json:"events"`
	AckLatency  Quantiles        `json:"ack_latency"`
	Errors      map[string]int64 `json:"errors"`
	Frames      map[string]Rate  `json:"frames"`
	Freshness   Quantiles        `json:"frame_freshness"` // receive time − ack time of the frame's seq
	FrameLag    Quantiles        `json:"frame_lag"`       // receive time − the frame's ts
	Connections Connections      `json:"connections"`
	// DropReasons counts Connections.Dropped by why each connection ended:
	// the close code and reason the gateway sent, or the socket error.
	DropReasons map[string]int64 `json:"drop_reasons,omitempty"`
	Series      []Second         `json:"series"`
	LatencyCDF  [][2]float64     `json:"ack_latency_cdf"` // (ms, fraction at or below)
}

// Events counts score events. Sent = Acked + Failed once a run is over.
type Events struct {
	Sent       int64   `json:"sent"`
	Acked      int64   `json:"acked"`
	Duplicates int64   `json:"duplicates"`
	Failed     int64   `json:"failed"`
	PerSecond  float64 `json:"per_second"` // acked / send seconds
	// DeltaSum is the sum of the deltas of the events acknowledged
	// (duplicates included: each call has its own id, so a duplicate ack
	// answers a re-send of an event applied once): on a fresh board, the sum
	// of every member's score (the ledger).
	DeltaSum int64 `json:"delta_sum"`
}

// Rate is a count and its rate over the run.
type Rate struct {
	Count     int64   `json:"count"`
	PerSecond float64 `json:"per_second"`
}

// Connections counts connections by kind.
type Connections struct {
	Players    int   `json:"players"`
	Receivers  int   `json:"receivers"` // spectators + watchers
	DialFailed int64 `json:"dial_failed"`
	Dropped    int64 `json:"dropped"` // receivers whose connection ended during the run
	// Churned counts connections closed at the end of their lifetime
	// (Config.Churn); Redialed those of them dialled again (a failed attempt
	// counts in DialFailed; the run may end before a redial succeeds).
	Churned  int64 `json:"churned"`
	Redialed int64 `json:"redialed"`
	// Reconnects counts player clients' own reconnects after a connection
	// was lost (not churn): each may leave events re-sent.
	Reconnects int64 `json:"reconnects"`
}

// Second is one point of the per-second series.
type Second struct {
	T      float64 `json:"t"`
	Events float64 `json:"events_per_second"`
	P50    float64 `json:"ack_p50_ms"`
	P99    float64 `json:"ack_p99_ms"`
	Frames float64 `json:"frames_per_second"`
	Errors int64   `json:"errors"`
}

func (g *Generator) report(start time.Time, send, elapsed, connect time.Duration, players, receivers int) Report {
	r := Report{
		Started: start, URL: g.cfg.URL, Board: g.cfg.Board, Members: g.cfg.Members, Rate: g.cfg.Rate, Inflight: g.cfg.Inflight,
		ChurnSeconds: g.cfg.Churn.Seconds(),
		SendSeconds:  send.Seconds(), ElapsedSeconds: elapsed.Seconds(), ConnectSeconds: connect.Seconds(),
		Events: Events{
			Sent: g.sent.Load(), Acked: g.acked.Load(), Duplicates: g.dups.Load(), Failed: g.failed.Load(),
			DeltaSum: g.deltaSum.Load(),
		},
		AckLatency: g.ack.Summary(),
		Freshness:  g.fresh.Summary(),
		FrameLag:   g.lag.Summary(),
		Frames:     make(map[string]Rate),
		Connections: Connections{Players: players, Receivers: receivers, DialFailed: g.dialFail.Load(), Dropped: g.dropped.Load(),
			Churned: g.churned.Load(), Redialed: g.redials.Load(), Reconnects: g.reconnects.Load()},
		LatencyCDF: g.ack.CDF(200),
	}
	r.Events.PerSecond = float64(r.Events.Acked) / max(send.Seconds(), 1e-9)
	for k := range nFrameKinds {
		n := g.frames[k].Load()
		r.Frames[frameKindNames[k]] = Rate{Count: n, PerSecond: float64(n) / max(elapsed.Seconds(), 1e-9)}
	}
	g.mu.Lock()
	r.Errors = maps.Clone(g.errs)
	if len(g.drops) > 0 {
		r.DropReasons = maps.Clone(g.drops)
	}
	r.Series = slices.Clone(g.series)
	g.mu.Unlock()
	return r
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Summary is a short human-readable account.
func (r Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "events    sent %d  acked %d  failed %d  duplicates %d  %.0f/s over %.1fs\n",
		r.Events.Sent, r.Events.Acked, r.Events.Failed, r.Events.Duplicates, r.Events.PerSecond, r.SendSeconds)
	q := r.AckLatency
	fmt.Fprintf(&b, "ack (ms)  p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n", q.P50, q.P90, q.P99, q.P999, q.Max)
	for _, k := range slices.Sorted(maps.Keys(r.Frames)) {
		if f := r.Frames[k]; f.Count > 0 {
			fmt.Fprintf(&b, "frames    %-5s %d  %.0f/s\n", k, f.Count, f.PerSecond)
		}
	}
	if f := r.Freshness; f.Count > 0 {
		fmt.Fprintf(&b, "freshness (ms, receive − ack of its seq)  p50 %.1f  p99 %.1f  max %.1f\n", f.P50, f.P99, f.Max)
	}
	if f := r.FrameLag; f.Count > 0 {
		fmt.Fprintf(&b, "frame lag (ms, receive − ts)              p50 %.1f  p99 %.1f  max %.1f\n", f.P50, f.P99, f.Max)
	}
	c := r.Connections
	fmt.Fprintf(&b, "conns     players %d  receivers %d  dial failures %d  dropped %d  reconnects %d  (connected in %.1fs)\n",
		c.Players, c.Receivers, c.DialFailed, c.Dropped, c.Reconnects, r.ConnectSeconds)
	for _, k := range slices.Sorted(maps.Keys(r.DropReasons)) {
		fmt.Fprintf(&b, "dropped   %d: %s\n", r.DropReasons[k], k)
	}
	if r.ChurnSeconds > 0 {
		fmt.Fprintf(&b, "churn     lifetime %s ± 50%%  churned %d  redialed %d  (%.1f/s)\n",
			time.Duration(r.ChurnSeconds*float64(time.Second)), c.Churned, c.Redialed, float64(c.Churned)/max(r.SendSeconds, 1e-9))
	}
	if len(r.Errors) > 0 {
		fmt.Fprintf(&b, "errors   ")
		for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
			fmt.Fprintf(&b, " %s %d", k, r.Errors[k])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// WriteHTML writes a self-contained page: tables and inline SVG charts, no
// script, no external resource.
func (r Report) WriteHTML(w io.Writer) error {
	xs := make([]float64, len(r.Series))
	ev, p99, fr := make([]float64, len(r.Series)), make([]float64, len(r.Series)), make([]float64, len(r.Series))
	for i, s := range r.Series {
		xs[i], ev[i], p99[i], fr[i] = s.T, s.Events, s.P99, s.Frames
	}
	cdfX, cdfY := make([]float64, len(r.LatencyCDF)), make([]float64, len(r.LatencyCDF))
	for i, p := range r.LatencyCDF {
		cdfX[i], cdfY[i] = p[0], p[1]*100
	}
	data := struct {
		R                 Report
		Summary           string
		Events, P99       template.HTML
		Frames, CDF       template.HTML
		FrameKinds        []string
		ErrorCodes        []string
		HasFrames, HasCDF bool
	}{
		R: r, Summary: r.Summary(),
		Events:     lineChart("events acknowledged per second", "s", "events/s", xs, ev),
		P99:        lineChart("ack latency p99 per second", "s", "ms", xs, p99),
		Frames:     lineChart("frames received per second", "s", "frames/s", xs, fr),
		CDF:        lineChart("ack latency distribution", "ms", "% at or below", cdfX, cdfY),
		FrameKinds: slices.Sorted(maps.Keys(r.Frames)),
		ErrorCodes: slices.Sorted(maps.Keys(r.Errors)),
		HasFrames:  r.Frames["top"].Count+r.Frames["view"].Count > 0,
		HasCDF:     len(r.LatencyCDF) > 0,
	}
	return reportPage.Execute(w, data)
}

// lineChart draws ys over xs as an inline SVG with axes and min/max labels.
// Every string in it is ours, built from numbers.
func lineChart(title, xUnit, yUnit string, xs, ys []float64) template.HTML {
	const w, h, pad = 640.0, 220.0, 48.0
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img">`, w, h, w, h)
	fmt.Fprintf(&b, `<text x="%.0f" y="16" font-size="13" font-weight="bold">%s</text>`, pad, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<rect x="%.0f" y="24" width="%.0f" height="%.0f" fill="none" stroke="#bbb"/>`, pad, w-2*pad, h-pad-24)
	if len(xs) == 0 {
		b.WriteString(`<text x="60" y="110" font-size="12">no data</text></svg>`)
		return template.HTML(b.String())
	}
	x0, x1 := slices.Min(xs), slices.Max(xs)
	y1 := slices.Max(ys)
	if x1 == x0 {
		x1 = x0 + 1
	}
	if y1 <= 0 {
		y1 = 1
	}
	px := func(x float64) float64 { return pad + (x-x0)/(x1-x0)*(w-2*pad) }
	py := func(y float64) float64 { return h - pad - y/y1*(h-pad-24) }
	b.WriteString(`<polyline fill="none" stroke="#1f6feb" stroke-width="1.5" points="`)
	for i := range xs {
		if !math.IsNaN(ys[i]) {
			fmt.Fprintf(&b, "%.1f,%.1f ", px(xs[i]), py(ys[i]))
		}
	}
	b.WriteString(`"/>`)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%s</text>`, pad-4, 34.0, num(y1))
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11" text-anchor="end">0</text>`, pad-4, h-pad)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11">%s %s</text>`, pad, h-pad+16, num(x0), xUnit)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%s %s</text>`, w-pad, h-pad+16, num(x1), xUnit)
	fmt.Fprintf(&b, `<text x="12" y="%.0f" font-size="11" transform="rotate(-90 12 %.0f)">%s</text>`, h/2, h/2, template.HTMLEscapeString(yUnit))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

var reportPage = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>wsgateway load report</title>
<style>body{font:14px system-ui,sans-serif;margin:24px;max-width:1000px}table{border-collapse:collapse;margin:8px 0 20px}
td,th{border:1px solid #ddd;padding:4px 10px;text-align:right}th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}
pre{background:#f7f7f7;padding:10px}</style></head><body>
<h1>wsgateway load report</h1>
<p>{{.R.URL}} · board <b>{{.R.Board}}</b> · {{.R.Members}} members · rate {{if .R.Rate}}{{.R.Rate}}/s{{else}}as fast as acks return, {{.R.Inflight}} in flight per player{{end}}{{if .R.ChurnSeconds}} · churn {{printf "%.3g" .R.ChurnSeconds}} s{{end}} · started {{.R.Started.Format "2006-01-02 15:04:05 MST"}}</p>
<pre>{{.Summary}}</pre>
<h2>Score events</h2>
<table><tr><th>sent</th><th>acked</th><th>failed</th><th>duplicates</th><th>events/s</th><th>send time (s)</th></tr>
<tr><td>{{.R.Events.Sent}}</td><td>{{.R.Events.Acked}}</td><td>{{.R.Events.Failed}}</td><td>{{.R.Events.Duplicates}}</td><td>{{printf "%.0f" .R.Events.PerSecond}}</td><td>{{printf "%.1f" .R.SendSeconds}}</td></tr></table>
<table><tr><th>latency (ms)</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>mean</th><th>count</th></tr>
{{with .R.AckLatency}}<tr><td>ack</td><td>{{.P50}}</td><td>{{.P90}}</td><td>{{.P99}}</td><td>{{.P999}}</td><td>{{.Max}}</td><td>{{.Mean}}</td><td>{{.Count}}</td></tr>{{end}}
{{with .R.Freshness}}<tr><td>frame freshness</td><td>{{.P50}}</td><td>{{.P90}}</td><td>{{.P99}}</td><td>{{.P999}}</td><td>{{.Max}}</td><td>{{.Mean}}</td><td>{{.Count}}</td></tr>{{end}}
{{with .R.FrameLag}}<tr><td>frame lag (ts)</td><td>{{.P50}}</td><td>{{.P90}}</td><td>{{.P99}}</td><td>{{.P999}}</td><td>{{.Max}}</td><td>{{.Mean}}</td><td>{{.Count}}</td></tr>{{end}}
</table>
{{.Events}}
{{.P99}}
{{if .HasCDF}}{{.CDF}}{{end}}
<h2>Frames</h2>
<table><tr><th>type</th><th>count</th><th>per second</th></tr>
{{range $k := .FrameKinds}}{{with index $.R.Frames $k}}<tr><td>{{$k}}</td><td>{{.Count}}</td><td>{{printf "%.0f" .PerSecond}}</td></tr>{{end}}{{end}}</table>
{{if .HasFrames}}{{.Frames}}{{end}}
<h2>Connections and errors</h2>
{{with .R.Connections}}<table><tr><th>players</th><th>spectators + watchers</th><th>dial failures</th><th>dropped</th><th>reconnects</th><th>churned</th><th>redialed</th><th>connect time (s)</th></tr>
<tr><td>{{.Players}}</td><td>{{.Receivers}}</td><td>{{.DialFailed}}</td><td>{{.Dropped}}</td><td>{{.Reconnects}}</td><td>{{.Churned}}</td><td>{{.Redialed}}</td><td>{{printf "%.1f" $.R.ConnectSeconds}}</td></tr></table>{{end}}
{{if .R.ChurnSeconds}}<p>Churn: every connection lived {{printf "%.3g" .R.ChurnSeconds}} s ± 50%, then closed and dialled again.</p>{{end}}
{{if .ErrorCodes}}<table><tr><th>error</th><th>count</th></tr>{{range .ErrorCodes}}<tr><td>{{.}}</td><td>{{index $.R.Errors .}}</td></tr>{{end}}</table>{{end}}
</body></html>
`))
