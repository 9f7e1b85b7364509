package redisstore

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// TestClusterFailoverLedger is R25 (docs/protocol.md §10) on a Redis
// Cluster of three masters with one replica each: writers send +1 events
// to a board on each master and re-send each with the same id until it
// gets a definite answer (R4, R13) while one master is SIGKILLed mid-load
// and the cluster promotes its replica; the killed master is then started
// again and rejoins as the new master's replica. The replica is made to
// lag at the kill (its link cut while the master writes on), the case
// asynchronous replication loses.
//
// With Replicas = 1, every member's final score equals its acknowledged
// events: nothing acknowledged is lost, nothing counts twice; the boards
// of the other masters are acknowledged throughout, and the killed
// master's board again once its slots have a master with a replica, with
// the same store. With Replicas = 0 the run only reports how many
// acknowledged events the failover lost (docs/reliability.md).
func TestClusterFailoverLedger(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	t.Run("replicas=1", func(t *testing.T) { clusterFailoverLedger(t, 1) })
	t.Run("replicas=0", func(t *testing.T) { clusterFailoverLedger(t, 0) })
}

func clusterFailoverLedger(t *testing.T, replicas int) {
	c := testenv.StartRedisClusterReplicas(t, 3, 1)
	s := newOn(t, c.URL(), rank.Hooks{}, Config{Prefix: "cfo", Replicas: replicas, ReplicaTimeout: 500 * time.Millisecond, Logger: tlog(t)})
	const dead = 0 // the master killed; node 3 is its replica
	var boards [3]string
	for m := range boards {
		boards[m] = boardOnMaster(t, c, s, m, fmt.Sprintf("m%d-", m))
	}
	const members = 4
	var (
		mu      sync.Mutex
		acked   [3][members]int64
		total   [3]atomic.Int64 // events acknowledged, per board
		resends atomic.Int64
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for w := range 6 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				b, m := w%3, (w/3+i)%members
				e := incr(boards[b], fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("p%d", m), 1)
				for {
					_, err := rank.ApplyWait(t.Context(), s, e)
					if err == nil {
						break
					}
					if !rank.IsUnavailable(err) || errors.Is(err, ErrClosed) {
						t.Errorf("apply %s to %s: %v", e.ID, e.Board, err)
						return
					}
					resends.Add(1)
					select {
					case <-stop: // the test ended: this event stays unacknowledged
						return
					case <-time.After(10 * time.Millisecond): // a client's back-off
					}
				}
				mu.Lock()
				acked[b][m]++
				mu.Unlock()
				total[b].Add(1)
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	waitAcks := func(b int, n int64, within time.Duration, what string) {
		t.Helper()
		target := total[b].Load() + n
		testenv.Until(t, within, what, func() bool { return total[b].Load() >= target })
	}

	for b := range boards {
		waitAcks(b, 100, 30*time.Second, "acks before the kill")
	}
	// The replica falls behind before the kill: its link is cut and
	// cannot come back (a wrong masterauth), and the master writes on
	// alone for a while. What it acknowledged meanwhile exists on no
	// replica.
	old, replica := c.Nodes[dead], c.Nodes[3]
	mustDo(t, replica.Addr(), "CONFIG", "SET", "masterauth", "not-the-password")
	mustDo(t, old.Addr(), "CLIENT", "KILL", "TYPE", "replica")
	cut, pipes := replOffset(t, old.Addr()), s.LaneStats().Pipelines
	testenv.Eventually(t, 10*time.Second, "the master writing on without its replica", func() error {
		if off, p := replOffset(t, old.Addr()), s.LaneStats().Pipelines; off <= cut || p < pipes+8 {
			return fmt.Errorf("offset %d (%d at the cut), %d pipelines since", off, cut, p-pipes)
		}
		return nil
	})
	old.Kill()
	killed := time.Now()
	mustDo(t, replica.Addr(), "CONFIG", "SET", "masterauth", "")
	for b := 1; b < 3; b++ {
		waitAcks(b, 50, 10*time.Second, "acks on the other masters while one is down")
	}
	promoted := c.WaitPromoted(t, dead, 30*time.Second)
	at := time.Now()
	t.Logf("node %d promoted %s after the kill", promoted, at.Sub(killed).Round(time.Millisecond))
	if replicas == 0 {
		waitAcks(dead, 50, 15*time.Second, "acks on the promoted master")
		t.Logf("acks resumed %s after the promotion", time.Since(at).Round(time.Millisecond))
	}
	// The killed master comes back as the promoted one's replica; with
	// Replicas = 1 its slots are acknowledged again only then.
	old.Start()
	c.WaitOK(t, 30*time.Second)
	c.WaitReplicas(t, 30*time.Second)
	rejoined := time.Now()
	waitAcks(dead, 50, 15*time.Second, "acks once the promoted master has a replica")
	t.Logf("acks on the promoted master %s after its replica rejoined", time.Since(rejoined).Round(time.Millisecond))
	for b := range boards {
		waitAcks(b, 100, 30*time.Second, "acks after the failover")
	}
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	if t.Failed() {
		return
	}

	var lost, sum int64
	for b, board := range boards {
		pg, err := s.Top(t.Context(), board, rank.PeriodSel(""), 0, 100)
		if err != nil {
			t.Fatalf("Top %s: %v", board, err)
		}
		got := map[string]int64{}
		for _, e := range pg.Entries {
			got[e.Member] = e.Score
		}
		for m := range members {
			name := fmt.Sprintf("p%d", m)
			sum += acked[b][m]
			if got[name] > acked[b][m] {
				t.Errorf("%s/%s: score %d above its %d acknowledged events: an event counted twice", board, name, got[name], acked[b][m])
			}
			lost += acked[b][m] - got[name]
			if b != dead && got[name] != acked[b][m] {
				t.Errorf("%s/%s on a master never killed: score %d, %d acknowledged", board, name, got[name], acked[b][m])
			}
		}
	}
	t.Logf("replicas=%d: %d events acknowledged, %d re-sends, %d acknowledged events lost in the failover", replicas, sum, resends.Load(), lost)
	if replicas > 0 && lost != 0 {
		t.Errorf("with replicas=%d the failover lost %d acknowledged events; acknowledged %v", replicas, lost, acked)
	}
}
