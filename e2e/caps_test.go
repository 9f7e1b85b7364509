package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// TestCapTwoNodes: R39 over two gateway processes sharing Redis and NATS.
// 60 events of 7 points for one member, 30 through each node, sent at once
// over WebSocket connections, on a board capped at 100 points a day (plain
// and sharded): 14 apply whole, one applies the 2 that fit (capped), 45
// are limit_reached; the score is 100, and what the acks say was applied
// adds up to it. Each event sent again through the other node gets its
// first answer.
func TestCapTwoNodes(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	c := newCluster(t, clusterOpts{Nodes: 2})
	for _, board := range []string{"cap-plain", "cap-sharded"} {
		cfg := map[string]any{"cap": map[string]any{"points": 100, "per": "day"}}
		if board == "cap-sharded" {
			cfg["shards"] = 4
		}
		putBoard(t, c.nodes[0], board, cfg)
		clients := append(serverClients(t, 30, c.nodes[0].URL()), serverClients(t, 30, c.nodes[1].URL())...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		acks := make([]proto.Ack, len(clients))
		errs := make([]error, len(clients))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, cl := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				acks[i], errs[i] = cl.Score(ctx, client.ScoreReq{Board: board, Member: "grinder", Delta: client.Int(7), ID: fmt.Sprintf("run-%d", i)})
			}()
		}
		close(start)
		wg.Wait()
		var applied int64
		whole, capped, refused := 0, 0, 0
		for i := range clients {
			var ce *client.Error
			switch {
			case errors.As(errs[i], &ce) && ce.Code == proto.CodeLimitReached:
				refused++
			case errs[i] != nil:
				t.Fatalf("%s: event %d: %v", board, i, errs[i])
			case acks[i].Capped:
				capped++
				applied += acks[i].Applied
			default:
				whole++
				applied += 7
			}
		}
		truth, _, err := readBoard(ctx, c.nodes[1], adminToken(t), board)
		if err != nil {
			t.Fatal(err)
		}
		if len(truth) != 1 || truth[0].Score != 100 || applied != 100 || whole != 14 || capped != 1 || refused != 45 {
			t.Fatalf("%s: board %v; acks: %d whole, %d capped, %d refused, %d applied; want score 100: 14, 1, 45, 100",
				board, truth, whole, capped, refused, applied)
		}
		// A re-send through the other node: the first answer, capped included.
		for i := range clients {
			if errs[i] != nil {
				continue
			}
			other := clients[(i+30)%60]
			again, err := other.Score(ctx, client.ScoreReq{Board: board, Member: "grinder", Delta: client.Int(7), ID: fmt.Sprintf("run-%d", i)})
			if err != nil || !again.Duplicate || again.Capped != acks[i].Capped || again.Applied != acks[i].Applied || again.Score != acks[i].Score {
				t.Fatalf("%s: run-%d again through the other node: %+v, %v; first %+v", board, i, again, err, acks[i])
			}
		}
		cancel()
	}
}
