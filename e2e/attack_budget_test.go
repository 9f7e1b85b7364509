package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
)

// scoreBurst sends n score events on c and counts the acks among the
// replies (the others must be rate_limited).
func scoreBurst(t *testing.T, c *wsConn, prefix string, n int) int {
	t.Helper()
	for i := range n {
		c.send(map[string]any{"type": "score", "id": fmt.Sprint(prefix, i), "board": "mb", "delta": 1})
	}
	acked := 0
	for range n {
		m := c.next(5 * time.Second)
		switch {
		case m == nil:
			t.Fatal("a score got no reply")
		case m["type"] == proto.TypeAck:
			acked++
		case m["code"] != proto.CodeRateLimited:
			t.Fatalf("reply %v", m)
		}
	}
	return acked
}

// TestMemberBudgetAcrossReconnects is issue 33 B1: the per-member score
// budget outlives the member's connections (a dial / burst / close loop
// meets the same bucket) and follows auth (a spectator connection that
// becomes the player's is limited like the player's own). Before the fix
// each loop got a fresh burst and the auth'd connection had no budget.
func TestMemberBudgetAcrossReconnects(t *testing.T) {
	t.Parallel()
	const perSec = 10 // burst 20
	g := startGateway(t, gwOpts{Args: []string{"--rate", "1000", "--member-score-rate", fmt.Sprint(perSec)}})
	putBoard(t, g, "mb", nil)
	most := func(began time.Time) int { return 2*perSec + int(perSec*time.Since(began).Seconds()) + 1 }

	tok := token(t, auth.Claims{Sub: "pat"})
	const loops, each = 10, 100
	began := time.Now()
	acked := 0
	for i := range loops {
		c := dialWS(t, g, tok)
		acked += scoreBurst(t, c, fmt.Sprintf("l%d-", i), each)
		c.ws.CloseNow()
	}
	if m := most(began); acked > m {
		t.Errorf("dial / %d scores / close × %d: %d acked in %s, want at most %d (the member's budget)", each, loops, acked, time.Since(began), m)
	}
	t.Logf("reconnect loop: %d of %d acked in %s", acked, loops*each, time.Since(began))

	// A spectator's connection that auths to the player's token spends
	// the member's budget too.
	began = time.Now()
	c := dialWS(t, g, token(t, auth.Claims{Sub: "sam", Role: auth.Spectator}))
	c.send(map[string]any{"type": "auth", "id": "a", "token": token(t, auth.Claims{Sub: "sam"})})
	if m := c.next(5 * time.Second); m["type"] != proto.TypeAuthed {
		t.Fatalf("auth: %v", m)
	}
	acked = scoreBurst(t, c, "s", each)
	if m := most(began); acked > m {
		t.Errorf("after auth to a player token: %d of %d acked in %s, want at most %d", acked, each, time.Since(began), m)
	}
	t.Logf("after auth: %d of %d acked", acked, each)
}
