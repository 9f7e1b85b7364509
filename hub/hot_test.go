package hub_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// Hot boards (R22) over the wire: the ack, page and rank replies and the
// top and view frames carry the decayed score with 3 decimals, and at a
// bucket boundary, with no event at all, every subscriber gets frames with
// the decayed scores (R7 on a hot board): the live tick notices the new
// bucket (the backstop re-reads, which would also get there, are off).
func TestHotBoardFrames(t *testing.T) {
	t.Parallel()
	forEachSetup(t, func(t *testing.T, kind string) {
		clk := ranktest.NewClock(time.Date(2026, 5, 1, 12, 10, 0, 0, time.UTC))
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{now: clk.Now, noBackstop: true})
		g.board("hotw", func(b *rank.Board) {
			b.Tiebreak = rank.Shared
			b.Decay = rank.Decay{Bucket: rank.Duration(time.Hour), Buckets: 3, Factor: 0.5}
		})
		c := g.dial(in.token(t, "ann", auth.Admin))
		w := g.dial(in.token(t, "ann", auth.Spectator))
		w.expectOK("subscribed", "subscribe", map[string]any{"board": "hotw", "top": 5, "around": 1})
		ack := c.call("score", map[string]any{"board": "hotw", "delta": 10})
		if ack.Type != "ack" || !strings.Contains(ack.String(), `"score":10.000,"rank":1,`) {
			t.Fatalf("ack %s, want score 10.000 rank 1", ack)
		}
		ack = c.call("score", map[string]any{"board": "hotw", "member": "bob", "delta": 3})
		if !strings.Contains(ack.String(), `"score":3.000,"rank":2,`) {
			t.Fatalf("bob's ack %s, want score 3.000 rank 2", ack)
		}
		// waitFrames reads w's frames until it has seen a top frame holding
		// top and a view frame holding view.
		waitFrames := func(top, view string, within time.Duration) {
			t.Helper()
			deadline := time.Now().Add(within)
			seen := map[string]bool{}
			for !seen["top"] || !seen["view"] {
				m, err := w.read(time.Until(deadline))
				if err != nil {
					t.Fatalf("frames within %s: top %v (%s), view %v (%s): %v", within, seen["top"], top, seen["view"], view, err)
				}
				if (m.Type == "top" && strings.Contains(m.String(), top)) || (m.Type == "view" && strings.Contains(m.String(), view)) {
					seen[m.Type] = true
				}
			}
		}
		waitFrames(`"entries":[{"rank":1,"member":"ann","score":10.000,"name":"Ann"},{"rank":2,"member":"bob","score":3.000}]`,
			`"member":"ann","rank":1,"score":10.000,`, 5*time.Second)

		// The boundary: every score halves, with no event. The live tick
		// sees the bucket change (within 500 ms) and the frames follow
		// within the interval + 50 ms: that bound is proved with a fake
		// clock (live.TestHotBoundaryFrames); over real sockets only the
		// frames' arrival is.
		clk.Advance(time.Hour)
		waitFrames(`"entries":[{"rank":1,"member":"ann","score":5.000,"name":"Ann"},{"rank":2,"member":"bob","score":1.500}]`,
			`"member":"ann","rank":1,"score":5.000,`, 5*time.Second)

		page := c.call("page", map[string]any{"board": "hotw", "offset": 0, "limit": 10})
		if !strings.Contains(page.String(), `{"rank":2,"member":"bob","score":1.500}`) {
			t.Fatalf("page %s, want bob at 1.500", page)
		}
		rk := c.call("rank", map[string]any{"board": "hotw", "member": "bob", "around": 0})
		if !strings.Contains(rk.String(), `"rank":2,"score":1.500,`) {
			t.Fatalf("rank %s, want rank 2 score 1.500", rk)
		}
		ack = c.call("score", map[string]any{"board": "hotw", "member": "bob", "delta": 4})
		if !strings.Contains(ack.String(), `"score":5.500,"rank":1,"prev_rank":2,`) {
			t.Fatalf("bob's ack after the boundary %s, want 5.500 rank 1 (was 2)", ack)
		}
	})
}
