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
// A budget belongs to the member, not to its connections: it outlives
// them, so a dial / burst / close loop meets the same bucket each time,
// and a connection that becomes a player's by `auth` meets it too. A
// bucket left alone for its refill time is full again, so forgetting it
// then changes nothing: each shard sweeps those out at most once per
// refill time, and past maxMemberBudgets the members with none share one
// overflow bucket, so the map's memory is bounded whatever the tokens.
type memberRates struct {
	perSec int           // events per second per member; burst 2×
	full   time.Duration // an idle bucket is full again after this long
	seed   maphash.Seed
	shards [16]rateShard
}

// maxMemberBudgets bounds the budgets remembered at once: members that
// scored within the refill time, which real traffic keeps far below it.
const maxMemberBudgets = 1 << 18

type rateShard struct {
	mu       sync.Mutex // guards the fields below
	m        map[string]*memberRate
	swept    time.Time
	overflow *rate.Limiter
}

type memberRate struct {
	lim  *rate.Limiter
	seen time.Time // the last event taken or refused
}

func (r *memberRates) init(perSec int) {
	r.perSec = max(perSec, 1)
	r.full = 2 * time.Second // a burst of 2× the rate refills in 2s
	r.seed = maphash.MakeSeed()
	for i := range r.shards {
		r.shards[i].m = make(map[string]*memberRate)
		r.shards[i].overflow = r.newLimiter()
	}
}

func (r *memberRates) newLimiter() *rate.Limiter {
	return rate.NewLimiter(rate.Limit(r.perSec), 2*r.perSec)
}

// take counts one score event of member at now, or says how long until
// its budget allows one (and counts nothing).
func (r *memberRates) take(member string, now time.Time) time.Duration {
	s := &r.shards[maphash.String(r.seed, member)%uint64(len(r.shards))]
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.swept) >= r.full {
		s.swept = now
		for k, mr := range s.m {
			if now.Sub(mr.seen) >= r.full {
				delete(s.m, k)
			}
		}
	}
	lim := s.overflow
	if mr := s.m[member]; mr != nil {
		mr.seen, lim = now, mr.lim
	} else if len(s.m) < maxMemberBudgets/len(r.shards) {
		lim = r.newLimiter()
		s.m[member] = &memberRate{lim: lim, seen: now}
	}
	return wait(lim, now)
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
