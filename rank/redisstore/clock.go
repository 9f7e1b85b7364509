package redisstore

// The estimate of the Redis server clock.

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// clock estimates the Redis server's clock (see the package comment).
type clock struct {
	injected func() time.Time

	mu     sync.Mutex    // guards offset and synced
	offset time.Duration // server time - local time
	synced time.Time     // local time of the last sync; zero forces one
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
	if time.Since(synced) >= clockResync {
		if err := c.sync(ctx, client); err == nil {
			c.mu.Lock()
			off = c.offset
			c.mu.Unlock()
		}
	}
	return time.Now().Add(off)
}

func (c *clock) invalidate() {
	c.mu.Lock()
	c.synced = time.Time{}
	c.mu.Unlock()
}
