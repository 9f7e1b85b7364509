package rank

import (
	"fmt"
	"hash/fnv"
)

// Sharded boards (§9, R24).
const (
	// MaxShards bounds a board's shards: far more than any cluster has
	// masters, and a merged read costs one range per shard.
	MaxShards = 64
	// MaxShardedWindow bounds offset + limit of a page of a sharded board:
	// a merged page reads offset + limit entries from every shard.
	MaxShardedWindow = 10000
)

// ErrShardsFixed is a config change of `shards` on an existing board: the
// members' placement depends on it, so it is fixed at creation (409,
// code read_only; delete and re-create the board to change it).
var ErrShardsFixed = &Error{"read_only", "field shards: fixed at creation"}

// ShardCount is how many shards hold the board's members: Shards, or 1
// when unset.
func (b Board) ShardCount() int {
	if b.Shards < 1 {
		return 1
	}
	return b.Shards
}

// Sharded reports whether the board spreads its members over several
// shards. Features that need one sorted set per board (derived sources,
// decay) refuse it in validateShards.
func (b Board) Sharded() bool { return b.ShardCount() > 1 }

// ShardOf is the shard, in [0, n), that holds member m on a board of n
// shards: FNV-1a 32 of the member id, mod n. Stable: both engines and
// every node place a member alike, forever.
func ShardOf(m string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(m))
	return int(h.Sum32() % uint32(n))
}

// validateShards checks the shards field: 0 (unset) or 1..MaxShards.
func (b Board) validateShards() error {
	if b.Shards < 0 || b.Shards > MaxShards {
		return fmt.Errorf("%w: field shards: %d is not within 1..%d", ErrInvalidConfig, b.Shards, MaxShards)
	}
	if b.Sharded() && b.Hot() {
		return fmt.Errorf("%w: field shards: a board with decay is not sharded (§9)", ErrInvalidConfig)
	}
	return nil
}

// CheckShardsChange refuses a new config whose shard count differs from
// the stored one's (ErrShardsFixed). Both engines call it on PutBoard of an
// existing board.
func CheckShardsChange(old, next Board) error {
	if old.ShardCount() != next.ShardCount() {
		return fmt.Errorf("%w (%d); delete and re-create the board to change it, not %d", ErrShardsFixed, old.ShardCount(), next.ShardCount())
	}
	return nil
}

// CheckWindow refuses a page of a sharded board that reaches past
// MaxShardedWindow (R24).
func (b Board) CheckWindow(offset, limit int) error {
	if b.Sharded() && offset+limit > MaxShardedWindow {
		return fmt.Errorf("%w: offset + limit %d is above %d on a sharded board", ErrBadRequest, offset+limit, MaxShardedWindow)
	}
	return nil
}
