package node_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/node"
	"github.com/wsgateway/wsgateway/rank"
)

// BenchmarkInterestFanIn measures what per-board interest saves
// (docs/performance.md): 3 nodes on one Redis and one nats-server, 300
// boards, each node the home of 100 of them (board j is applied on node
// j%3) and watching 30 (10%, distinct: node i watches boards 30i…30i+29, a
// third of them its own). Ten rounds of one event per board, through REST.
// Per node it reports the change messages it received, and what it would
// have received subscribed to every board as before (every change message
// on NATS but its own: NoEcho), counted by a spy on lb.changes.>. It
// checks that a node received exactly the messages of the boards it
// watches that other nodes published. Run it once:
//
//	go test ./node -run '^$' -bench InterestFanIn -benchtime 1x
func BenchmarkInterestFanIn(b *testing.B) {
	const (
		nodes, boards, rounds = 3, 300, 10
		watch                 = boards / 10
	)
	ids := make([]string, boards)
	var cfgs []rank.Board
	for j := range ids {
		ids[j] = fmt.Sprintf("fan-%03d", j)
		cfgs = append(cfgs, rank.DefaultBoard(ids[j]))
	}
	for b.Loop() {
		ns, url := cluster(b, 0, []string{"n0", "n1", "n2"}, func(c *node.Config) { c.Boards = cfgs })

		// The spy: every change message on NATS, by board.
		nc, err := nats.Connect(url)
		if err != nil {
			b.Fatal(err)
		}
		var mu sync.Mutex
		perBoard := map[string]int64{}
		var total int64
		if _, err := nc.Subscribe("lb.changes.>", func(m *nats.Msg) {
			mu.Lock()
			perBoard[strings.TrimPrefix(m.Subject, "lb.changes.")]++
			total++
			mu.Unlock()
		}); err != nil {
			b.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			b.Fatal(err)
		}

		// Node i's watcher: one connection, 30 boards.
		for i, r := range ns {
			c, err := client.Dial(b.Context(), r.ws, token(b, "watcher", auth.Spectator), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			for j := watch * i; j < watch*(i+1); j++ {
				if _, err := c.Subscribe(b.Context(), ids[j], client.SubOpts{Top: 1}); err != nil {
					b.Fatal(err)
				}
			}
			testenv.Until(b, 10*time.Second, "the node subscribed to its boards", func() bool { return r.n.Bus().Stats().Watched == watch })
		}

		began := time.Now()
		adm := token(b, "root", auth.Admin)
		errs := make(chan error, nodes)
		for i, r := range ns {
			go func() {
				for round := range rounds {
					for j := i; j < boards; j += nodes {
						body := fmt.Sprintf(`[{"id":"f%d-%d","member":"m%d","delta":1}]`, round, j, round%4)
						if st, got := r.rest(b, "POST", "/api/v1/boards/"+ids[j]+"/scores", adm, body); st != 200 {
							errs <- fmt.Errorf("POST %s: %d %s", ids[j], st, got)
							return
						}
					}
				}
				errs <- nil
			}()
		}
		for range nodes {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		for i, r := range ns {
			others := append(append([]*running{}, ns[:i]...), ns[i+1:]...)
			settle(b, r, boards/nodes*rounds, ids[i], others...)
		}
		elapsed := time.Since(began)

		mu.Lock()
		var sumBefore, sumAfter int64
		for i, r := range ns {
			s := r.n.Bus().Stats()
			before := total - s.Messages
			var want int64
			for j := watch * i; j < watch*(i+1); j++ {
				if j%nodes != i {
					want += perBoard[ids[j]]
				}
			}
			if s.In.Changes != want {
				b.Errorf("node %d received %d change messages, want %d (its watched boards' from other nodes)", i, s.In.Changes, want)
			}
			b.Logf("node %d: published %d change messages; received %d (every board: %d), %.1f%%; subscriptions %d",
				i, s.Messages, s.In.Changes, before, 100*float64(s.In.Changes)/float64(before), s.Watched)
			sumBefore += before
			sumAfter += s.In.Changes
		}
		b.Logf("%d events, %d change messages on NATS in %s", boards*rounds, total, elapsed.Round(time.Millisecond))
		mu.Unlock()
		nc.Close()
		b.ReportMetric(float64(sumBefore)/nodes, "msgs-every-board/node")
		b.ReportMetric(float64(sumAfter)/nodes, "msgs-interest/node")
	}
}
