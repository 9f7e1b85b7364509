package node

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wsgateway/wsgateway/bus"
	"github.com/wsgateway/wsgateway/hub/live"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/redisstore"
)

// maxBoardLabels bounds the board label's values: the first boards seen
// get their own series, later ones share "other". Board ids come from
// clients, so an unbounded label would let anyone grow the registry.
const maxBoardLabels = 64

// otherBoards is the board label of every board past maxBoardLabels.
const otherBoards = "other"

// boardLabels hands out board label values, at most maxBoardLabels distinct
// ones, each with its series of the score path (boardSeries).
type boardLabels struct {
	seen   sync.Map   // board id -> *boardSeries, read without a lock per event
	mu     sync.Mutex // serializes additions, so the bound holds
	n      int        // boards with their own label; guarded by mu
	other  *boardSeries
	events *prometheus.CounterVec
	ack    *prometheus.HistogramVec
}

func (l *boardLabels) newSeries(label string) *boardSeries {
	return &boardSeries{label: label, events: l.events, ackVec: l.ack}
}

// boardSeries is one board label's series of the score path, resolved once
// instead of with WithLabelValues (a hash of the label values and a lookup)
// twice per event; each is made on its first use, so a board shows only
// the outcomes it had.
type boardSeries struct {
	label     string
	events    *prometheus.CounterVec
	ackVec    *prometheus.HistogramVec
	applied   lazyCounter
	duplicate lazyCounter
	ackOnce   sync.Once
	ack       prometheus.Observer
}

type lazyCounter struct {
	once sync.Once
	c    prometheus.Counter
}

func (l *lazyCounter) get(vec *prometheus.CounterVec, lvs ...string) prometheus.Counter {
	l.once.Do(func() { l.c = vec.WithLabelValues(lvs...) })
	return l.c
}

// outcome counts one event's outcome: applied, duplicate or an error code.
func (b *boardSeries) outcome(o string) {
	switch o {
	case "applied":
		b.applied.get(b.events, b.label, o).Inc()
	case "duplicate":
		b.duplicate.get(b.events, b.label, o).Inc()
	default:
		b.events.WithLabelValues(b.label, o).Inc()
	}
}

func (b *boardSeries) observeAck(d time.Duration) {
	b.ackOnce.Do(func() { b.ack = b.ackVec.WithLabelValues(b.label) })
	b.ack.Observe(d.Seconds())
}

// of is board's series (the "other" ones past maxBoardLabels boards).
func (l *boardLabels) of(board string) *boardSeries {
	if b, ok := l.seen.Load(board); ok {
		return b.(*boardSeries)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.seen.Load(board); ok {
		return b.(*boardSeries)
	}
	if l.n >= maxBoardLabels {
		return l.other
	}
	b := l.newSeries(board)
	l.seen.Store(board, b)
	l.n++
	return b
}

// metrics are the node's per-board and store collectors. The flow passes
// through the node, so this is where per-board figures are taken, once,
// whichever path (WebSocket or REST) an event came by.
type metrics struct {
	labels   boardLabels
	events   *prometheus.CounterVec      // by board and outcome: applied, duplicate or an error code
	ack      *prometheus.HistogramVec    // submit → outcome, by board
	storeErr *prometheus.CounterVec      // by operation and contract code
	live     *live.Engine                // set once built; read at scrape time
	profs    *profileCache               // set once built; read at scrape time
	bus      *bus.Bus                    // set once built; read at scrape time
	lane     func() redisstore.LaneStats // the Redis engine's; nil on the memory engine
	// epoch is a local reading taken at newMetrics: time.Since(epoch)
	// reads the monotonic clock alone, half the cost of a time.Now, and
	// is all an ack's latency needs (two of them, subtracted).
	epoch time.Time

	subscribersDesc, framesDesc, profileDesc    *prometheus.Desc
	busSubsDesc, busInDesc                      *prometheus.Desc
	pipelinesDesc, laneEventsDesc, laneBusyDesc *prometheus.Desc
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wsgateway_board_events_total",
			Help: "Score events submitted on this node, by board (at most 64 boards, then \"other\") and outcome: applied, duplicate, or the error code.",
		}, []string{"board", "outcome"}),
		ack: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wsgateway_board_ack_seconds",
			Help:    "Time from a score event's submission to its outcome (the ack), by board.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"board"}),
		storeErr: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wsgateway_store_errors_total",
			Help: "Rank store calls that failed, by operation (apply, top, ranks) and contract code.",
		}, []string{"op", "code"}),
		subscribersDesc: prometheus.NewDesc("wsgateway_board_subscribers",
			"Connections on this node subscribed to a board's top or a view of it, by board.", []string{"board"}, nil),
		framesDesc: prometheus.NewDesc("wsgateway_board_frames_total",
			"Live frames offered to a board's subscribers on this node, by board.", []string{"board"}, nil),
		profileDesc: prometheus.NewDesc("wsgateway_profile_cache_lookups_total",
			"Entries the profile cache decorated, by result: hit (cached) or miss (read, or waited for, from the store).", []string{"result"}, nil),
		busSubsDesc: prometheus.NewDesc("wsgateway_bus_subscriptions",
			"Boards whose NATS change subject this node subscribes to: the boards its connections watch (and their sources), plus the ones lingering after their last watcher left.", nil, nil),
		busInDesc: prometheus.NewDesc("wsgateway_bus_messages_received_total",
			"NATS messages this node received, by kind: changes (one board's batch), boards, resync, profiles.", []string{"kind"}, nil),
		pipelinesDesc: prometheus.NewDesc("wsgateway_redis_pipelines_total",
			"Pipelines of score events the Redis lanes sent (one at a time per lane, --redis-lanes; re-sends included).", nil, nil),
		laneEventsDesc: prometheus.NewDesc("wsgateway_redis_pipeline_events_total",
			"Score events the Redis lanes sent in their pipelines (a re-sent event counts again).", nil, nil),
		laneBusyDesc: prometheus.NewDesc("wsgateway_redis_lane_busy_seconds_total",
			"Wall time the Redis lanes spent on their pipelines (building, Redis's round trip, parsing), summed over the lanes. Near --redis-lanes per second: the lanes are saturated; compare with Redis's own time in the scripts (INFO commandstats).", nil, nil),
	}
	m.labels.events, m.labels.ack = m.events, m.ack
	m.epoch = time.Now()
	m.labels.other = m.labels.newSeries(otherBoards)
	for _, c := range []prometheus.Collector{m.events, m.ack, m.storeErr, m} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Describe and Collect export the live engine's per-board figures at
// scrape time (prometheus.Collector), so the frame path counts nothing
// extra.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.subscribersDesc, m.framesDesc, m.profileDesc, m.busSubsDesc,
		m.busInDesc, m.pipelinesDesc, m.laneEventsDesc, m.laneBusyDesc} {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	if m.lane != nil {
		l := m.lane()
		ch <- prometheus.MustNewConstMetric(m.pipelinesDesc, prometheus.CounterValue, float64(l.Pipelines))
		ch <- prometheus.MustNewConstMetric(m.laneEventsDesc, prometheus.CounterValue, float64(l.Events))
		ch <- prometheus.MustNewConstMetric(m.laneBusyDesc, prometheus.CounterValue, l.Busy.Seconds())
	}
	if m.profs != nil {
		ch <- prometheus.MustNewConstMetric(m.profileDesc, prometheus.CounterValue, float64(m.profs.hits.Load()), "hit")
		ch <- prometheus.MustNewConstMetric(m.profileDesc, prometheus.CounterValue, float64(m.profs.misses.Load()), "miss")
	}
	if m.bus != nil {
		s := m.bus.Stats()
		ch <- prometheus.MustNewConstMetric(m.busSubsDesc, prometheus.GaugeValue, float64(s.Watched))
		for kind, n := range map[string]int64{"changes": s.In.Changes, "boards": s.In.Boards, "resync": s.In.Resync, "profiles": s.In.Profiles} {
			ch <- prometheus.MustNewConstMetric(m.busInDesc, prometheus.CounterValue, float64(n), kind)
		}
	}
	if m.live == nil {
		return
	}
	subs := map[string]float64{}
	frames := map[string]float64{}
	for _, s := range m.live.BoardStats() {
		l := m.labels.of(s.Board).label
		subs[l] += float64(s.Subscribers)
		frames[l] += float64(s.Frames)
	}
	for l, v := range subs {
		ch <- prometheus.MustNewConstMetric(m.subscribersDesc, prometheus.GaugeValue, v, l)
		ch <- prometheus.MustNewConstMetric(m.framesDesc, prometheus.CounterValue, frames[l], l)
	}
}

// metered wraps the node's store to take the per-board figures of every
// apply and count failed reads.
type metered struct {
	rank.Store
	m *metrics
}

func (s metered) Apply(ctx context.Context, e rank.Event, done rank.Done) {
	began := time.Since(s.m.epoch)
	board := s.m.labels.of(e.Board)
	s.Store.Apply(ctx, e, func(r rank.Result, err error) {
		outcome := "applied"
		switch {
		case err != nil:
			outcome = proto.CodeOf(err)
			s.m.storeErr.WithLabelValues("apply", outcome).Inc()
		case r.Duplicate:
			outcome = "duplicate"
		}
		board.outcome(outcome)
		board.observeAck(time.Since(s.m.epoch) - began)
		done(r, err)
	})
}

func (s metered) Top(ctx context.Context, board string, p rank.PeriodSel, offset, limit int) (rank.Page, error) {
	pg, err := s.Store.Top(ctx, board, p, offset, limit)
	if err != nil {
		s.m.storeErr.WithLabelValues("top", proto.CodeOf(err)).Inc()
	}
	return pg, err
}

func (s metered) Ranks(ctx context.Context, board string, p rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	rs, err := s.Store.Ranks(ctx, board, p, members, around)
	if err != nil {
		s.m.storeErr.WithLabelValues("ranks", proto.CodeOf(err)).Inc()
	}
	return rs, err
}

// viewersCollector exports the counts at scrape time: one series per board
// for the boards with the most viewers, the rest summed under "other"
// (board ids come from clients, so the label is bounded).
type viewersCollector struct {
	v    *bus.Viewers
	desc *prometheus.Desc
}

func newViewersCollector(v *bus.Viewers) *viewersCollector {
	return &viewersCollector{v: v, desc: prometheus.NewDesc("wsgateway_board_viewers",
		"Open subscriptions to a board over every node (docs/protocol.md §14), as this node last heard them.",
		[]string{"board"}, nil)}
}

func (c *viewersCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *viewersCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.v.All()
	boards := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	other := 0
	for i, b := range boards {
		if i < maxBoardLabels {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[b]), b)
		} else {
			other += counts[b]
		}
	}
	if other > 0 {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(other), otherBoards)
	}
}
