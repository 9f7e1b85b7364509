package hub

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wsgateway/wsgateway/proto"
)

// Metrics are the hub's Prometheus collectors. A nil *Metrics records nothing.
type Metrics struct {
	connections  prometheus.Gauge
	byRole       *prometheus.GaugeVec   // open connections by role ("anonymous": --public-read)
	messagesIn   *prometheus.CounterVec // by request type ("invalid" when undecodable)
	errors       *prometheus.CounterVec // error replies by contract code
	framesOut    prometheus.Counter
	slowConsumer prometheus.Counter
	closes       *prometheus.CounterVec // server-initiated closes by close code
	refusedCap   *prometheus.CounterVec // upgrades refused by a connection cap ("ip", "member")
	panics       *prometheus.CounterVec // panics recovered, by where ("upgrade", "connection")

	// inByType caches messagesIn's child of each known type, resolved on
	// first use (so the exposition shows only types seen, as before):
	// every request counts one, and WithLabelValues hashes and locks.
	inByType [nInTypes]atomic.Pointer[prometheus.Counter]
}

// inTypeIndex is the inByType slot of a messagesIn label; -1: not cached.
func inTypeIndex(typ string) int {
	switch typ {
	case proto.TypeScore:
		return 0
	case proto.TypeSubscribe:
		return 1
	case proto.TypeUnsubscribe:
		return 2
	case proto.TypePage:
		return 3
	case proto.TypeRank:
		return 4
	case proto.TypeAuth:
		return 5
	case "invalid":
		return 6
	case "rate_abuse":
		return 7
	}
	return -1
}

const nInTypes = 8

// NewMetrics creates the hub's collectors and registers them with reg (nil:
// not registered, e.g. in tests that read them directly).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wsgateway_connections", Help: "Open WebSocket connections.",
		}),
		byRole: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "wsgateway_connections_by_role", Help: "Open WebSocket connections by the token's role (anonymous: token-less spectators).",
		}, []string{"role"}),
		messagesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wsgateway_messages_in_total", Help: "Client messages received, by type.",
		}, []string{"type"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wsgateway_errors_total", Help: "Error replies sent, by code.",
		}, []string{"code"}),
		framesOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wsgateway_frames_out_total", Help: "Live top and view frames written.",
		}),
		slowConsumer: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wsgateway_slow_consumer_closes_total", Help: "Connections closed as slow consumers (R12).",
		}),
		closes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wsgateway_closes_total", Help: "Connections closed by the server, by close code.",
		}, []string{"code"}),
		refusedCap: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wsgateway_upgrades_refused_total", Help: "Upgrades refused by a connection cap, by cap (ip, member).",
		}, []string{"cap"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wsgateway_ws_panics_total", Help: "Panics recovered on the WebSocket endpoint, by where: upgrade (answered 500) or connection (closed with 1011; counted once per connection).",
		}, []string{"where"}),
	}
	if reg != nil {
		reg.MustRegister(m.connections, m.byRole, m.messagesIn, m.errors, m.framesOut, m.slowConsumer, m.closes, m.refusedCap, m.panics)
	}
	return m
}

func (m *Metrics) connOpened(role string, delta float64) {
	if m != nil {
		m.connections.Add(delta)
		m.byRole.WithLabelValues(role).Add(delta)
	}
}

func (m *Metrics) messageIn(typ string) {
	if m == nil {
		return
	}
	i := inTypeIndex(typ)
	if i < 0 {
		m.messagesIn.WithLabelValues(typ).Inc()
		return
	}
	c := m.inByType[i].Load()
	if c == nil {
		child := m.messagesIn.WithLabelValues(typ)
		c = &child
		m.inByType[i].Store(c)
	}
	(*c).Inc()
}

func (m *Metrics) errorOut(code string) {
	if m != nil {
		m.errors.WithLabelValues(code).Inc()
	}
}

func (m *Metrics) framesWritten(n int) {
	if m != nil {
		m.framesOut.Add(float64(n))
	}
}

func (m *Metrics) slowConsumerClose() {
	if m != nil {
		m.slowConsumer.Inc()
	}
}

func (m *Metrics) closed(code string) {
	if m != nil {
		m.closes.WithLabelValues(code).Inc()
	}
}

func (m *Metrics) refused(cap string) {
	if m != nil {
		m.refusedCap.WithLabelValues(cap).Inc()
	}
}

func (m *Metrics) panicked(where string) {
	if m != nil {
		m.panics.WithLabelValues(where).Inc()
	}
}
