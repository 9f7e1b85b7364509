package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// newOn is newHooked on a given --redis-url, with cfg.Prefix as given.
func newOn(t testing.TB, url string, hooks rank.Hooks, cfg Config) *Store {
	t.Helper()
	client, err := NewClient(url)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), client, hooks, cfg)
	if err != nil {
		client.Close()
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// With Replicas = 1 an event is acknowledged only once a replica has it:
// while the only replica is frozen, applies answer unavailable (and the
// change, which the master did make, still reaches the sink); a re-send of
// such an event through another client, whose connection never carried
// the first write, is not acknowledged either until the replica has it;
// once it thaws, the re-send is acknowledged as a duplicate.
func TestReplicaWait(t *testing.T) {
	t.Parallel()
	rs := testenv.StartRedisSentinel(t, 1, 0)
	master, replica := rs.Redis[0], rs.Redis[1]
	var mu sync.Mutex
	var sunk []rank.Change
	hooks := rank.Hooks{Sink: func(ch []rank.Change) {
		mu.Lock()
		sunk = append(sunk, ch...)
		mu.Unlock()
	}}
	// A replica in sync confirms within milliseconds, but CI runs this
	// beside every other package on two cores: the window is the default
	// so that only the frozen replica misses it.
	cfg := Config{Prefix: "rw", Replicas: 1, ReplicaTimeout: time.Second, Timeout: 3 * time.Second, Logger: tlog(t)}
	a := newOn(t, master.URL(), hooks, cfg)
	b := newOn(t, master.URL(), rank.Hooks{}, cfg)
	mustPut(t, a, rank.DefaultBoard("durable"))

	// Through b: its connection's last write is then confirmed, so its
	// own WAIT alone would not hold back the re-send below.
	if _, err := rank.ApplyWait(t.Context(), b, incr("durable", "e1", "m", 5)); err != nil {
		t.Fatalf("apply with the replica in sync: %v", err)
	}
	replica.Pause()
	e2 := incr("durable", "e2", "m", 7)
	if _, err := rank.ApplyWait(t.Context(), a, e2); !errors.Is(err, rank.ErrUnavailable) {
		t.Fatalf("apply with the replica frozen: %v, want unavailable", err)
	}
	mu.Lock()
	heard := len(sunk) == 1 && sunk[0].New == 12
	mu.Unlock()
	if !heard {
		t.Fatalf("sink heard %+v, want the unconfirmed change too", sunk)
	}
	if _, err := rank.ApplyWait(t.Context(), b, e2); !errors.Is(err, rank.ErrUnavailable) {
		t.Fatalf("re-send through another client with the replica frozen: %v, want unavailable", err)
	}
	replica.Resume()
	testenv.Eventually(t, 10*time.Second, "the re-send acknowledged", func() error {
		r, err := rank.ApplyWait(t.Context(), b, e2)
		if err != nil {
			return err
		}
		if !r.Duplicate || r.Score != 12 {
			return fmt.Errorf("re-send answered %+v, want the first result as a duplicate", r)
		}
		return nil
	})
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr()})
	defer rc.Close()
	got, err := rc.ZRangeWithScores(t.Context(), "rw:{durable}:z:0", 0, -1).Result()
	if err != nil || len(got) != 1 || got[0].Score != 12 {
		t.Fatalf("replica's standings %v, %v; want m at 12", got, err)
	}
}

func TestReplicaConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Replicas: 1, ReplicaTimeout: time.Second, Timeout: 2 * time.Second}, ""},
		{Config{Replicas: 0}, ""},
		{Config{Replicas: 1, ReplicaTimeout: 2 * time.Second, Timeout: 2 * time.Second}, "shorter"},
	} {
		err := checkReplicas(tc.cfg)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("checkReplicas(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if err := (&replicaWait{n: 2, timeout: time.Second}).check(redis.NewCmdResult(int64(1), nil)); !errors.Is(err, rank.ErrUnavailable) {
		t.Errorf("WAIT answering 1 of 2: %v", err)
	}
}

func TestNewClientSentinel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url      string
		password string
		db       int
	}{
		{"redis-sentinel://h1:1,h2:2,h3:3/lbmaster", "", 0},
		{"redis-sentinel://:pw@h1:1/lbmaster/3?dial_timeout=1s", "pw", 3},
		{"rediss-sentinel://h1:1/lbmaster?sentinel_password=sp", "", 0},
	} {
		c, err := NewClient(tc.url)
		if err != nil {
			t.Errorf("NewClient(%q): %v", tc.url, err)
			continue
		}
		o := c.(*redis.Client).Options()
		if o.Password != tc.password || o.DB != tc.db || !o.ContextTimeoutEnabled || o.MaxRetries != maxRetries {
			t.Errorf("NewClient(%q): %+v", tc.url, o)
		}
		c.Close()
	}
	for _, bad := range []string{"redis-sentinel://h1:1", "redis-sentinel://h1:1/", "redis-sentinel://h1:1/m/x", "redis-sentinel://h1:1/m/1/2", "redis-sentinel://h1:1,,h2:2/m"} {
		if c, err := NewClient(bad); err == nil {
			c.Close()
			t.Errorf("NewClient(%q) succeeded", bad)
		}
	}
}
