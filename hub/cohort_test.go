package hub_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// TestCohortSubscribe (§12) over real sockets: acks and `rank` replies
// carry the cohort and a rank within it; `subscribe` with `cohort` gets that cohort's `top`
// frames, naming it, and they follow its changes; a player's `view` is
// within its cohort; a malformed cohort, one of a board without cohorts,
// or an empty id is a bad_request.
func TestCohortSubscribe(t *testing.T) {
	t.Parallel()
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{})
		g.board("grp", func(b *rank.Board) { b.Cohort = rank.Cohort{Size: 2} })
		g.board("plain", nil)
		c := g.dial(in.token(t, "ops", auth.Admin))
		for _, s := range []struct {
			member string
			delta  int64
			cohort string
			rank   int64
		}{{"a", 10, "1", 1}, {"b", 30, "1", 1}, {"c", 20, "2", 1}} {
			if ack := c.score("grp", s.member, s.delta); ack.Cohort != s.cohort || ack.Rank != s.rank || ack.Tier != "" {
				t.Fatalf("ack of %s: cohort %q rank %d tier %q; want cohort %s rank %d", s.member, ack.Cohort, ack.Rank, ack.Tier, s.cohort, s.rank)
			}
		}

		w := g.dial(in.token(t, "watcher", auth.Spectator))
		w.expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "grp", "cohort": "1", "top": 5})
		waitTop := func(want string) {
			t.Helper()
			deadline := time.Now().Add(5 * time.Second)
			for {
				m, ok := w.nextFrame(proto.TypeTop, time.Until(deadline))
				if !ok {
					t.Fatalf("no top frame with %s", want)
				}
				if strings.Contains(m.String(), want) {
					if !strings.HasSuffix(m.String(), `,"cohort":"1"}`) {
						t.Fatalf("a cohort subscription's top frame without its cohort: %s", m)
					}
					return
				}
			}
		}
		waitTop(`"entries":[{"rank":1,"member":"b","score":30},{"rank":2,"member":"a","score":10}],"total":2,"ts":`)
		c.score("grp", "a", 25)
		waitTop(`"entries":[{"rank":1,"member":"a","score":35},{"rank":2,"member":"b","score":30}],"total":2,"ts":`)

		rk := c.call(proto.TypeRank, map[string]any{"board": "grp", "member": "a", "around": 1})
		if !strings.Contains(rk.String(), `"rank":1,"score":35,"around":[{"rank":1,"member":"a","score":35},{"rank":2,"member":"b","score":30}],"cohort":"1"}`) {
			t.Fatalf("rank of a: %s, want rank 1 of cohort 1", rk)
		}

		p := g.dial(in.token(t, "c", auth.Player))
		p.expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "grp", "top": 0, "around": 2})
		v, ok := p.nextFrame(proto.TypeView, 5*time.Second)
		if !ok || !strings.Contains(v.String(), `"member":"c","rank":1,"score":20,"around":[{"rank":1,"member":"c","score":20}]`) {
			t.Fatalf("c's view %s, want rank 1 alone in cohort 2", v)
		}

		for _, f := range []map[string]any{
			{"board": "grp", "cohort": "x"}, {"board": "grp", "cohort": ""}, {"board": "grp", "cohort": "a b"},
			{"board": "plain", "cohort": "1"},
		} {
			w.expectError(proto.CodeBadRequest, proto.TypeSubscribe, f)
		}
	})
}
