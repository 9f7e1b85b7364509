package hub

import (
	"hash/maphash"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// memberRates share one score-event budget between all of a member's
// connections on this node (players only: spectators do not score, server
// and admin tokens are bots that score for many members). Without it a
// player over MaxConnsPerMember connections could send that many times the
// per-connection rate, and each event costs an idempotency record for the
// whole idempotency window.
//
// A member's limiter lives while the member has a connection here: the
// first connection creates it, the last one's end drops it, so the map is
// bounded by the connections.
type memberRates struct {
	perSec int // events per second per member; burst 2×
	seed   maphash.Seed
	shards [16]rateShard
}

type rateShard struct {
	mu sync.Mutex // guards m
	m  map[string]*memberRate
}

type memberRate struct {
	lim  *rate.Limiter
	refs int // connections holding it
}

func (r *memberRates) init(perSec int) {
	r.perSec = perSec
	r.seed = maphash.MakeSeed()
	for i := range r.shards {
		r.shards[i].m = make(map[string]*memberRate)
	}
}

func (r *memberRates) shard(member string) *rateShard {
	return &r.shards[maphash.String(r.seed, member)%uint64(len(r.shards))]
}

// acquire returns member's limiter, shared with its other connections;
// every acquire is paired with one release.
func (r *memberRates) acquire(member string) *rate.Limiter {
	s := r.shard(member)
	s.mu.Lock()
	defer s.mu.Unlock()
	mr := s.m[member]
	if mr == nil {
		mr = &memberRate{lim: rate.NewLimiter(rate.Limit(r.perSec), 2*r.perSec)}
		s.m[member] = mr
	}
	mr.refs++
	return mr.lim
}

func (r *memberRates) release(member string) {
	s := r.shard(member)
	s.mu.Lock()
	defer s.mu.Unlock()
	if mr := s.m[member]; mr != nil {
		if mr.refs--; mr.refs <= 0 {
			delete(s.m, member)
		}
	}
}

// held is how many members have a limiter (tests).
func (r *memberRates) held() int {
	n := 0
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// wait is how long until lim allows one more event at now; zero: it
// allows it now (and the event is counted).
func wait(lim *rate.Limiter, now time.Time) time.Duration {
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}
