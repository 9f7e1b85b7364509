package hub

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"testing"

	"github.com/wsgateway/wsgateway/rank"
)

// TestErrorReplyClosedReason: a board_closed error frame says why and
// when, with the fields of its reason only (R30), however deep the engine
// wrapped the rank.ClosedError.
func TestErrorReplyClosedReason(t *testing.T) {
	t.Parallel()
	h := &Hub{log: slog.New(slog.DiscardHandler)}
	h.replyBufs.New = func() any { b := make([]byte, 0, 256); return &b }
	c := &conn{h: h}
	for _, tc := range []struct {
		err  error
		want map[string]any
	}{
		{&rank.ClosedError{Reason: rank.ClosedNotStarted, StartsAt: 1_800_000_000_000},
			map[string]any{"reason": "not_started", "starts_at": 1.8e12, "message": "board is closed: not started yet"}},
		{&rank.ClosedError{Reason: rank.ClosedEnded, FinalAt: 1_800_000_000_001},
			map[string]any{"reason": "ended", "final_at": 1800000000001.0, "message": "board is closed: it has ended"}},
		{&rank.ClosedError{Reason: rank.ClosedPeriodOver, Period: 20261127, GraceEnd: 1_800_000_000_002},
			map[string]any{"reason": "period_over", "period": 20261127.0, "grace_end": 1800000000002.0, "message": "board is closed: period 20261127 is past its grace"}},
		{&rank.ClosedError{Reason: rank.ClosedOutsideWindow},
			map[string]any{"reason": "outside_window", "message": "board is closed: the event's bucket has left the hot window"}},
		{rank.ErrBoardClosed, map[string]any{"message": "board is closed"}}, // no reason known
	} {
		wrapped := fmt.Errorf("hub: score b: memstore: apply b: %w", tc.err)
		p := c.errorReply("s1", wrapped, 0)
		var got map[string]any
		if err := json.Unmarshal(*p, &got); err != nil {
			t.Fatalf("%s: %v", *p, err)
		}
		want := map[string]any{"type": "error", "id": "s1", "code": "board_closed"}
		maps.Copy(want, tc.want)
		if !maps.Equal(got, want) {
			t.Errorf("error frame for %v:\n got %v\nwant %v", tc.err, got, want)
		}
	}
}
