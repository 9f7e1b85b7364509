package redisstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// A round sends at most one call per board: the events past maxPerScript
// wait for the next round (so a call that meets NOSCRIPT is never sent
// again after a later call of its board ran), and two boards' calls share
// the round's pipeline.
func TestRoundOneCallPerBoard(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "round"})
	for _, id := range []string{"ra", "rb"} {
		mustPut(t, s, rank.DefaultBoard(id))
	}
	bt := newBatch(256)
	const many = maxPerScript*2 + 10
	rb := 0 // events of rb: every tenth
	for i := range many {
		board := "ra"
		if i%10 == 0 {
			board, rb = "rb", rb+1
		}
		c := &call{ctx: context.Background()}
		c.e = incr(board, fmt.Sprintf("e%d", i), fmt.Sprintf("m%d", i), 1)
		bt.send = append(bt.send, c)
	}
	s.build(t.Context(), bt)
	if len(bt.cmds) != 2 {
		t.Fatalf("%d calls in the round, want one per board (2)", len(bt.cmds))
	}
	for _, m := range bt.cmds {
		if len(m.calls) > maxPerScript {
			t.Errorf("a call of %d events, want at most %d", len(m.calls), maxPerScript)
		}
	}
	sent := len(bt.cmds[0].calls) + len(bt.cmds[1].calls)
	if sent+len(bt.later) != many || len(bt.later) != many-rb-maxPerScript {
		t.Fatalf("%d sent and %d left for the next round of %d", sent, len(bt.later), many)
	}
	for i := 1; i < len(bt.later); i++ { // the next round's, in submission order
		var a, b int
		fmt.Sscanf(bt.later[i-1].e.ID, "e%d", &a)
		fmt.Sscanf(bt.later[i].e.ID, "e%d", &b)
		if a >= b {
			t.Fatalf("left for the next round out of order: %s before %s", bt.later[i-1].e.ID, bt.later[i].e.ID)
		}
	}
}
