package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/wsgateway/wsgateway/rank"
)

// Region boards (docs/protocol.md §17): an event places its member in the
// region its profile names. The profile lives apart from every board's
// data (on Redis Cluster, in another slot), so the apply script cannot read
// it; the node passes the country it knows, from its profile cache, with
// the event (rank.Event.Region). A profile change drops the cached copy on
// every node (ProfileChanged, the bus), so the next event after it places
// the member by the new country.

// regioned is the node's store with each event on a region board given its
// member's region before it is applied. Every apply path (the hub, the
// REST API) goes through it.
type regioned struct {
	rank.Store
	profs *profileCache
}

// Apply looks up the member's country when the board has regions (its
// config as the store caches it; an unknown board has none, and the store
// refuses the event itself). A member whose profile is cached costs
// nothing more; one that is not waits for one profile read. An event whose
// region cannot be learned is not applied (unavailable: re-sending the
// same id is safe, R4).
func (s regioned) Apply(ctx context.Context, e rank.Event, done rank.Done) {
	b, ok := s.Store.CachedBoard(e.Board)
	if !ok {
		got, _ := s.Store.Board(ctx, e.Board)
		b = &got
	}
	if b.Regions {
		c, err := s.profs.Country(ctx, e.Member)
		if err != nil {
			done(rank.Result{}, fmt.Errorf("node: the region of %s: %w", e.Member, err))
			return
		}
		e.Region = c
	}
	s.Store.Apply(ctx, e, done)
}

// errProfileMoving is a member whose profile changed during each of the
// reads of it that Country made.
var errProfileMoving = errors.New("node: the profile changed during every read of it")

// Country is member's profile country ("" for none) as this node knows it:
// from the cache, else from one read shared with any fetch of the member
// in flight. It fails, with rank.ErrUnavailable, when the read fails or is
// overtaken by a change of the profile three times, or when ctx ends.
func (c *profileCache) Country(ctx context.Context, member string) (string, error) {
	for range 3 {
		c.mu.Lock()
		if el, ok := c.idx[member]; ok {
			c.lru.MoveToFront(el)
			c.hits.Add(1)
			x := el.Value.(*cached)
			c.mu.Unlock()
			return x.p.Country, nil
		}
		c.misses.Add(1)
		f := c.inflight[member]
		start := f == nil
		if start {
			f = &fetch{members: []string{member}, done: make(chan struct{})}
			c.inflight[member] = f
		}
		c.mu.Unlock()
		if start {
			go c.run(f)
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return "", fmt.Errorf("%w: %w", rank.ErrUnavailable, ctx.Err())
		}
		if f.err != nil {
			return "", fmt.Errorf("%w: %w", rank.ErrUnavailable, f.err)
		}
	}
	return "", fmt.Errorf("%w: %w", rank.ErrUnavailable, errProfileMoving)
}
