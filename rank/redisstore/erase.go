package redisstore

// Erasure and export of a member (docs/protocol.md §13, R29).
//
// Where a member is: the store keeps no per-member index of its boards.
// Such an index would be one more write on every score (apply.lua's hot
// path) and, on Redis Cluster, a key in another slot than the board's, so
// apply.lua could not write it in its atomic step without a cross-slot
// call: it would drift from the boards it indexes. Erasure is rare; it
// walks the board list instead and, per key space (a board, a shard of a
// sharded board, a derived board in its source's group), runs erase.lua
// once over that key space's keys, which share one slot, so each key
// space loses the member in one atomic step. The keys are computable: the
// board's own keys, and per period it keeps (keptPeriods) the period's
// keys and the member's history list. The idempotency records follow, in
// HSCAN steps over the bucket hashes that may still exist (eraseRecords).

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/lua"
)

var _ rank.Eraser = (*Store)(nil)

// eraseKeys are erase.lua's KEYS for member in key space id of group g
// over the periods kept, with E (the entry sorted sets), O (the member's
// own keys) and K (the group hashes, last: cohorts' and regions'). seq is the key space's seq when erase.lua moves it,
// else "" (a shard: its seq is its tie clock). A key family added to the
// engine that may hold a member id goes in here, one line: board-wide
// families in the list after "then every other key", per-period ones in
// the loop below it.
func (s *Store) eraseKeys(g, id, seq string, kept []int64, member string) (keys []string, e, o, kc int) {
	k := func(suffix string) string { return s.keyIn(g, id, suffix) }
	if seq == "" {
		seq = k("cfg")
	}
	keys = append(keys, k("cfg"), seq)
	for _, idx := range kept { // the entries: shown and hidden by a ban
		i := strconv.FormatInt(idx, 10)
		keys = append(keys, k("z:"+i), k("x:"+i))
	}
	for _, idx := range kept { // the member's own keys
		keys = append(keys, k("h:"+strconv.FormatInt(idx, 10)+":"+member))
	}
	e, o = 2*len(kept), len(kept)
	// then every other key that may name the member:
	keys = append(keys,
		k("n"),    // names
		k("ban"),  // bans, own and global copies
		k("h:nx"), // hot boards: the next view,
		k("h:xn"), // its hidden entries,
		k("h:s"),  // and the members' bucket sums
		k("lg"),   // league tiers (§12)
	)
	for _, idx := range kept {
		i := strconv.FormatInt(idx, 10)
		keys = append(keys,
			k("m:"+i),    // sorted-set members (tiebreak first/last)
			k("meta:"+i), // meta (§11)
			k("c:"+i),    // submissions (R18)
		)
	}
	for _, idx := range kept { // cohorts (§12) and regions (§17): member -> its group's set
		i := strconv.FormatInt(idx, 10)
		keys = append(keys, k("k:"+i), k("g:"+i))
	}
	return keys, e, o, 2 * len(kept)
}

// Erase implements rank.Eraser. Each key space is its own atomic step: an
// event of the member applied while Erase runs may land on a board
// already erased (the caller erases a member that no longer plays).
func (s *Store) Erase(ctx context.Context, member string) (rank.Erasure, error) {
	out := rank.Erasure{Boards: []string{}}
	if !rank.ValidMemberID(member) {
		return out, fmt.Errorf("redisstore: erase: %w", rank.ErrInvalidMember)
	}
	if s.closed.Load() {
		return out, ErrClosed
	}
	boards, err := s.Boards(ctx)
	if err != nil {
		return out, err
	}
	sc := newScript(lua.Erase)
	now := s.clock.now(ctx, s.client)
	for _, b := range boards {
		entries, changed, err := s.eraseBoard(ctx, sc, b, member, now)
		if err != nil {
			return out, s.fail("erase", b.ID, err)
		}
		out.Entries += entries
		if changed {
			out.Boards = append(out.Boards, b.ID)
		}
	}
	slices.Sort(out.Boards)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	pipe := s.client.Pipeline()
	pipe.HDel(ctx, s.gbansKey(), member)
	pipe.Del(ctx, s.profileKey(member))
	if _, err := pipe.Exec(ctx); err != nil {
		return out, s.fail("erase", "", err)
	}
	return out, nil
}

// eraseBoard runs erase.lua over each key space of board b.
func (s *Store) eraseBoard(ctx context.Context, sc *script, b rank.Board, member string, now time.Time) (int64, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	g, err := s.groupOfBoard(ctx, b.ID)
	if err != nil {
		return 0, false, err
	}
	kept := keptPeriods(b, now)
	if b.Leagued() {
		// The last period placed in keeps its keys past its retention
		// until its moves are made (apply.lua's leagueOpen). Read before
		// the script: if a placement in a later period makes the moves
		// meanwhile, those keys get their period's expiry (past: dropped).
		open, err := s.client.HGet(ctx, s.keyIn(g, b.ID, "lg"), "#open").Int64()
		if err != nil && !isNil(err) {
			return 0, false, err
		}
		if err == nil {
			kept = append(kept, open)
		}
	}
	slices.Sort(kept)
	kept = slices.Compact(kept)
	run := func(g, id, seq string) (int64, bool, error) {
		keys, e, o, kc := s.eraseKeys(g, id, seq, kept, member)
		move := 0
		if seq != "" {
			move = 1
		}
		v, err := sc.run(ctx, s.client, keys, "", "", 0, 0, 0, member, e, o, move, kc)
		if err != nil {
			return 0, false, err
		}
		r, _ := v.([]any)
		if len(r) != 2 {
			return 0, false, fmt.Errorf("erase.lua answered %v", v)
		}
		entries, _ := r[0].(int64)
		changed, _ := r[1].(int64)
		forgot, err := s.eraseRecords(ctx, g, id, member, now)
		return entries, changed > 0 || forgot, err
	}
	if !b.Sharded() {
		return run(g, b.ID, s.keyIn(g, b.ID, "seq"))
	}
	var entries int64
	var changed bool
	for i := range b.Shards {
		id := shardID(b.ID, b.Shards, i)
		n, c, err := run(id, id, "")
		if err != nil {
			return 0, false, err
		}
		entries += n
		changed = changed || c
	}
	if changed { // the board's reads changed: its seq moves, as on a removal
		if err := s.client.Incr(ctx, s.keyIn(g, b.ID, "seq")).Err(); err != nil {
			return 0, false, err
		}
	}
	return entries, changed, nil
}

// eraseRecords deletes member's idempotency records (the fields
// "<member>|<id>" of prelude.lua's bucket hashes) in key space id of group
// g, so its old request ids are applied anew (R29). The buckets that may
// exist at now are the current one and the three before it (a bucket
// lives until a quarter window past the next one's end) and the next (the
// store's clock here is an estimate of the scripts' one), of the window
// and of the one before a window change. Each HSCAN step is one short
// command: a bucket holds every member's records of its window.
func (s *Store) eraseRecords(ctx context.Context, g, id, member string, now time.Time) (bool, error) {
	ws, err := s.client.HMGet(ctx, s.keyIn(g, id, "cfg"), "rw", "ro").Result()
	if err != nil {
		return false, err
	}
	glob := escapeGlob(member) + "|*"
	forgot := false
	for _, w := range ws {
		ms, _ := strconv.ParseInt(fmt.Sprint(w), 10, 64)
		if ms <= 0 {
			continue
		}
		k0 := now.UnixMilli() / ms
		for k := k0 - 3; k <= k0+1; k++ {
			key := s.keyIn(g, id, "r:"+strconv.FormatInt(ms, 10)+"."+strconv.FormatInt(k, 10))
			var cursor uint64
			for {
				fields, next, err := s.client.HScan(ctx, key, cursor, glob, 1000).Result()
				if err != nil {
					return forgot, err
				}
				for i := 0; i < len(fields); i += 2 { // field, value pairs
					n, err := s.client.HDel(ctx, key, fields[i]).Result()
					if err != nil {
						return forgot, err
					}
					forgot = forgot || n > 0
				}
				if next == 0 {
					break
				}
				cursor = next
			}
		}
	}
	return forgot, nil
}

// Export implements rank.Eraser: the reads' export, and the entries bans
// hide (x:<i>, on the member's shard of a sharded board) in the periods
// each board keeps.
func (s *Store) Export(ctx context.Context, member string) (rank.Export, error) {
	x, err := rank.ExportOf(ctx, s, member)
	if err != nil {
		return rank.Export{}, fmt.Errorf("redisstore: export: %w", err)
	}
	boards, err := s.Boards(ctx)
	if err != nil {
		return rank.Export{}, err
	}
	now := s.clock.now(ctx, s.client)
	for _, b := range boards {
		hidden, err := s.hiddenEntries(ctx, b, member, now)
		if err != nil {
			return rank.Export{}, s.fail("export", b.ID, err)
		}
		x.AddHidden(hidden...)
	}
	return x, nil
}

// hiddenEntries reads member's entries of board b that a ban hides.
func (s *Store) hiddenEntries(ctx context.Context, b rank.Board, member string, now time.Time) ([]rank.ExportEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	g, err := s.groupOfBoard(ctx, b.ID)
	if err != nil {
		return nil, err
	}
	id := b.ID
	if b.Sharded() {
		id = shardID(b.ID, b.Shards, rank.ShardOf(member, b.Shards))
		g = id
	}
	bans, err := s.client.HMGet(ctx, s.keyIn(g, id, "ban"), member, globalField(member)).Result()
	if err != nil || (bans[0] == nil && bans[1] == nil) {
		return nil, err
	}
	var out []rank.ExportEntry
	kept := keptPeriods(b, now)
	slices.Sort(kept)
	for _, idx := range slices.Compact(kept) {
		i := strconv.FormatInt(idx, 10)
		form := member
		if f, err := s.client.HGet(ctx, s.keyIn(g, id, "m:"+i), member).Result(); err == nil {
			form = f
		} else if !isNil(err) {
			return nil, err
		}
		sc, err := s.client.ZScore(ctx, s.keyIn(g, id, "x:"+i), form).Result()
		if isNil(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		score := int64(sc)
		if b.Order == rank.Asc {
			score = -score // stored negated (apply.lua)
		}
		m, err := s.client.HGet(ctx, s.keyIn(g, id, "meta:"+i), member).Result()
		if err != nil && !isNil(err) {
			return nil, err
		}
		out = append(out, rank.ExportEntry{Board: b.ID, Period: idx, Score: score, Meta: meta.Meta(m), Decimals: b.Decimals()})
	}
	return out, nil
}
