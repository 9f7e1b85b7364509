package bus

import (
	"encoding/json"
	"strings"

	"github.com/nats-io/nats.go"
)

// deliver is the receiving goroutine: every subscription feeds b.msgs, so
// messages of all subjects are handled one at a time in the order the
// server sent them. Messages nats.go could not queue (the channel full) are
// reported as a slow consumer, which the error handler answers with
// OnResync(""). It ends when Close has closed the connection.
func (b *Bus) deliver() {
	defer close(b.recvDone)
	for {
		select {
		case m := <-b.msgs:
			b.receive(m)
		case <-b.stopRecv:
			return
		}
	}
}

// receive handles one message under the prefix.
func (b *Bus) receive(m *nats.Msg) {
	switch {
	case strings.HasPrefix(m.Subject, b.subjChanges):
		b.inChanges.Add(1)
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
		b.inBoards.Add(1)
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
		b.inProfiles.Add(1)
		b.receiveProfiles(m.Data)
	case m.Subject == b.subjResync:
		b.inResync.Add(1)
		b.callResync(string(m.Data))
	}
}
