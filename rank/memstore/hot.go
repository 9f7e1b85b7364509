package memstore

// Hot boards (docs/protocol.md §8, R22) in memory, as simply as exactness
// allows: each member's per-bucket sums, and the board's one tree ordered
// by the decayed score (in thousandths, rank.Decay.DecayedScore) at the
// bucket it was built for. Within a bucket an event changes one member's
// score, so it moves one node as on any board. When the store's clock
// enters a new bucket every score changes, so the first operation that
// sees it (a write, or a read, which then takes the write lock) recomputes
// every member and rebuilds the tree: O(n log n) once per bucket per board.
// That is acceptable for the memory engine (a single node, boards far
// below a million members in practice; 1M members rebase in about a
// second); the Redis engine spreads the same work over small steps.

import (
	"fmt"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// hotData is a hot board's bucket sums. Its board's lock guards it.
type hotData struct {
	// at is the bucket the tree's scores were computed for.
	at int64
	// sums holds, per member, the sum of its deltas per bucket index: a
	// bucket with an event has an entry even when its sum is 0, since an
	// event in the window keeps the member on the board.
	sums map[string]map[int64]int64
}

func newHot() *hotData {
	return &hotData{at: -1 << 62, sums: map[string]map[int64]int64{}}
}

// hotStale reports whether the tree of a hot board is not that of the
// bucket at now. b.mu is held (either way).
func (b *board) hotStale(now time.Time) bool {
	return b.hot != nil && b.hot.at != b.cfg.Decay.BucketAt(now)
}

// rebase recomputes every member's score for the bucket at now and
// rebuilds the tree, dropping members with no event left in the window.
// b.mu is held for writing. It moves seq: every score may have changed.
func (b *board) rebase(now time.Time) {
	if !b.hotStale(now) {
		return
	}
	d := b.cfg.Decay
	cur := d.BucketAt(now)
	b.hot.at = cur
	b.seq++
	z := b.periods[0]
	if z == nil {
		b.hot.sums = map[string]map[int64]int64{}
		return
	}
	z.tr = newForest(1) // hot boards are never sharded
	for m, sums := range b.hot.sums {
		for idx := range sums {
			if cur-idx >= int64(d.Buckets) {
				delete(sums, idx)
			}
		}
		ks, in := d.HotSums(sums, cur)
		n := z.members[m]
		hidden := n == nil
		if hidden {
			n = z.hidden[m]
		}
		if !in {
			delete(b.hot.sums, m)
			delete(z.members, m)
			delete(z.hidden, m)
			delete(z.counts, m)
			if !b.inAnyPeriod(m) {
				delete(b.names, m)
			}
			continue
		}
		if n == nil { // cannot happen: every member with sums has a node
			continue
		}
		b.setKey(n, d.DecayedScore(ks), n.reached)
		if !hidden {
			z.tr.insert(n)
		}
	}
}

// hotScore is the score member would have after adding delta to bucket eb,
// at bucket cur; the sums are not changed. ErrOutOfRange when the bucket's
// sum would leave ±rank.MaxHotBucketSum.
func (b *board) hotScore(member string, eb, cur, delta int64) (int64, error) {
	d := b.cfg.Decay
	sums := b.hot.sums[member]
	s := sums[eb] + delta
	if s > rank.MaxHotBucketSum || s < -rank.MaxHotBucketSum {
		return 0, fmt.Errorf("%w: a member's sum in one bucket of a hot board stays within ±%d", rank.ErrOutOfRange, rank.MaxHotBucketSum)
	}
	ks, _ := d.HotSums(sums, cur)
	ks[cur-eb] += delta
	return d.DecayedScore(ks), nil
}

// hotAdd records delta in member's bucket eb.
func (b *board) hotAdd(member string, eb, delta int64) {
	sums := b.hot.sums[member]
	if sums == nil {
		sums = map[int64]int64{}
		b.hot.sums[member] = sums
	}
	sums[eb] += delta
}

// rlock takes b's read lock at a store time for which the board's reads
// are current: expired bans lifted and a hot board's tree rebased (both
// need the write lock, taken briefly first). It returns that time.
func (s *Store) rlock(b *board) time.Time {
	for {
		now := s.now()
		s.readExpired(b, now)
		b.mu.RLock()
		if b.deleted || !b.hotStale(now) {
			return now
		}
		b.mu.RUnlock()
		b.mu.Lock()
		if !b.deleted {
			b.rebase(now)
		}
		b.mu.Unlock()
	}
}
