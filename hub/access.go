package hub

import (
	"slices"

	"github.com/wsgateway/wsgateway/proto"
)

// Access is checked when a subscription starts and again whenever what it
// was granted on changes: a new token (auth) and a board's config (public,
// for token-less spectators). A subscription that lost its access ends with
// an `error` forbidden naming the board, then `unsubscribed` with an empty
// id (no request asked for it), and no frame of the board follows.

// BoardChanged re-checks the subscriptions to board after its config
// changed, on this node or another (the node calls it once the store's
// cached config is dropped). It returns at once; the check runs on its own
// goroutine, as it may read the config from the store.
func (h *Hub) BoardChanged(board string) {
	go func() {
		var b struct{ public, read bool }
		for _, c := range h.reg.all() {
			if !c.anon || !c.subscribed(board) {
				continue // a token's access does not depend on a board's config
			}
			if !b.read {
				cfg, err := h.board(h.ctx, board)
				b.public, b.read = err == nil && cfg.public, true
			}
			if !b.public {
				c.endSub(board, "board "+board+" is not public")
			}
		}
	}()
}

// BoardDeleted forgets every connection's subscription to a deleted board:
// the live engine has told them and ended their frames (R19), so the
// subscription no longer counts toward the per-connection limit.
func (h *Hub) BoardDeleted(board string) {
	for _, c := range h.reg.all() {
		c.subsMu.Lock()
		c.subs.del(board)
		c.subsMu.Unlock()
	}
}

func (c *conn) subscribed(board string) bool {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	return c.subs.has(board)
}

// recheckSubs ends every subscription for which why returns a reason.
func (c *conn) recheckSubs(why func(board string) string) {
	c.subsMu.Lock()
	var lost []string
	for _, b := range c.subs {
		if why(b) != "" {
			lost = append(lost, b)
		}
	}
	c.subsMu.Unlock()
	for _, b := range lost {
		c.endSub(b, why(b))
	}
}

// endSub ends the subscription to board, telling the client why. Any
// goroutine.
func (c *conn) endSub(board, why string) {
	c.subsMu.Lock()
	ok := c.subs.del(board)
	c.subsMu.Unlock()
	if !ok {
		return // ended meanwhile (unsubscribe, another check)
	}
	c.h.deps.Live.Unsubscribe(c.out, board)
	c.sendError("", forbidden(why))
	c.sendJSON(proto.Subscribed{Type: proto.TypeUnsubscribed, Board: board})
}

// boardSet is a connection's subscribed boards: a handful (at most
// Config.MaxSubscriptions), so a slice searched in full, not a map (a
// map of one board is a few hundred bytes per connection).
type boardSet []string

func (s boardSet) has(board string) bool { return slices.Contains(s, board) }

// add adds board unless it is in s.
func (s *boardSet) add(board string) {
	if !s.has(board) {
		*s = append(*s, board)
	}
}

// del removes board and reports whether it was in s.
func (s *boardSet) del(board string) bool {
	i := slices.Index(*s, board)
	if i < 0 {
		return false
	}
	*s = slices.Delete(*s, i, i+1)
	if len(*s) == 0 {
		*s = nil
	}
	return true
}
