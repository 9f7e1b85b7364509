package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// restResult is what came back for one element of a scores array.
type restResult struct {
	ID        string             `json:"id"`
	Duplicate bool               `json:"duplicate"`
	Error     *proto.ErrorDetail `json:"error"`
}

// TestRESTArraysRedisKill: scores arrays over REST, which the Redis engine
// applies in pipelines, while Redis is SIGKILLed and restarted
// (appendfsync always). Then every array is sent again, same ids, until
// each element is acknowledged: an element acknowledged before must come
// back a duplicate (nothing acknowledged was lost), and the board must
// hold every event exactly once. An array of 50 spends about a millisecond
// in the lane, so the arrays the outage hits are mostly answered 503 (the
// board unreadable); a failure inside an array is api.TestScoresArrayStall.
func TestRESTArraysRedisKill(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	c := newCluster(t, clusterOpts{Nodes: 1, RedisArgs: []string{"--appendonly", "yes", "--appendfsync", "always"}})
	g := c.nodes[0]
	tok := token(t, auth.Claims{Sub: "tournament", Role: auth.Server})
	url := g.HTTP() + "/api/v1/boards/" + c.board + "/scores"

	var (
		mu     sync.Mutex
		arrays [][]event
		acked  = make(map[string]bool)
	)
	// post sends one array and records the elements acknowledged; it
	// returns those acknowledged before that came back as new (lost).
	post := func(arr []event) (pending, lost int) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		var res []restResult
		st, b, err := rest(ctx, "POST", url, tok, arr, &res)
		if err == nil && st == 503 {
			return len(arr), 0 // the board config unreadable: nothing applied
		}
		if err != nil || st != 200 {
			t.Errorf("e2e: POST an array: %d %s %v; want 200, or 503 while Redis is down", st, b, err)
			return len(arr), 0
		}
		mu.Lock()
		defer mu.Unlock()
		for i, r := range res {
			switch {
			case r.ID != arr[i].ID:
				t.Errorf("e2e: element %d answered as %q, sent %q", i, r.ID, arr[i].ID)
			case r.Error != nil:
				if r.Error.Code != proto.CodeUnavailable {
					t.Errorf("e2e: element %s: %+v; want an ack or unavailable", r.ID, *r.Error)
				}
				pending++
			case acked[r.ID] && !r.Duplicate:
				lost++
			default:
				acked[r.ID] = true
			}
		}
		return pending, lost
	}

	stop, done := make(chan struct{}), make(chan struct{})
	var once sync.Once
	halt := func() { once.Do(func() { close(stop); <-done }) }
	t.Cleanup(halt) // a Fatal below must not leave the poster running
	// failed counts arrays with an element not acknowledged the first time.
	failed := 0
	posted := func() int { mu.Lock(); defer mu.Unlock(); return len(arrays) }
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			arr := make([]event, 50)
			for j := range arr {
				arr[j] = event{ID: fmt.Sprintf("r%d-%d", i, j), Member: fmt.Sprintf("m%02d", (i*7+j)%40), Delta: int64(1 + (i+j)%5)}
			}
			mu.Lock()
			arrays = append(arrays, arr)
			mu.Unlock()
			if pending, _ := post(arr); pending > 0 {
				failed++
			}
		}
	}()
	testenv.Until(t, 30*time.Second, "20 arrays posted", func() bool { return posted() >= 20 })
	killedAt := posted()
	c.Redis.Kill()
	readyz(t, g, false, 5*time.Second)
	time.Sleep(500 * time.Millisecond) // arrays fail while it is down
	c.Redis.Start()
	readyz(t, g, true, 15*time.Second)
	after := posted()
	testenv.Until(t, 30*time.Second, "20 more arrays after the restart", func() bool { return posted() >= after+20 })
	halt()
	if failed == 0 {
		t.Fatal("e2e: no array failed while Redis was down: the outage was not exercised")
	}

	// Every array again, until each element is acknowledged.
	lost := 0
	for _, arr := range arrays {
		for attempt := 0; ; attempt++ {
			pending, l := post(arr)
			lost += l
			if pending == 0 {
				break
			}
			if attempt == 20 {
				t.Fatalf("e2e: %d elements of an array still unacknowledged after 20 re-sends", pending)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if lost != 0 {
		t.Errorf("e2e: %d acknowledged REST events were lost by the SIGKILL (appendfsync always)", lost)
	}

	// The ledger: each member's score is the sum of its events, each once.
	want := make(map[string]int64)
	n := 0
	for _, arr := range arrays {
		for _, e := range arr {
			want[e.Member] += e.Delta
			n++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	entries, _, err := readBoard(ctx, g, adminToken(t), c.board)
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[string]int64)
	for _, e := range entries {
		got[e.Member] = e.Score
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("e2e: board %v; want the sum of every event once %v", got, want)
	}
	t.Logf("%d arrays (%d events), Redis killed after %d, %d arrays not fully acknowledged the first time; every event applied once, none acknowledged lost",
		len(arrays), n, killedAt, failed)
}
