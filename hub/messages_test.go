package hub_test

import (
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// TestMessagesKeepHTMLCharacters: an error frame's message says <, > and
// & as they are ("is not <tier>-<n>"), not as \u003c escapes; both engines.
func TestMessagesKeepHTMLCharacters(t *testing.T) {
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
		w := g.dial(in.token(t, "watcher", auth.Spectator))
		m := w.expectError(proto.CodeBadRequest, proto.TypeSubscribe, map[string]any{"board": "lg", "cohort": "gold-1"})
		if s := m.String(); !strings.Contains(s, `is not <tier>-<n> with a tier of board lg`) || strings.Contains(s, `\u003c`) {
			t.Fatalf("error frame %s, want the message's <tier>-<n> as written", s)
		}
	})
}
