package redisstore

import (
	"fmt"

	"github.com/wsgateway/wsgateway/rank"
)

// checkShards refuses what this engine cannot hold yet: a board of more
// than one shard (§9). The memory engine shards boards; until this engine
// keeps one key set per shard (tag {<board>#<i>}), a sharded config is a
// clear bad_request naming the field rather than one sorted set that
// silently ignores the setting. A change of shards on an existing board is
// refused as on every engine (rank.CheckShardsChange).
func checkShards(old *rank.Board, b rank.Board) error {
	if old != nil {
		if err := rank.CheckShardsChange(*old, b); err != nil {
			return err
		}
	}
	if b.Sharded() {
		return fmt.Errorf("%w: field shards: %d: the Redis engine keeps a board in one shard (use 1)", rank.ErrInvalidConfig, b.Shards)
	}
	return nil
}
