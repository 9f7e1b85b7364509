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
// Cluster of three masters with two replicas each (a failover needs a
// majority of the masters alive to agree): writers send +1 events
// to a board on each master and re-send each with the same id until it
// gets a definite answer (R4, R13) while one master is SIGKILLed mid-load
// and the cluster promotes one of its replicas; the other replica then
// follows the promoted one. The replicas are made to lag at the kill
// (their links cut while the master writes on), the case asynchronous
// replication loses.
//
// With Replicas = 1, every member's final score equals its acknowledged
// events: nothing acknowledged is lost, nothing counts twice; the other
// masters' boards are acknowledged throughout, and the killed master's
// board again within 5 s of the promotion, with the same store. With
// Replicas = 0 the run only reports how many acknowledged events the
// failover lost (docs/reliability.md).
func TestClusterFailoverLedger(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	t.Run("replicas=1", func(t *testing.T) { clusterFailoverLedger(t, 1) })
	t.Run("replicas=0", func(t *testing.T) { clusterFailoverLedger(t, 0) })
}

func clusterFailoverLedger(t *testing.T, replicas int) {
	const masters, dead = 3, 0 // master dead is killed; nodes 3 and 4 are its replicas
	c := testenv.StartRedisClusterReplicas(t, masters, 2)
	s := newOn(t, c.URL(), rank.Hooks{}, Config{Prefix: "cfo", Replicas: replicas, ReplicaTimeout: 500 * time.Millisecond, Logger: tlog(t)})
	var boards [masters]string
	for m := range boards {
		boards[m] = boardOnMaster(t, c, s, m, fmt.Sprintf("m%d-", m))
	}
	const members = 4
	var (
		mu      sync.Mutex
		acked   [masters][members]int64
		total   [masters]atomic.Int64 // events acknowledged, per board
		resends atomic.Int64
		lastErr [masters]atomic.Value // the last unavailable answer per board, for a failure's message
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
				b, m := w%masters, (w/masters+i)%members
				e := incr(boards[b], fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("p%d", m), 1)
				for {
					_, err := rank.ApplyWait(t.Context(), s, e)
					if err == nil {
						break
					}
					if !errors.Is(err, rank.ErrUnavailable) || errors.Is(err, ErrClosed) {
						t.Errorf("apply %s to %s: %v", e.ID, e.Board, err)
						return
					}
					resends.Add(1)
					lastErr[b].Store(fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
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
		testenv.Eventually(t, within, what, func() error {
			if got := total[b].Load(); got < target {
				return fmt.Errorf("%d of %d more; the last unavailable answer %v", got-target+n, n, lastErr[b].Load())
			}
			return nil
		})
	}

	for b := range boards {
		waitAcks(b, 100, 30*time.Second, "acks before the kill")
	}
	// The replicas fall behind before the kill: their links are cut and
	// cannot come back (a wrong masterauth), and the master writes on
	// alone for a while. What it acknowledged meanwhile exists on no
	// replica.
	old := c.Nodes[dead]
	var replicaNodes []*testenv.Redis
	for i, of := range c.ReplicaOf {
		if of == dead {
			replicaNodes = append(replicaNodes, c.Nodes[i])
		}
	}
	for _, r := range replicaNodes {
		mustDo(t, r.Addr(), "CONFIG", "SET", "masterauth", "not-the-password")
	}
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
	for _, r := range replicaNodes {
		mustDo(t, r.Addr(), "CONFIG", "SET", "masterauth", "")
	}
	for b := 1; b < masters; b++ {
		waitAcks(b, 50, 10*time.Second, "acks on the other masters while one is down")
	}
	promoted := c.WaitPromoted(t, dead, 30*time.Second)
	at := time.Now()
	t.Logf("node %d promoted %s after the kill", promoted, at.Sub(killed).Round(time.Millisecond))
	// With Replicas = 1 this needs the other replica to follow the new
	// master and catch up with it.
	waitAcks(dead, 50, 5*time.Second, "acks on the promoted master's board")
	t.Logf("acks resumed %s after the promotion", time.Since(at).Round(time.Millisecond))
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
