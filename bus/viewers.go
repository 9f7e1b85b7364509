package bus

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/nats-io/nats.go"
)

// ViewersReport is one node's open subscriptions per board (docs/protocol.md
// §14). Payload of <prefix>.viewers, JSON. Boards holds the boards that have
// viewers on the node, and a 0 once for a board that just lost its last one;
// a node that reports nothing for a while has none (receivers let its
// counts age out).
type ViewersReport struct {
	Node   string         `json:"node"`
	Boards map[string]int `json:"boards"`
}

// maxViewersBatch bounds the boards of one message: an entry is at most
// ~80 bytes (a 64-byte id, a count), so a message stays far under NATS's
// 1 MB max_payload.
const maxViewersBatch = 4096

func (b *Bus) subjViewers() string { return b.cfg.Subject + ".viewers" }

// PublishViewers sends this node's counts to every other node, in as many
// messages as maxViewersBatch needs; each entry stands alone, so a receiver
// that misses one message misses those boards for one report only. Counts
// are re-sent every few seconds, so they bypass the change queue and are
// not retried: a lost report is replaced by the next.
func (b *Bus) PublishViewers(boards map[string]int) error {
	ids := slices.Sorted(maps.Keys(boards))
	for len(ids) > 0 {
		part := ids[:min(maxViewersBatch, len(ids))]
		ids = ids[len(part):]
		r := ViewersReport{Node: b.cfg.Node, Boards: make(map[string]int, len(part))}
		for _, id := range part {
			r.Boards[id] = boards[id]
		}
		data, _ := json.Marshal(r) // strings and ints cannot fail
		if err := b.nc.Publish(b.subjViewers(), data); err != nil {
			return fmt.Errorf("bus: publish viewers: %w", err)
		}
	}
	return nil
}

// SubscribeViewers calls f with every other node's reports (NoEcho keeps
// this node's own away), from a NATS callback goroutine of its own: f must
// not block. A report it cannot read is logged and skipped; the next one
// replaces it. stop ends the subscription.
func (b *Bus) SubscribeViewers(f func(ViewersReport)) (stop func() error, err error) {
	sub, err := b.nc.Subscribe(b.subjViewers(), func(m *nats.Msg) {
		var r ViewersReport
		if err := json.Unmarshal(m.Data, &r); err != nil || r.Node == "" {
			b.log.Warn("bus: bad viewers report", "err", err)
			return
		}
		f(r)
	})
	if err != nil {
		return nil, fmt.Errorf("bus: subscribe viewers: %w", err)
	}
	return sub.Unsubscribe, nil
}
