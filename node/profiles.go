package node

import (
	"container/list"
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// DefaultProfileCache is the number of members whose profiles (or the
// fact that they have none) a node keeps by default.
const DefaultProfileCache = 100_000

// profileCache decorates entries with profiles (rank.Decorator) from a
// bounded LRU of this node's own, so a frame costs no profile read in steady
// state. Profiles are global and change rarely, while frames are read many
// times a second: a per-node cache invalidated by an event on every change
// (the node's ProfileChanged, the bus's ProfileEvent) keeps frames exact at
// the price of one batched read per member after each change.
//
// Misses of one Decorate call are fetched together, in one Profiles call
// (one pipeline on Redis); a member already being fetched is waited for, not
// fetched twice. A caller waits at most until its ctx ends; a fetch that
// finishes after some caller gave up reports its members to late, which
// re-sends the frames that show them. Members without a profile are cached
// too, so they cost nothing either.
//
// An invalidation that arrives while a fetch of the member is in flight
// marks the fetch's answer for it stale: it is not cached (the answer may
// predate the change).
type profileCache struct {
	src     profileReader
	timeout time.Duration          // bounds one fetch
	late    func(members []string) // called after a fetch some caller did not wait for
	log     *slog.Logger

	reads atomic.Uint64 // fetches made (Profiles calls)
	// hits and misses count the entries Decorate found cached and those it
	// had to read (or wait for), for metrics.
	hits, misses atomic.Uint64

	mu       sync.Mutex // guards everything below
	max      int
	lru      *list.List               // of *cached, most recently used first
	idx      map[string]*list.Element // member → its element in lru
	inflight map[string]*fetch        // member → the fetch reading it
}

// profileReader is the part of rank.Profiles the cache uses.
type profileReader interface {
	Profiles(ctx context.Context, members []string) (map[string]rank.Profile, error)
}

type cached struct {
	member string
	p      rank.Profile
	has    bool
}

// fetch is one batched read of the profiles of members.
type fetch struct {
	members  []string
	done     chan struct{} // closed once the answer is cached
	late     atomic.Bool   // a caller stopped waiting before done
	err      error         // the read's failure, set before done closes
	stale    map[string]bool
	allStale bool // guarded by profileCache.mu, as stale
}

var _ rank.Decorator = (*profileCache)(nil)

func newProfileCache(src profileReader, max int, timeout time.Duration, late func([]string), log *slog.Logger) *profileCache {
	return &profileCache{
		src: src, timeout: timeout, late: late, log: log, max: max,
		lru: list.New(), idx: make(map[string]*list.Element), inflight: make(map[string]*fetch),
	}
}

// Decorate gives entries their profile fields (R20): from the cache, after
// one batched read of the members it lacks, waiting for that read at most
// until ctx ends. Safe for concurrent use.
func (c *profileCache) Decorate(ctx context.Context, lists ...[]rank.Entry) {
	var need []string
	var waits []*fetch
	var f *fetch
	c.mu.Lock()
	for _, es := range lists {
		for i := range es {
			m := es[i].Member
			if el, ok := c.idx[m]; ok {
				c.lru.MoveToFront(el)
				c.hits.Add(1)
				continue
			}
			c.misses.Add(1)
			if g := c.inflight[m]; g != nil {
				if g != f && !slices.Contains(waits, g) {
					waits = append(waits, g)
				}
				continue
			}
			if f == nil {
				f = &fetch{done: make(chan struct{})}
				waits = append(waits, f)
			}
			need = append(need, m)
			c.inflight[m] = f
		}
	}
	c.mu.Unlock()
	if f != nil {
		f.members = need
		go c.run(f)
	}
	for _, g := range waits {
		select {
		case <-g.done:
		case <-ctx.Done():
			g.late.Store(true)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, es := range lists {
		for i := range es {
			if el, ok := c.idx[es[i].Member]; ok {
				if x := el.Value.(*cached); x.has {
					x.p.Decorate(&es[i])
				}
			}
		}
	}
}

// run reads f's members, caches what no invalidation overtook, and tells
// late of them when a caller gave up waiting or the read failed (so frames
// that went out without them are read again).
func (c *profileCache) run(f *fetch) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	c.reads.Add(1)
	got, err := c.src.Profiles(ctx, f.members)
	cancel()
	c.mu.Lock()
	for _, m := range f.members {
		if c.inflight[m] == f {
			delete(c.inflight, m)
		}
		if err == nil && !f.allStale && !f.stale[m] {
			p, ok := got[m]
			c.put(m, p, ok)
		}
	}
	c.mu.Unlock()
	f.err = err
	close(f.done)
	if err != nil {
		c.log.Warn("node: profile read failed; entries show stored names until it succeeds",
			"members", len(f.members), "err", err)
	}
	if err != nil || f.late.Load() {
		c.late(f.members)
	}
}

// put caches one member's profile (has false: none), evicting the least
// recently used past max. Lock held.
func (c *profileCache) put(m string, p rank.Profile, has bool) {
	if el, ok := c.idx[m]; ok {
		el.Value = &cached{m, p, has}
		c.lru.MoveToFront(el)
		return
	}
	c.idx[m] = c.lru.PushFront(&cached{m, p, has})
	for c.lru.Len() > c.max {
		old := c.lru.Remove(c.lru.Back()).(*cached)
		delete(c.idx, old.member)
	}
}

// Invalidate drops members' cached profiles and the answers of fetches of
// them still in flight.
func (c *profileCache) Invalidate(members []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range members {
		if el, ok := c.idx[m]; ok {
			c.lru.Remove(el)
			delete(c.idx, m)
		}
		if f := c.inflight[m]; f != nil {
			if f.stale == nil {
				f.stale = make(map[string]bool)
			}
			f.stale[m] = true
		}
	}
}

// Clear drops every cached profile: profile events may have been lost
// (the bus reconnected or dropped messages).
func (c *profileCache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Init()
	clear(c.idx)
	for _, f := range c.inflight {
		f.allStale = true
	}
}
