package bus

import (
	"encoding/json"
	"strings"

	"github.com/nats-io/nats.go"
)

// receive handles every message under the prefix. nats.go calls it from one
// goroutine per subscription, in arrival order.
func (b *Bus) receive(m *nats.Msg) {
	// Messages nats.go dropped for us (pending limits) were changes we will
	// never see: resync everything once per new drop.
	if d, err := m.Sub.Dropped(); err == nil && d != b.lastDropped {
		b.lastDropped = d
		b.callResync("")
	}

	switch {
	case strings.HasPrefix(m.Subject, b.subjChanges):
		board, ok := decodeToken(m.Subject[len(b.subjChanges):])
		if !ok {
			b.log.Warn("bus: bad changes subject", "subject", m.Subject)
			return
		}
		batch, err := decodeChanges(m.Data)
		if err != nil {
			b.log.Warn("bus: bad changes payload; resyncing board", "board", board, "err", err)
			b.callResync(board)
			return
		}
		if len(batch) == 0 {
			return
		}
		b.received.Add(int64(len(batch)))
		if b.cfg.OnChanges != nil {
			b.cfg.OnChanges(batch)
		}
	case m.Subject == b.subjBoards:
		var e BoardEvent
		if err := json.Unmarshal(m.Data, &e); err != nil || e.Board == "" {
			b.log.Warn("bus: bad board event; resyncing every board", "err", err)
			b.callResync("")
			return
		}
		if b.cfg.OnBoard != nil {
			b.cfg.OnBoard(e)
		}
	case m.Subject == b.subjProfs:
		b.receiveProfiles(m.Data)
	case m.Subject == b.subjResync:
		b.callResync(string(m.Data))
	}
}
