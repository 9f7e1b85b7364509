package redisstore

// Sharded boards (docs/protocol.md §9, R24). Shard i of board b is a key space
// of its own, the keys of a board whose hash tag is {b#i} or {b#i.k}
// (shardID; '#' never occurs in a board id): its config version copy, tie
// clock, names, period sets, counts, bans and idempotency records, so
// apply.lua runs on the member's shard as on a board, with its shard block
// (apply_shard.lua, token "shard" of the shard's apply config): the tie key
// is the store's time in µs.
// The board's own key space keeps the config, the board's change seq and
// nothing else.
//
// After the atomic step on the member's shard, a pipelined follow-up
// (shardFollowUp, shard_write.go) makes the lane round's results global:
// rank and prev_rank add the entries strictly better on the other shards
// (read right after, so events on other shards meanwhile may be counted,
// as R24 allows; one count call per other shard for the whole round), the
// board's seq moves by the round's applied events (one INCRBY on the
// board's key), and the idempotency records are rewritten with those
// results, so a duplicate answers them (one call per bucket hash). Reads (shardPage, shardRanks) read the
// board's seq first, then every shard in one pipeline (go-redis splits it
// per master on a cluster), and merge: a seq a read returns covers every
// event whose seq is at most it, as on an unsharded board, because an
// event's seq is taken only after its step.

import (
	"context"

	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

// clusterSlots is how many hash slots a Redis Cluster has.
const clusterSlots = 16384

// shardID is the key-space id, and so the hash tag, of shard i of a board
// of n shards: "<b>#<i>", or "<b>#<i>.<k>" for the least k >= 1 that puts
// the tag's Cluster slot in the middle half of the i-th of n equal slot
// ranges ("<b>#<i>" itself when it already lies there). A cluster of m
// masters owning equal ranges in order (redis-cli --cluster create) so
// holds n/m shards on each when m divides n (one per master when shards =
// masters), and never two more on one master than on another otherwise;
// the middle half keeps that when the masters' edges are a few slots off
// the ranges'. The search is deterministic, so every node names a shard
// alike; it takes about 2n tries (docs/scaling.md, "Where the shards
// live").
func shardID(board string, n, i int) string {
	base := board + "#" + strconv.Itoa(i)
	if n < 2 {
		return base
	}
	lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n
	lo, hi = lo+(hi-lo)/4, hi-(hi-lo)/4
	buf := []byte(base)
	for k := 0; k < 1<<20; k++ {
		tag := buf
		if k > 0 {
			tag = strconv.AppendInt(append(buf, '.'), int64(k), 10)
		}
		if s := int(crc16(tag)) % clusterSlots; s >= lo && s < hi {
			return string(tag)
		}
	}
	return base // unreachable in practice: each try hits with odds 1/(2n)
}

// crc16 is Redis Cluster's key hash (CRC-16/XMODEM); the slot of a hash
// tag t is crc16(t) mod 16384.
func crc16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c ^= uint16(x) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
	}
	return c
}

// checkShards refuses a change of shards on an existing board
// (rank.CheckShardsChange).
func checkShards(old *rank.Board, b rank.Board) error {
	if old != nil {
		return rank.CheckShardsChange(*old, b)
	}
	return nil
}

// cachedShards builds the shards' configs and keys of a sharded board.
func (s *Store) cachedShards(b rank.Board, ver string) []cachedBoard {
	if !b.Sharded() {
		return nil
	}
	out := make([]cachedBoard, b.Shards)
	for i := range out {
		sub := b
		sub.ID, sub.Shards, sub.Group = shardID(b.ID, b.Shards, i), 0, "" // a shard's keys are its own slot
		out[i] = s.cachedOne(sub, ver)
		out[i].keys.spec = shardSpec(b)
	}
	return out
}

// putShardVersions writes the config version, which apply.lua and
// shard.lua check, and the shard's apply config to every shard's cfg hash
// (with field sh on a board with tiebreak shared: putboard.lua). PutBoard
// calls it after writing the board's config: a caller holding the old
// version meets "stale" on a shard until it lands, and re-reads.
func (s *Store) putShardVersions(ctx context.Context, b rank.Board, ver string) error {
	if !b.Sharded() {
		return nil
	}
	pipe := s.client.Pipeline()
	for _, sh := range s.cachedShards(b, ver) {
		if b.Tiebreak == rank.Shared {
			pipe.HSet(ctx, sh.keys.cfg, "v", ver, "a", sh.keys.spec, "sh", "1")
		} else {
			pipe.HSet(ctx, sh.keys.cfg, "v", ver, "a", sh.keys.spec)
		}
	}
	_, err := pipe.Exec(ctx)
	return err
}

// deleteShards removes every shard's keys: the cfg copies first, so every
// later script on a shard finds the board unknown and writes nothing.
func (s *Store) deleteShards(ctx context.Context, b rank.Board) error {
	if !b.Sharded() {
		return nil
	}
	pipe := s.client.Pipeline()
	for _, sh := range s.cachedShards(b, "") {
		pipe.Del(ctx, sh.keys.cfg)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	for i := range b.Shards {
		if err := s.deleteKeys(ctx, escapeGlob(s.cfg.Prefix)+":{"+escapeGlob(shardID(b.ID, b.Shards, i))+"}:*"); err != nil {
			return err
		}
	}
	return nil
}

// sharded reports whether board is a sharded board (from the cache; an
// unknown board is not, and its read fails as usual).
func (s *Store) sharded(ctx context.Context, board string) bool {
	c, err := s.board(ctx, board)
	return err == nil && c.b.Sharded()
}

// moderated is where ban.lua runs for a member of board c: the board, or
// on a sharded board the member's shard (every shard when member is "",
// an expiry sweep).
func (s *Store) moderated(c cachedBoard, member string) []cachedBoard {
	switch {
	case !c.b.Sharded():
		return []cachedBoard{c}
	case member == "":
		return c.shards
	}
	return []cachedBoard{c.shards[rank.ShardOf(member, c.b.Shards)]}
}

// banHashes reads the board's ban hash, or every shard's, merged: a
// member's record sits on its shard only.
func (s *Store) banHashes(ctx context.Context, board string) (map[string]string, error) {
	c, err := s.board(ctx, board)
	if err != nil {
		return nil, err
	}
	targets := s.moderated(c, "")
	pipe := s.client.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(targets))
	for i, t := range targets {
		cmds[i] = pipe.HGetAll(ctx, t.keys.ban)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	all := map[string]string{}
	for _, cmd := range cmds {
		for k, v := range cmd.Val() {
			if k != "|exp" {
				all[k] = v
			}
		}
	}
	return all, nil
}
