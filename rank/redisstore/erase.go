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
// keys and the member's history list. The idempotency records follow:
// forget.lua passes over the bucket hashes that may still exist in short
// HSCAN steps (Config.EraseChunk fields a call), a busy board's millions
// of records in many calls.
//
// Resumable: each key space keeps the erasure's progress in a hash named
// by a hash of the member (<ks>:er:<tag>: the entries and records removed,
// each bucket's HSCAN cursor), written in the same atomic step as the
// work, and <p>:er:<tag> keeps the last board done (boards go in id
// order). An Erase whose context ends first answers what it did with Done
// false, and the next Erase of the member goes on after that board, from
// the cursors; the one that finishes sums every key space's progress and
// deletes it.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/lua"
)

var _ rank.Eraser = (*Store)(nil)

// Erasure's tuning.
const (
	// DefaultEraseChunk is Config.EraseChunk's default: idempotency record
	// fields one forget.lua call looks at, a few milliseconds of Redis.
	DefaultEraseChunk = 5000
	// eraseScan is the COUNT of one HSCAN step.
	eraseScan = 1000
	// eraseKeep is how long an erasure's progress is kept for a resume.
	eraseKeep = 24 * time.Hour
	// eraseReserve is the least time left in an Erase's context for it to
	// start another call.
	eraseReserve = 25 * time.Millisecond
)

// eraseTag names a member in the erasure's progress keys: a hash, so no
// key name holds the id (R29).
func eraseTag(member string) string {
	h := sha256.Sum256([]byte("erase|" + member))
	return hex.EncodeToString(h[:16])
}

// eraseKeys are erase.lua's KEYS for member in key space id of group g
// over the periods kept, with E (the entry sorted sets), O (the member's
// own keys) and K (the group hashes, last: cohorts' and regions'). seq is the key space's seq when erase.lua moves it,
// else "" (a shard: its seq is its tie clock). A key family added to the
// engine that may hold a member id goes in here, one line: board-wide
// families in the list after "then every other key", per-period ones in
// the loop below it.
func (s *Store) eraseKeys(g, id, seq string, kept []int64, member, tag string, now time.Time) (keys []string, e, o, kc int) {
	k := func(suffix string) string { return s.keyIn(g, id, suffix) }
	if seq == "" {
		seq = k("cfg")
	}
	keys = append(keys, k("cfg"), seq, k("er:"+tag))
	for _, idx := range kept { // the entries: shown, hidden by a ban, held (§16)
		i := strconv.FormatInt(idx, 10)
		keys = append(keys, k("z:"+i), k("x:"+i), k("q:"+i))
	}
	for _, idx := range kept { // the member's own keys
		keys = append(keys, k("h:"+strconv.FormatInt(idx, 10)+":"+member))
	}
	e, o = 3*len(kept), len(kept)
	// then every other key that may name the member:
	keys = append(keys,
		k("n"),    // names
		k("ban"),  // bans, own and global copies
		k("h:nx"), // hot boards: the next view,
		k("h:xn"), // its hidden entries,
		k("h:s"),  // and the members' bucket sums
		k("lg"),   // league tiers (§12)
		// caps per UTC day (§18): a day's counts live until the next ends
		k("cap:d"+strconv.FormatInt(rank.CapDayOf(now), 10)),
		k("cap:d"+strconv.FormatInt(rank.CapDayOf(now)-1, 10)),
		k("g"), // recent gains (§16)
	)
	for _, idx := range kept {
		i := strconv.FormatInt(idx, 10)
		keys = append(keys,
			k("m:"+i),    // sorted-set members (tiebreak first/last)
			k("meta:"+i), // meta (§11)
			k("c:"+i),    // submissions (R18)
			k("cap:"+i),  // caps per period (§18)
			k("hd:"+i),   // held members (§16)
		)
	}
	for _, idx := range kept { // cohorts (§12) and regions (§17): member -> its group's set
		i := strconv.FormatInt(idx, 10)
		keys = append(keys, k("k:"+i), k("g:"+i))
	}
	return keys, e, o, 2 * len(kept)
}

// eraseSpace is a key space of a board: its progress hash holds what an
// erasure removed there.
type eraseSpace struct{ board, g, id string }

// eraseSpaces are board b's key spaces: its own, or each shard's.
func eraseSpaces(b rank.Board) []eraseSpace {
	if !b.Sharded() {
		return []eraseSpace{{board: b.ID, g: b.GroupID(), id: b.ID}}
	}
	out := make([]eraseSpace, 0, b.Shards)
	for i := range b.Shards {
		id := shardID(b.ID, b.Shards, i)
		out = append(out, eraseSpace{board: b.ID, g: id, id: id})
	}
	return out
}

// eraser is one Erase call's state.
type eraser struct {
	s            *Store
	member, tag  string
	now          time.Time
	erase, forgt *script
	slowest      time.Duration // the longest call so far
}

// resumeKey is the erasure's last board done (outside every hash tag, as
// the global bans).
func (e *eraser) resumeKey() string { return e.s.cfg.Prefix + ":er:" + e.tag }

// more reports whether ctx leaves time for another call: at least twice
// the longest so far, so a call is not cut by the deadline midway.
func (e *eraser) more(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	dl, ok := ctx.Deadline()
	return !ok || time.Until(dl) > max(eraseReserve, 2*e.slowest)
}

// run runs one script call within the store's timeout and notes how long
// it took.
func (e *eraser) run(ctx context.Context, sc *script, keys []string, args ...any) ([]any, error) {
	ctx, cancel := context.WithTimeout(ctx, e.s.cfg.Timeout)
	defer cancel()
	began := time.Now()
	v, err := sc.run(ctx, e.s.client, keys, args...)
	e.slowest = max(e.slowest, time.Since(began))
	if err != nil {
		return nil, err
	}
	r, _ := v.([]any)
	if len(r) != 2 {
		return nil, fmt.Errorf("%s answered %v", sc.name, v)
	}
	return r, nil
}

// Erase implements rank.Eraser. Each key space is its own atomic step: an
// event of the member applied while Erase runs may land on a board
// already erased (the caller erases a member that no longer plays). When
// ctx's deadline comes first, Erase answers what is done so far with Done
// false (not an error); calling it again resumes.
func (s *Store) Erase(ctx context.Context, member string) (rank.Erasure, error) {
	out := rank.Erasure{Boards: []string{}}
	if !rank.ValidMemberID(member) {
		return out, fmt.Errorf("redisstore: erase: %w", rank.ErrInvalidMember)
	}
	if s.closed.Load() {
		return out, ErrClosed
	}
	// Where to start is read even when ctx's budget is short (a busy
	// node): a budget spent before any erasing must answer "not done",
	// not fail.
	setup, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Timeout)
	defer cancel()
	boards, err := s.Boards(setup)
	if err != nil {
		return out, err
	}
	e := &eraser{s: s, member: member, tag: eraseTag(member), now: s.clock.now(setup, s.client),
		erase: newScript(lua.Erase), forgt: newScript(lua.Forget)}
	after, err := s.client.Get(setup, e.resumeKey()).Result()
	if err != nil && !isNil(err) {
		return out, s.fail("erase", "", err)
	}
	done := true
	for _, b := range boards { // in id order
		if b.ID <= after {
			continue // done by an earlier call
		}
		finished, err := e.board(ctx, b)
		if err != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return out, s.fail("erase", b.ID, err)
		}
		if err != nil || !finished {
			done = false
			break
		}
		short, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		err = s.client.Set(short, e.resumeKey(), b.ID, eraseKeep).Err()
		cancel()
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				done = false
				break
			}
			return out, s.fail("erase", b.ID, err)
		}
	}
	if done && e.more(ctx) {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		pipe := s.client.Pipeline()
		gban := pipe.HDel(ctx, s.gbansKey(), member)
		prof := pipe.Del(ctx, s.profileKey(member))
		_, err := pipe.Exec(ctx)
		cancel()
		if err != nil {
			return out, s.fail("erase", "", err)
		}
		out.GlobalBan, out.Profile = gban.Val() > 0, prof.Val() > 0
	} else {
		done = false
	}
	// The summary reads (and, when done, deletes) the progress even when
	// ctx's time is up: a few short calls, bounded by the store's timeout.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Timeout)
	defer cancel()
	if err := e.summarize(sctx, boards, &out, done); err != nil {
		return out, s.fail("erase", "", err)
	}
	out.Done = done
	return out, nil
}

// summarize adds up the progress of every key space of boards into out
// (one pipeline), and deletes it when the erasure is done.
func (e *eraser) summarize(ctx context.Context, boards []rank.Board, out *rank.Erasure, done bool) error {
	s := e.s
	var spaces []eraseSpace
	for _, b := range boards {
		spaces = append(spaces, eraseSpaces(b)...)
	}
	key := func(sp eraseSpace) string { return s.keyIn(sp.g, sp.id, "er:"+e.tag) }
	cmds := make([]*redis.SliceCmd, len(spaces))
	if _, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, sp := range spaces {
			cmds[i] = p.HMGet(ctx, key(sp), "e", "c", "r")
		}
		return nil
	}); err != nil {
		return err
	}
	touched := map[string]bool{}
	for i, sp := range spaces {
		v := cmds[i].Val()
		n := func(i int) int64 {
			x, _ := strconv.ParseInt(fmt.Sprint(v[i]), 10, 64)
			return x
		}
		out.Entries += n(0)
		out.Records += n(2)
		if n(1) > 0 || n(2) > 0 {
			touched[sp.board] = true
		}
	}
	for b := range touched {
		out.Boards = append(out.Boards, b)
	}
	slices.Sort(out.Boards)
	if !done {
		return nil
	}
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, sp := range spaces {
			p.Del(ctx, key(sp))
		}
		p.Del(ctx, e.resumeKey())
		return nil
	})
	return err
}

// board runs erase.lua over each key space of board b, then forget.lua
// over its idempotency records; false when ctx's time ran out first.
func (e *eraser) board(ctx context.Context, b rank.Board) (bool, error) {
	s := e.s
	if !e.more(ctx) {
		return false, nil
	}
	// The reads and writes here besides the scripts' are short too.
	short, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	g := b.GroupID()
	kept := keptPeriods(b, e.now)
	if b.Leagued() {
		// The last period placed in keeps its keys past its retention
		// until its moves are made (apply.lua's leagueOpen). Read before
		// the script: if a placement in a later period makes the moves
		// meanwhile, those keys get their period's expiry (past: dropped).
		open, err := s.client.HGet(short, s.keyIn(g, b.ID, "lg"), "#open").Int64()
		if err != nil && !isNil(err) {
			return false, err
		}
		if err == nil {
			kept = append(kept, open)
		}
	}
	slices.Sort(kept)
	kept = slices.Compact(kept)
	// Its key spaces: the board's, or each shard's (whose seq is its tie
	// clock: the board's moves once for all of them).
	spaces := eraseSpaces(b)
	seq := s.keyIn(g, b.ID, "seq")
	if b.Sharded() {
		seq = ""
	}
	changed := false
	for _, sp := range spaces {
		keys, ne, no, kc := s.eraseKeys(sp.g, sp.id, seq, kept, e.member, e.tag, e.now)
		move := 0
		if seq != "" {
			move = 1
		}
		r, err := e.run(ctx, e.erase, keys, "", "", 0, 0, 0, e.member, ne, no, move, kc, eraseKeep.Milliseconds())
		if err != nil {
			return false, err
		}
		c, _ := r[1].(int64)
		changed = changed || c > 0
	}
	if changed && b.Sharded() { // the board's reads changed: its seq moves, as on a removal
		ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
		if err := s.client.Incr(ctx, s.keyIn(g, b.ID, "seq")).Err(); err != nil {
			return false, err
		}
	}
	for _, sp := range spaces {
		if finished, err := e.records(ctx, sp.g, sp.id); err != nil || !finished {
			return false, err
		}
	}
	return true, nil
}

// records deletes the member's idempotency records (the fields
// "<member>|<id>" of prelude.lua's bucket hashes) in key space id of group
// g, so its old request ids are applied anew (R29), in forget.lua calls of
// Config.EraseChunk fields each; false when ctx's time ran out first. The
// buckets that may exist at now are the current one and the three before
// it (a bucket lives until a quarter window past the next one's end) and
// the next (the store's clock here is an estimate of the scripts' one),
// of the window and of the one before a window change.
func (e *eraser) records(ctx context.Context, g, id string) (bool, error) {
	s := e.s
	progress := s.keyIn(g, id, "er:"+e.tag)
	short, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	ws, err := s.client.HMGet(short, s.keyIn(g, id, "cfg"), "rw", "ro").Result()
	var had map[string]string // the buckets an earlier call finished ("b:…" -> "done")
	if err == nil {
		had, err = s.client.HGetAll(short, progress).Result()
	}
	cancel()
	if err != nil {
		return false, err
	}
	glob := escapeGlob(e.member) + "|*"
	chunk := s.cfg.EraseChunk
	steps := max(1, chunk/eraseScan)
	for _, w := range ws {
		ms, _ := strconv.ParseInt(fmt.Sprint(w), 10, 64)
		if ms <= 0 {
			continue
		}
		k0 := e.now.UnixMilli() / ms
		for k := k0 - 3; k <= k0+1; k++ {
			bucket := strconv.FormatInt(ms, 10) + "." + strconv.FormatInt(k, 10)
			if had["b:"+bucket] == "done" {
				continue
			}
			for {
				if !e.more(ctx) {
					return false, nil
				}
				r, err := e.run(ctx, e.forgt, []string{s.keyIn(g, id, "r:"+bucket), progress},
					"", "", 0, 0, 0, glob, min(chunk, eraseScan), steps, "b:"+bucket, eraseKeep.Milliseconds())
				if err != nil {
					return false, err
				}
				if d, _ := r[1].(int64); d == 1 {
					break
				}
			}
		}
	}
	return true, nil
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

// hiddenEntries reads member's entries of board b that a ban hides, or a
// hold (§16).
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
	if err != nil {
		return nil, err
	}
	var sets []string // where its hidden entries may be
	if bans[0] != nil || bans[1] != nil {
		sets = append(sets, "x:")
	}
	if b.Holds() {
		sets = append(sets, "q:")
	}
	if len(sets) == 0 {
		return nil, nil
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
		var sc float64
		found := false
		for _, set := range sets {
			v, err := s.client.ZScore(ctx, s.keyIn(g, id, set+i), form).Result()
			if isNil(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			sc, found = v, true
			break
		}
		if !found {
			continue
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
