package redisstore

import (
	"context"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// boardLoad is one read of a board's config that every caller missing the
// cache meanwhile waits for: when an entry ages out under load (every
// score and subscribe of the board asks for it), one HMGET goes to Redis,
// not one per caller.
type boardLoad struct {
	done chan struct{}
	c    cachedBoard
	err  error
}

// sharedLoad reads board id's config, sharing a read already under way.
// The read is bounded by the store's timeout, not by the first caller's
// context: a caller that leaves does not fail the others.
func (s *Store) sharedLoad(ctx context.Context, id string) (*cachedBoard, error) {
	s.mu.Lock()
	l := s.loads[id]
	if c := s.boards[id]; l == nil && c != nil && time.Since(c.at) < c.ttl() {
		// A load finished between this caller's cache miss and now: its
		// entry answers, where a second read would only repeat it.
		s.mu.Unlock()
		if c.unknown {
			return nil, rank.ErrUnknownBoard
		}
		return c, nil
	}
	if l == nil {
		l = &boardLoad{done: make(chan struct{})}
		if s.loads == nil {
			s.loads = make(map[string]*boardLoad)
		}
		s.loads[id] = l
		s.mu.Unlock()
		go func() {
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Timeout)
			l.c, l.err = s.loadBoard(lctx, id)
			cancel()
			s.mu.Lock()
			delete(s.loads, id)
			s.mu.Unlock()
			close(l.done)
		}()
	} else {
		s.mu.Unlock()
	}
	select {
	case <-l.done:
	case <-ctx.Done():
	}
	// A caller that has left gets no answer even when the load finished
	// first: select picks at random among ready cases.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if l.err != nil {
		return nil, l.err
	}
	return &l.c, nil
}
