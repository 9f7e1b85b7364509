package redisstore

// History: a member's last applied events of a period (§11), the list
// apply.lua keeps per member and period on a board with history.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/rank"
)

// History reads a member's last applied events in a period, newest first.
// One LRANGE of one list: apply.lua writes an event's entry in the step
// that applies it, so the read sees whole events only.
func (s *Store) History(ctx context.Context, board string, sel rank.PeriodSel, member string) ([]rank.HistoryEvent, error) {
	if !rank.ValidBoardID(board) {
		return nil, fmt.Errorf("redisstore: history %q: %w", board, rank.ErrInvalidBoard)
	}
	if err := rank.CheckMemberID(member); err != nil {
		return nil, fmt.Errorf("redisstore: history %s: %w", board, err)
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	c, err := s.board(ctx, board)
	if err != nil {
		return nil, s.fail("history", board, err)
	}
	now, _ := s.now(ctx, c.b)
	sl, err := slotsFor(c.b, sel, now)
	if err != nil {
		return nil, fmt.Errorf("redisstore: history %s: %w", board, err)
	}
	out := []rank.HistoryEvent{}
	if sl.shown != 0 || c.b.History == 0 {
		return out, nil // past retain, or a board that keeps none
	}
	idx := sl.a
	if sl.bound > 0 && ms(now) >= sl.bound {
		idx = sl.b
	}
	kb := &c.b
	if c.b.Sharded() {
		kb = &c.shards[rank.ShardOf(member, c.b.Shards)].b // the member's shard's slot
	}
	raw, err := s.client.LRange(ctx, s.historyKey(kb, idx, member), 0, int64(c.b.History)-1).Result()
	if err != nil {
		return nil, s.fail("history", board, err)
	}
	for _, r := range raw {
		var w struct {
			ID    string          `json:"id"`
			Delta *int64          `json:"delta"`
			Value *int64          `json:"value"`
			Score int64           `json:"score"`
			At    int64           `json:"at"`
			Meta  json.RawMessage `json:"meta"`
		}
		if err := json.Unmarshal([]byte(r), &w); err != nil {
			return nil, fmt.Errorf("redisstore: history %s: entry %q: %w", board, r, err)
		}
		e := rank.HistoryEvent{ID: w.ID, Score: w.Score, At: w.At, Meta: meta.Meta(w.Meta)}
		switch {
		case w.Delta != nil:
			e.Op, e.Amount = rank.OpDelta, *w.Delta
		case w.Value != nil:
			e.Op, e.Amount = rank.OpValue, *w.Value
		}
		out = append(out, e)
	}
	return out, nil
}
