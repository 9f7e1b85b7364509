package redisstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// TestSentinelFailoverLedger is R25 (docs/protocol.md §10) on a master,
// two replicas and three Sentinels: writers send +1 events and re-send
// each with the same id until it gets a definite answer (R4, R13) while
// the master is SIGKILLed mid-load and Sentinel promotes a replica. The
// new master starts without the scripts (flushed on the replicas), so the
// engine must load them there again.
//
// With Replicas = 1, every member's final score equals its acknowledged
// events: nothing acknowledged is lost, nothing counts twice; and acks
// resume within 5 s of the promotion with the same store. The replicas
// are made to lag at the kill (their links cut while the master writes
// on), the case asynchronous replication loses. With Replicas =
// 0 the run only reports how many acknowledged events the failover lost
// (docs/reliability.md).
func TestSentinelFailoverLedger(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	t.Run("replicas=1", func(t *testing.T) { failoverLedger(t, 1) })
	t.Run("replicas=0", func(t *testing.T) { failoverLedger(t, 0) })
}

func failoverLedger(t *testing.T, replicas int) {
	rs := testenv.StartRedisSentinel(t, 2, 3)
	s := newOn(t, rs.URL(), rank.Hooks{}, Config{Prefix: "fo", Replicas: replicas, ReplicaTimeout: 500 * time.Millisecond, Logger: tlog(t)})
	mustPut(t, s, rank.DefaultBoard("failover"))
	const members = 8
	var (
		mu      sync.Mutex
		acked   [members]int64
		total   atomic.Int64 // events acknowledged
		resends atomic.Int64
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				m := (w + i) % members
				e := incr("failover", fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("m%d", m), 1)
				for {
					_, err := rank.ApplyWait(t.Context(), s, e)
					if err == nil {
						break
					}
					if !errors.Is(err, rank.ErrUnavailable) || errors.Is(err, ErrClosed) {
						t.Errorf("apply %s: %v", e.ID, err)
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
				acked[m]++
				mu.Unlock()
				total.Add(1)
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	waitAcks := func(n int64, within time.Duration, what string) {
		t.Helper()
		target := total.Load() + n
		testenv.Until(t, within, what, func() bool { return total.Load() >= target })
	}

	waitAcks(400, 30*time.Second, "acks before the kill")
	for _, r := range rs.Redis[1:] {
		if _, err := testenv.RedisDo(r.Addr(), "SCRIPT", "FLUSH"); err != nil {
			t.Fatalf("SCRIPT FLUSH on replica %s: %v", r.Addr(), err)
		}
	}
	// The replicas fall behind before the kill, as they do under load on
	// a real network: their links are cut and cannot come back (a wrong
	// masterauth), and the master writes on alone for a while. What it
	// acknowledged meanwhile exists on no replica.
	old := rs.Master(t)
	for _, r := range rs.Redis {
		if r != old {
			mustDo(t, r.Addr(), "CONFIG", "SET", "masterauth", "not-the-password")
		}
	}
	mustDo(t, old.Addr(), "CLIENT", "KILL", "TYPE", "replica")
	cut, pipes := replOffset(t, old.Addr()), s.LaneStats().Pipelines
	testenv.Eventually(t, 10*time.Second, "the master writing on without its replicas", func() error {
		if off, p := replOffset(t, old.Addr()), s.LaneStats().Pipelines; off <= cut || p < pipes+8 {
			return fmt.Errorf("offset %d (%d at the cut), %d pipelines since", off, cut, p-pipes)
		}
		return nil
	})
	old.Kill()
	killed := time.Now()
	for _, r := range rs.Redis {
		if r != old {
			mustDo(t, r.Addr(), "CONFIG", "SET", "masterauth", "")
		}
	}
	testenv.Eventually(t, 5*time.Second, "Ping failing while no master answers (/readyz 503)", func() error {
		if err := s.Ping(t.Context()); !errors.Is(err, rank.ErrUnavailable) {
			return fmt.Errorf("Ping: %v", err)
		}
		return nil
	})
	promoted := rs.WaitPromoted(t, old, 30*time.Second)
	at := time.Now()
	t.Logf("%s promoted %s after the kill", promoted.Addr(), at.Sub(killed).Round(time.Millisecond))
	waitAcks(50, 5*time.Second, "acks resumed after the promotion")
	t.Logf("acks resumed %s after the promotion", time.Since(at).Round(time.Millisecond))
	waitAcks(400, 30*time.Second, "acks after the failover")
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	if t.Failed() {
		return
	}

	pg, err := s.Top(t.Context(), "failover", rank.PeriodSel(""), 0, 100)
	if err != nil {
		t.Fatalf("Top: %v", err)
	}
	got := map[string]int64{}
	for _, e := range pg.Entries {
		got[e.Member] = e.Score
	}
	var lost, sum int64
	for m := range members {
		name := fmt.Sprintf("m%d", m)
		sum += acked[m]
		if got[name] > acked[m] {
			t.Errorf("%s: score %d above its %d acknowledged events: an event counted twice", name, got[name], acked[m])
		}
		lost += acked[m] - got[name]
	}
	t.Logf("replicas=%d: %d events acknowledged, %d re-sends, %d acknowledged events lost in the failover", replicas, sum, resends.Load(), lost)
	if replicas > 0 && lost != 0 {
		t.Errorf("with replicas=%d the failover lost %d acknowledged events; standings %v, acknowledged %v", replicas, lost, got, acked)
	}
}

func mustDo(t *testing.T, addr string, args ...string) {
	t.Helper()
	if _, err := testenv.RedisDo(addr, args...); err != nil {
		t.Fatalf("%v on %s: %v", args, addr, err)
	}
}

// replOffset is the server's master_repl_offset.
func replOffset(t *testing.T, addr string) int64 {
	t.Helper()
	v, err := testenv.RedisDo(addr, "INFO", "replication")
	if err != nil {
		t.Fatalf("INFO replication on %s: %v", addr, err)
	}
	var off int64
	for _, line := range strings.Split(fmt.Sprint(v), "\n") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "master_repl_offset:"); ok {
			off, _ = strconv.ParseInt(n, 10, 64)
		}
	}
	return off
}
