package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// startCluster starts a three-master Redis Cluster on free ports and
// returns its redis-cluster:// url.
func startCluster(t *testing.T) string {
	t.Helper()
	return testenv.StartRedisCluster(t, 3).URL()
}

// The whole conformance suite and the differential test on a three-node
// Redis Cluster: every script's keys share the board's hash tag, so every
// script runs on one node; DeleteBoard scans each master.
func TestCluster(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	url := startCluster(t)
	factory := func(t *testing.T, now func() time.Time) rank.Store {
		client, err := NewClient(url)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := client.(*redis.ClusterClient); !ok {
			t.Fatalf("NewClient(%s) = %T, want a cluster client", url, client)
		}
		s, err := New(context.Background(), client, rank.Hooks{}, Config{Now: now, Prefix: "c" + strings.TrimPrefix(t.Name(), "TestCluster/")})
		if err != nil {
			client.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("Conformance", func(t *testing.T) { ranktest.Run(t, factory) })
	t.Run("ShardsSpread", func(t *testing.T) { testShardsSpread(t, factory(t, nil).(*Store)) })
	t.Run("EraseScan", func(t *testing.T) {
		testEraseScan(t, func(t *testing.T, now func() time.Time) *Store { return factory(t, now).(*Store) })
	})
	t.Run("Differential", func(t *testing.T) {
		ranktest.Differential(t, newMem(t), factory(t, nil), 7, 1500)
	})
	t.Run("CohortNodes", func(t *testing.T) {
		clk := ranktest.NewClock(time.Now())
		ranktest.CohortNodes(t, clk, factory(t, clk.Now), factory(t, clk.Now)) // one prefix: two nodes
	})
}

// Applies keep flowing while the board's slot moves to another master:
// an apply that meets the half-moved slot (TRYAGAIN) is sent again by the
// lane, the store answers each event once (ok, or unavailable when the
// move outlasts the lane's budget, after which the caller re-sends the
// same id), and the board holds every acknowledged event exactly once.
func TestClusterSlotMigration(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	c := testenv.StartRedisCluster(t, 3)
	client, err := NewClient(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.LogBuffer{}
	s, err := New(t.Context(), client, rank.Hooks{}, Config{Prefix: "mig",
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const board = "mig"
	mustPut(t, s, rank.DefaultBoard(board))

	// Writers: each sends its events in order, re-sending an event that
	// got unavailable with the same id; the first ack of each id is kept.
	var mu sync.Mutex
	want := map[string]int64{}
	var acked, unavailable atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				e := incr(board, fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("m%d", i%20), int64(1+i%7))
				resent := false
				for {
					r, err := rank.ApplyWait(t.Context(), s, e)
					if errors.Is(err, rank.ErrUnavailable) {
						unavailable.Add(1)
						resent = true
						continue
					}
					// A re-send may find the event applied (unavailable
					// does not say it was not: R13, R4) and answers the
					// first result as a duplicate; a first send may not.
					if err != nil || (r.Duplicate && !resent) {
						errs <- fmt.Errorf("apply %s: %+v %v", e.ID, r, err)
						return
					}
					break
				}
				acked.Add(1)
				mu.Lock()
				want[e.Member] += e.Amount
				mu.Unlock()
			}
		}()
	}
	// acks reaches n, or a writer's error ends the test with that error
	// (a writer that failed stops acking: waiting would only time out).
	acks := func(n int64) func() bool {
		return func() bool {
			select {
			case err := <-errs:
				t.Fatal(err)
			default:
			}
			return acked.Load() >= n
		}
	}
	testenv.Until(t, 30*time.Second, "1000 events applied", acks(1000))

	slot := c.KeySlot(t, board)
	from := c.Owner(t, slot)
	to := (from + 1) % 3
	rounds := 0
	moved := c.MigrateSlot(t, slot, from, to, 20, func() {
		if rounds++; rounds == 1 {
			testenv.Until(t, 10*time.Second, "an apply to meet the migrating slot", func() bool {
				return strings.Contains(logs.String(), "slot busy")
			})
		}
	})
	after := acked.Load()
	// Generous for a loaded machine; an apply path stalled by the move
	// still fails.
	testenv.Until(t, 90*time.Second, "500 events applied after the move", acks(after+500))
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	t.Logf("moved %d keys in %d rounds; %d events acked, %d unavailable answers re-sent; lane retries: %d",
		moved, rounds, acked.Load(), unavailable.Load(), strings.Count(logs.String(), "slot busy"))
	page, err := s.Top(t.Context(), board, "", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != len(want) {
		t.Errorf("board has %d members, want %d", len(page.Entries), len(want))
	}
	for _, e := range page.Entries {
		if e.Score != want[e.Member] {
			t.Errorf("%s: score %d, acknowledged events sum to %d", e.Member, e.Score, want[e.Member])
		}
	}
	if got := c.Owner(t, slot); got != to {
		t.Errorf("slot %d served by %d after the move, want %d", slot, got, to)
	}
}

// replyErr is an error reply as go-redis hands it over.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// Which replies the lane waits out (the script ran nowhere and will run
// soon) and which it answers at once; a busy one still there when the
// lane gives up maps to unavailable.
func TestIsBusy(t *testing.T) {
	for _, c := range []struct {
		err  error
		busy bool
	}{
		{replyErr("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{replyErr("MOVED 3999 127.0.0.1:7002"), true},
		{replyErr("ASK 3999 127.0.0.1:7002"), true},
		{fmt.Errorf("wrapped: %w", replyErr("TRYAGAIN x")), true},
		{replyErr("CLUSTERDOWN Hash slot not served"), false},
		{replyErr("ASKING is not a reply"), false},
		{replyErr("LB stale"), false},
		{errors.New("TRYAGAIN but not a reply"), false},
		{context.DeadlineExceeded, false},
		{nil, false},
	} {
		if got := isBusy(c.err); got != c.busy {
			t.Errorf("isBusy(%v) = %v, want %v", c.err, got, c.busy)
		}
		if !c.busy {
			continue
		}
		// Still busy when the lane gives up: unavailable, so clients retry.
		s := &Store{}
		if err := s.fail("apply", "b", c.err); !errors.Is(err, rank.ErrUnavailable) {
			t.Errorf("fail(%v) = %v, want unavailable", c.err, err)
		}
	}
}

func TestHashTag(t *testing.T) {
	for key, want := range map[string]string{
		"lb:{board}:cfg":     "board",
		"lb:{board#3}:z:0":   "board#3",
		"lb:{}:x":            "lb:{}:x", // an empty tag is no tag
		"lb:boards":          "lb:boards",
		"lb:{a}{b}":          "a",
		"lb:{unterminated:x": "lb:{unterminated:x",
	} {
		if got := hashTag(key); got != want {
			t.Errorf("hashTag(%q) = %q, want %q", key, got, want)
		}
	}
}

// One master of three killed: applies to a board on it are answered
// unavailable, and once one has failed the next ones are answered without
// a send (downSlots) so they do not hold up the lane; a board on another
// master keeps being applied; once the master is back its board is
// applied again.
func TestClusterMasterDown(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	c := testenv.StartRedisCluster(t, 3, "--appendonly", "yes", "--appendfsync", "always")
	client, err := NewClient(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(t.Context(), client, rank.Hooks{}, Config{Prefix: "down"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	boardOn := func(master int) string {
		for i := range 1000 {
			id := fmt.Sprintf("b%d", i)
			if c.Owner(t, c.KeySlot(t, id)) == master {
				mustPut(t, s, rank.DefaultBoard(id))
				return id
			}
		}
		t.Fatalf("no board on master %d", master)
		return ""
	}
	dead, live := boardOn(0), boardOn(1)
	mustApply(t, s, incr(dead, "before", "a", 1))
	mustApply(t, s, incr(live, "before", "a", 1))

	c.Nodes[0].Kill()
	skipped := false
	for i := 0; i < 20 && !skipped; i++ {
		_, err := rank.ApplyWait(t.Context(), s, incr(dead, fmt.Sprintf("down-%d", i), "a", 1))
		if !errors.Is(err, rank.ErrUnavailable) {
			t.Fatalf("apply %d to the dead master's board: %v, want unavailable", i, err)
		}
		skipped = strings.Contains(err.Error(), "did not answer")
	}
	if !skipped {
		t.Error("20 applies to the dead master's board were all sent; none answered from downSlots")
	}
	for i := range 20 {
		mustApply(t, s, incr(live, fmt.Sprintf("live-%d", i), "a", 1))
	}

	c.Nodes[0].Start()
	c.WaitOK(t, 30*time.Second)
	testenv.Eventually(t, 20*time.Second, "the dead master's board applied again", func() error {
		_, err := rank.ApplyWait(t.Context(), s, incr(dead, "after", "a", 1))
		return err
	})
	for board, want := range map[string]int64{dead: 2, live: 21} {
		page, err := s.Top(t.Context(), board, "", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Entries) != 1 || page.Entries[0].Score != want {
			t.Errorf("board %s: %+v, want a at %d", board, page.Entries, want)
		}
	}
}

// An apply never runs while its board's slot migrates, even when every
// key it declares is still on the source: its records live in a bucket
// hash it does not declare, and one that has moved already is not on the
// source (Redis fails the script part way, an internal error, or a
// record goes unseen). The guard key (never written) makes such a call
// meet TRYAGAIN, so it is answered unavailable, which is safe to re-send;
// once the slot has moved, the retry is a duplicate of the first result.
func TestClusterMigratingRecordsNotSplit(t *testing.T) {
	t.Parallel()
	c := testenv.StartRedisCluster(t, 2)
	client, err := NewClient(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(t.Context(), client, rank.Hooks{}, Config{Prefix: "split", Timeout: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const board = "split"
	b := rank.DefaultBoard(board)
	b.MaxSubmissions = 10 // its count hash exists after an event
	mustPut(t, s, b)
	if _, err := s.BanMember(t.Context(), board, rank.Ban{Member: "x", Reason: "test"}); err != nil {
		t.Fatal(err) // its ban hash exists
	}
	e := incr(board, "e1", "m", 5)
	e.Name = "Ann" // its names hash exists
	first := mustApply(t, s, e)

	slot := c.KeySlot(t, board)
	from := c.Owner(t, slot)
	to := 1 - from
	src, dst := c.Nodes[from], c.Nodes[to]
	do := func(addr string, args ...string) any {
		t.Helper()
		v, err := testenv.RedisDo(addr, args...)
		if err != nil {
			t.Fatalf("%s on %s: %v", strings.Join(args, " "), addr, err)
		}
		return v
	}
	do(dst.Addr(), "CLUSTER", "SETSLOT", fmt.Sprint(slot), "IMPORTING", c.IDs[from])
	do(src.Addr(), "CLUSTER", "SETSLOT", fmt.Sprint(slot), "MIGRATING", c.IDs[to])
	// Only the record buckets move; every key apply.lua declares but the
	// guard stays on the source.
	recs := do(src.Addr(), "KEYS", "split:{split}:r:*").([]any)
	if len(recs) == 0 {
		t.Fatal("no record bucket on the source")
	}
	args := []string{"MIGRATE", "127.0.0.1", fmt.Sprint(dst.Port), "", "0", "5000", "KEYS"}
	for _, k := range recs {
		args = append(args, k.(string))
	}
	do(src.Addr(), args...)

	r, err := rank.ApplyWait(t.Context(), s, e)
	if err == nil && (!r.Duplicate || r.Score != first.Score) {
		t.Fatalf("retry while the records are on the other master: %+v, a second apply (first %+v)", r, first)
	}
	if err != nil && !errors.Is(err, rank.ErrUnavailable) {
		t.Fatalf("retry during the migration: %v, want unavailable", err)
	}
	c.MigrateSlot(t, slot, from, to, 100, nil) // the rest of the slot, then its new owner
	testenv.Until(t, 10*time.Second, "the retry answered after the move", func() bool {
		r, err = rank.ApplyWait(t.Context(), s, e)
		return err == nil
	})
	if !r.Duplicate || r.Score != first.Score || r.Seq != first.Seq {
		t.Fatalf("retry after the move: %+v, want a duplicate of %+v", r, first)
	}
}
