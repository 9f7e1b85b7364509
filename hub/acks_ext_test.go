package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
)

// TestAcksFromCompleter: on the Redis engine, whose completer answers a
// pipeline's events together, the acks of clients with many scores in
// flight are written by the completer itself (hub/acks.go, so the path
// cannot silently die), and every client still gets one ack per score, in
// request order, each with the score its own event produced (R2, R3): one
// member per client, +1 each, so the i-th ack says i+1. The ledger: the
// store holds each member at the number of its events.
func TestAcksFromCompleter(t *testing.T) {
	t.Parallel()
	in := newInfra(t, redisKind)
	g := in.gateway(t, gwOptions{})
	g.board("acks", nil)
	const clients, each = 6, 300
	var wg sync.WaitGroup
	errs := make(chan error, 2*clients)
	for k := range clients {
		member := fmt.Sprintf("acker%d", k)
		c := g.dial(in.token(t, member, auth.Server)) // servers are not rate limited
		// The client's sender: every score at once, up to the window.
		wg.Go(func() {
			for i := range each {
				frame := fmt.Sprintf(`{"type":"score","id":"s%d","board":"acks","member":%q,"delta":1}`, i, member)
				if err := c.ws.Write(context.Background(), websocket.MessageText, []byte(frame)); err != nil {
					errs <- fmt.Errorf("%s: write %d: %w", member, i, err)
					return
				}
			}
		})
		wg.Go(func() {
			for i := range each {
				m, err := c.read(30e9)
				if err != nil {
					errs <- fmt.Errorf("%s: ack %d: %w", member, i, err)
					return
				}
				var ack proto.Ack
				if err := json.Unmarshal(m.raw, &ack); err != nil || m.Type != proto.TypeAck || ack.ID != fmt.Sprintf("s%d", i) || ack.Score != int64(i+1) {
					errs <- fmt.Errorf("%s: reply %d is %s, want the ack of s%d with score %d", member, i, m, i, i+1)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	top := g.top("acks", clients)
	if len(top.Entries) != clients {
		t.Fatalf("%d members on the board, want %d", len(top.Entries), clients)
	}
	for _, e := range top.Entries {
		if e.Score != each {
			t.Fatalf("%s holds %d, want %d (one per acked event)", e.Member, e.Score, each)
		}
	}
	direct := g.Hub.DirectReplies()
	if direct == 0 {
		t.Fatalf("no ack of %d went the completer's direct path", clients*each)
	}
	t.Logf("%d of %d acks written by the completer", direct, clients*each)
}
