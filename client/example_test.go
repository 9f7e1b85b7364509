package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
)

// A bot with a server token reports scores for any member; the ack carries
// the member's new score and rank from the same atomic step.
func ExampleClient_Score() {
	g, stop, err := newGateway()
	if err != nil {
		panic(err)
	}
	defer stop()
	ctx := context.Background()

	c, err := client.Dial(ctx, g.URL, mint("bot", auth.Server), &client.Options{Reconnect: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	for _, e := range []struct {
		member string
		delta  int64
	}{{"alice", 50}, {"bob", 70}, {"alice", 30}} {
		ack, err := c.Score(ctx, client.ScoreReq{Board: "run_hero", Member: e.member, Delta: client.Int(e.delta)})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: score %d, rank %d\n", ack.Member, ack.Score, ack.Rank)
	}

	// Re-sending an id is safe: it is applied at most once.
	ack, _ := c.Score(ctx, client.ScoreReq{Board: "run_hero", Member: "bob", Delta: client.Int(5), ID: "match-17"})
	again, _ := c.Score(ctx, client.ScoreReq{Board: "run_hero", Member: "bob", Delta: client.Int(5), ID: "match-17"})
	fmt.Println(ack.Score, again.Score, again.Duplicate)
	// Output:
	// alice: score 50, rank 1
	// bob: score 70, rank 1
	// alice: score 80, rank 1
	// 75 75 true
}

// A spectator subscribes to a board's top 3 and reads the newest frame.
func ExampleClient_Subscribe() {
	g, stop, err := newGateway()
	if err != nil {
		panic(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	bot, err := client.Dial(ctx, g.URL, mint("bot", auth.Server), nil)
	if err != nil {
		panic(err)
	}
	defer bot.Close()
	spectator, err := client.Dial(ctx, g.URL, mint("viewer", auth.Spectator), nil)
	if err != nil {
		panic(err)
	}
	defer spectator.Close()

	sub, err := spectator.Subscribe(ctx, "finals", client.SubOpts{Top: 3})
	if err != nil {
		panic(err)
	}
	for i, m := range []string{"ann", "ben", "cid", "dot"} {
		if _, err := bot.Score(ctx, client.ScoreReq{Board: "finals", Member: m, Delta: client.Int(int64(10 * (i + 1)))}); err != nil {
			panic(err)
		}
	}
	for top := range sub.Top() { // frames coalesce: wait for the one with all four
		if top.Total == 4 {
			for _, e := range top.Entries {
				fmt.Println(e.Rank, e.Member, e.Score)
			}
			break
		}
	}
	// Output:
	// 1 dot 40
	// 2 cid 30
	// 3 ben 20
}

// Errors from the gateway are *client.Error values with a contract code.
func ExampleError() {
	g, stop, err := newGateway()
	if err != nil {
		panic(err)
	}
	defer stop()
	ctx := context.Background()
	c, err := client.Dial(ctx, g.URL, mint("viewer", auth.Spectator), nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()

	_, err = c.Score(ctx, client.ScoreReq{Board: "finals", Delta: client.Int(1)})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code)
	}
	// Output: forbidden
}
