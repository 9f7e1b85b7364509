package redisstore

// The estimate of the Redis server clock.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"strconv"

	// clock estimates the Redis server's clock (see the package comment).
	"github.com/wsgateway/wsgateway/rank"
)

type clock struct {
	injected func() time.Time

	mu     sync.Mutex    // guards offset and synced
	offset time.Duration // server time - local time
	synced time.Time     // local time of the last sync; zero forces one
	// syncing: a resync is under way; the others read the old estimate
	// meanwhile rather than each asking TIME (a storm of subscribes at
	// the moment the estimate ages would otherwise send one each).
	syncing atomic.Bool
}

const clockResync = 5 * time.Second

func (c *clock) sync(ctx context.Context, client redis.UniversalClient) error {
	if c.injected != nil {
		return nil
	}
	t0 := time.Now()
	st, err := client.Time(ctx).Result()
	if err != nil {
		return err
	}
	t1 := time.Now()
	mid := t0.Add(t1.Sub(t0) / 2)
	c.mu.Lock()
	c.offset, c.synced = st.Sub(mid), t1
	c.mu.Unlock()
	return nil
}

// now is the estimated server time, resynced when old. A failed resync
// keeps the old estimate: the script checks it anyway.
func (c *clock) now(ctx context.Context, client redis.UniversalClient) time.Time {
	if c.injected != nil {
		return c.injected()
	}
	c.mu.Lock()
	off, synced := c.offset, c.synced
	c.mu.Unlock()
	if time.Since(synced) >= clockResync && c.syncing.CompareAndSwap(false, true) {
		if err := c.sync(ctx, client); err == nil {
			c.mu.Lock()
			off = c.offset
			c.mu.Unlock()
		}
		c.syncing.Store(false)
	}
	return time.Now().Add(off)
}

func (c *clock) invalidate() {
	c.mu.Lock()
	c.synced = time.Time{}
	c.mu.Unlock()
}

// now reads the store clock once: the time to pick period keys with and the
// script's clock argument ("" = the script reads TIME).
func (s *Store) now(ctx context.Context, b rank.Board) (time.Time, string) {
	if s.cfg.Now != nil {
		t := s.cfg.Now()
		return t, strconv.FormatInt(t.UnixMilli(), 10)
	}
	if b.Reset == rank.None {
		return time.Time{}, "" // no periods: the time is not used
	}
	return s.clock.now(ctx, s.client), ""
}

// Now is the store clock: the injected one, else the estimate of Redis
// TIME (clock.go), resynced every few seconds.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if s.closed.Load() {
		return time.Time{}, ErrClosed
	}
	return s.clock.now(ctx, s.client), nil
}

// monoNow is the local time read from the monotonic clock alone: half
// the cost of a time.Now, which reads the wall clock too. Its wall reading
// drifts from the real one by whatever the wall clock was stepped since New,
// so it is for deadlines and durations (compared with times that carry a
// monotonic reading, as time.Now's do), never for the store clock.
func (s *Store) monoNow() time.Time { return s.epoch.Add(time.Since(s.epoch)) }
