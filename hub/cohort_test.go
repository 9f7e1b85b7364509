package hub_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
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

// TestRankTier (§12): a `rank` reply carries the member's cohort and tier
// on a league board, and the tier of a member not on it yet; a board
// without a league carries neither.
func TestRankTier(t *testing.T) {
	t.Parallel()
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{})
		g.board("lg", func(b *rank.Board) {
			b.Reset = rank.Daily
			b.Cohort = rank.Cohort{Size: 2}
			tiers, _ := rank.LeagueTiersOf("bronze", "silver")
			b.League = rank.League{Tiers: tiers, Promote: 1, Demote: 1}
		})
		g.board("plain", nil)
		c := g.dial(in.token(t, "ops", auth.Admin))
		c.score("lg", "x", 5)
		for _, tc := range []struct{ board, member, want string }{
			{"lg", "x", `"rank":1,"score":5,"around":[{"rank":1,"member":"x","score":5}],"period":`},
			{"lg", "nobody", `"rank":null,"score":null,"around":[],"period":`},
			{"plain", "x", `"rank":null,"score":null,"around":[]}`},
		} {
			rk := c.call(proto.TypeRank, map[string]any{"board": tc.board, "member": tc.member})
			if !strings.Contains(rk.String(), tc.want) {
				t.Fatalf("rank of %s on %s: %s, want %s", tc.member, tc.board, rk, tc.want)
			}
			switch {
			case tc.board == "plain" && strings.Contains(rk.String(), "tier"):
				t.Fatalf("rank on a board without a league: %s", rk)
			case tc.member == "x" && tc.board == "lg" && !strings.HasSuffix(rk.String(), `,"cohort":"bronze-1","tier":"bronze"}`):
				t.Fatalf("rank of x: %s, want cohort bronze-1 and tier bronze", rk)
			case tc.member == "nobody" && !strings.HasSuffix(rk.String(), `,"tier":"bronze"}`):
				t.Fatalf("rank of a member not on the board: %s, want tier bronze", rk)
			}
		}
	})
}

// TestCohortMultiNode (R9 on a cohort board): a cohort's top frames and a
// view within a cohort on node B follow events applied on node A, the
// change reaching B over NATS with its cohort.
func TestCohortMultiNode(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	in := newInfra(t, redisKind)
	a := in.gateway(t, gwOptions{node: "a"})
	b := in.gateway(t, gwOptions{node: "b"})
	a.board("cmn", func(b *rank.Board) { b.Cohort = rank.Cohort{Size: 2} })
	onA := a.dial(in.token(t, "srv-a", auth.Server))
	for i, m := range []string{"p1", "p2", "p3", "p4"} {
		onA.score("cmn", m, int64(40-10*i)) // p1, p2 in cohort 1; p3, p4 in cohort 2
	}
	spec := b.dial(in.token(t, "spec", auth.Spectator))
	spec.expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "cmn", "cohort": "2", "top": 2})
	p4 := b.dial(in.token(t, "p4", auth.Player))
	p4.expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "cmn", "top": 0, "around": 1})

	onA.score("cmn", "p4", 15) // 25: overtakes p3 in cohort 2
	testenv.Until(t, 5*time.Second, "B's frame of cohort 2 with p4 first", func() bool {
		m, ok := spec.nextFrame(proto.TypeTop, 5*time.Second)
		if !ok {
			t.Fatal("no top frame on B")
		}
		f := as[proto.Top](t, m)
		return f.Cohort == "2" && f.Total == 2 && len(f.Entries) == 2 && f.Entries[0].Member == "p4" && f.Entries[0].Score == 25
	})
	testenv.Until(t, 5*time.Second, "B's view of p4 at rank 1 of its cohort", func() bool {
		m, ok := p4.nextFrame(proto.TypeView, 5*time.Second)
		if !ok {
			t.Fatal("no view frame on B")
		}
		v := as[proto.View](t, m)
		return v.Rank != nil && *v.Rank == 1 && len(v.Around) == 2 && v.Around[1].Member == "p3"
	})
}
