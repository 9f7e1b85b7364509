package integrity

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// The webhook event member.held (§16) of each member an event applied on
// this node held. The store's sink hears the hold (rank.Change.Hold) and
// must not call the store, so the holds wait in a bounded queue for Run,
// which appends each to the outbox once (a marker per board, period,
// member and the holding event's seq). A full queue, a failing store or
// a node that dies first loses the event, as a ban's member.banned may
// be lost: the queue (GET …/held) still lists the member.

// heldQueue bounds the holds waiting for Run.
const heldQueue = 1024

type heldEvent struct {
	board, member, reason string
	period, seq           int64
	at                    time.Time
}

// Changed is the store's sink's news: the holds among batch are queued for
// member.held and counted. It never blocks.
func (s *Store) Changed(batch []rank.Change) {
	for i := range batch {
		c := &batch[i]
		if c.Hold == "" {
			continue
		}
		kind := c.Hold
		if kind != rank.HoldGain && kind != rank.HoldJump {
			kind = "hook"
		}
		s.m.held.WithLabelValues(kind).Inc()
		select {
		case s.held <- heldEvent{board: c.Board, member: c.Member, reason: c.Hold, period: c.Period, seq: c.Seq, at: s.cfg.Now()}:
		default:
			s.m.heldLost.Inc()
			s.log.Warn("integrity: member.held not appended: queue full", "board", c.Board, "member", c.Member)
		}
	}
}

// Run appends the queued member.held events to the outbox until ctx ends.
func (s *Store) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case h := <-s.held:
			s.appendHeld(ctx, h)
		}
	}
}

func (s *Store) appendHeld(ctx context.Context, h heldEvent) {
	data, _ := json.Marshal(struct {
		Member string `json:"member"`
		Reason string `json:"reason"`
		Period int64  `json:"period"`
	}{h.member, h.reason, h.period}) // plain types
	marker := fmt.Sprintf("held|%s|%d|%s|%d", h.board, h.period, h.member, h.seq)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	ev := rank.OutboxEvent{Event: rank.EventMemberHeld, Board: h.board, TS: h.at, Data: data}
	if _, err := s.Store.AppendOutbox(ctx, marker, rank.RetryFor, ev); err != nil {
		s.m.heldLost.Inc()
		s.log.Warn("integrity: member.held not appended", "board", h.board, "member", h.member, "err", err)
	}
}
