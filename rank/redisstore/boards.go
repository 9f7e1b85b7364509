package redisstore

// Board configs: stored, listed and deleted, and the cache that Apply and
// the reads resolve them through.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/lua"
)

// putBoardScript is putboard.lua; like every script it is immutable once
// built, and loaded again by run when the server has lost it.
var putBoardScript = newScript(lua.PutBoard)

// maxPutAttempts bounds the re-reads of a config that other PUTs keep
// changing under a PutBoard.
const maxPutAttempts = 8

// PutBoard stores b under a fresh version and adds it to the board list.
func (s *Store) PutBoard(ctx context.Context, b rank.Board) (rank.Board, error) {
	if err := b.Validate(); err != nil {
		return rank.Board{}, fmt.Errorf("redisstore: put board %s: %w", b.ID, err)
	}
	if s.closed.Load() {
		return rank.Board{}, ErrClosed
	}
	j, err := json.Marshal(b)
	if err != nil {
		return rank.Board{}, fmt.Errorf("redisstore: put board %s: %w", b.ID, err)
	}
	var v [8]byte
	_, _ = rand.Read(v[:])
	ver := hex.EncodeToString(v[:])
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	build := false // a derived board to build over its sources' data
	// A final board's config no longer changes (§6). putboard.lua checks
	// the stored config's final_at on the one clock in the step that
	// writes, so a PUT in the millisecond the board goes final, or racing
	// another PUT that makes it final, is refused; a config changed since
	// the read ("stale") is read again.
	created := false
	for attempt := 0; ; attempt++ {
		oldVer, finalAt := "", ""
		old, err := s.loadBoard(ctx, b.ID)
		fresh := errors.Is(err, rank.ErrUnknownBoard)
		switch {
		case err == nil:
			if err := checkShards(&old.b, b); err != nil {
				return rank.Board{}, fmt.Errorf("redisstore: put board %s: %w", b.ID, err)
			}
			if err := rank.CheckDecayChange(old.b, b); err != nil {
				return rank.Board{}, fmt.Errorf("redisstore: put board %s: %w", b.ID, err)
			}
			if err := rank.CheckCohortChange(old.b, b); err != nil {
				return rank.Board{}, fmt.Errorf("redisstore: put board %s: %w", b.ID, err)
			}
			oldVer = old.ver
			if f := old.b.FinalAt(); !f.IsZero() {
				finalAt = strconv.FormatInt(f.UnixMilli(), 10)
			}
		case !fresh:
			return rank.Board{}, s.fail("put board", b.ID, err)
		}
		// Groups and sources (derived.go): checked against the stored
		// configs, the group listed before the config is written.
		nb, err := s.resolveDerived(ctx, b, old)
		if err != nil {
			return rank.Board{}, s.fail("put board", b.ID, err)
		}
		if j, err = json.Marshal(nb); err != nil {
			return rank.Board{}, fmt.Errorf("redisstore: put board %s: %w", b.ID, err)
		}
		if fresh && nb.GroupID() != nb.ID {
			if err := s.client.HSet(ctx, s.groupsKey(), nb.ID, nb.GroupID()).Err(); err != nil {
				return rank.Board{}, s.fail("put board", b.ID, err)
			}
		}
		s.rememberGroup(nb.ID, nb.GroupID())
		// A new derived board is marked as building (cleared by the
		// build, build.go); a PUT that finds the mark builds too, or waits
		// for the builder, without setting it again: a build that ended
		// since it read the config is not redone.
		building := ""
		if nb.Derived() && fresh {
			building = "1"
		}
		s.forget(b.ID)
		v, err := putBoardScript.run(ctx, s.client, []string{s.keyIn(nb.GroupID(), nb.ID, "cfg")}, oldVer, s.nowArg(), finalAt, ver, j, building, cohortSpec(nb), applySpec(nb), "")
		if scriptError(err) == "stale" && attempt < maxPutAttempts {
			continue
		}
		if err != nil {
			if scriptError(err) == "board_closed" {
				return rank.Board{}, fmt.Errorf("redisstore: put board %s: %w: the board is final", b.ID, rank.ErrBoardClosed)
			}
			return rank.Board{}, s.fail("put board", b.ID, err)
		}
		n, _ := v.(int64)
		created = n == 1
		b, build = nb, nb.Derived() && (fresh || old.building)
		break
	}
	// The shards' copies of the version go after the config: a PUT refused
	// above writes nothing, and events checked against the new config are
	// only "stale" on a shard until this lands.
	if err := s.putShardVersions(ctx, b, ver); err != nil {
		return rank.Board{}, s.fail("put board", b.ID, err)
	}
	// The list lives in another slot, so it is a separate command; Boards
	// skips ids whose config is missing, DeleteBoard removes config first.
	if err := s.client.SAdd(ctx, s.boardsKey(), b.ID).Err(); err != nil {
		return rank.Board{}, s.fail("put board", b.ID, err)
	}
	// Not cached here: the stored version may come with dependants
	// (derived.go) that this config does not know of. The group is.
	s.forget(b.ID)
	s.rememberGroup(b.ID, b.GroupID())
	if created {
		// A global ban reaches boards created after it (§7).
		if err := s.inheritGlobalBans(ctx, b.ID); err != nil {
			return rank.Board{}, err
		}
	}
	if build {
		if err := s.link(ctx, b, "add"); err != nil {
			return rank.Board{}, s.fail("put board", b.ID, err)
		}
		// The build outlives the PUT's one-operation timeout: each of its
		// steps gets its own (buildDerived), and a caller that leaves does
		// not stop it halfway.
		if err := s.buildDerived(context.WithoutCancel(ctx), b); err != nil {
			return rank.Board{}, s.fail("put board", b.ID, err)
		}
	}
	return b, nil
}

// GetBoard reads the stored config (never the cache).
func (s *Store) GetBoard(ctx context.Context, id string) (rank.Board, error) {
	if !rank.ValidBoardID(id) {
		return rank.Board{}, fmt.Errorf("redisstore: get board %q: %w", id, rank.ErrInvalidBoard)
	}
	if s.closed.Load() {
		return rank.Board{}, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	c, err := s.loadBoard(ctx, id)
	if err != nil {
		return rank.Board{}, s.fail("get board", id, err)
	}
	return c.b, nil
}

// Boards lists every board sorted by id.
func (s *Store) Boards(ctx context.Context) ([]rank.Board, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	ids, err := s.client.SMembers(ctx, s.boardsKey()).Result()
	if err != nil {
		return nil, s.fail("boards", "", err)
	}
	sort.Strings(ids)
	groups, err := s.client.HGetAll(ctx, s.groupsKey()).Result()
	if err != nil {
		return nil, s.fail("boards", "", err)
	}
	out := make([]rank.Board, 0, len(ids))
	const chunk = 500
	for len(ids) > 0 {
		part := ids[:min(chunk, len(ids))]
		ids = ids[len(part):]
		pipe := s.client.Pipeline()
		cmds := make([]*redis.StringCmd, len(part))
		for i, id := range part {
			cmds[i] = pipe.HGet(ctx, s.keyIn(groups[id], id, "cfg"), "j")
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, s.fail("boards", "", err)
		}
		for i, cmd := range cmds {
			j, err := cmd.Bytes()
			if errors.Is(err, redis.Nil) {
				continue // deleted, or created halfway
			}
			if err != nil {
				return nil, s.fail("boards", part[i], err)
			}
			var b rank.Board
			if err := json.Unmarshal(j, &b); err != nil {
				return nil, fmt.Errorf("redisstore: boards: config of %s: %w", part[i], err)
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// DeleteBoard removes the config first (so every later script finds the
// board unknown and writes nothing), then the id from the list, then every
// other key of the board, idempotency records and all period keys included.
func (s *Store) DeleteBoard(ctx context.Context, id string) error {
	if !rank.ValidBoardID(id) {
		return fmt.Errorf("redisstore: delete board %q: %w", id, rank.ErrInvalidBoard)
	}
	if s.closed.Load() {
		return ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	// A source with dependants stays; a derived board leaves its sources'
	// lists before its keys go (derived.go).
	old, err := s.loadBoard(ctx, id)
	if err != nil && !errors.Is(err, rank.ErrUnknownBoard) {
		return s.fail("delete board", id, err)
	}
	if len(old.deps) > 0 {
		return fmt.Errorf("redisstore: delete board %s: %w (%s): delete those first", id, rank.ErrHasDependants, old.deps[0].id)
	}
	if old.b.Derived() {
		if err := s.unlinkAll(ctx, old.b); err != nil {
			return s.fail("delete board", id, err)
		}
	}
	g, err := s.groupOfBoard(ctx, id)
	if err != nil {
		return s.fail("delete board", id, err)
	}
	s.forget(id)
	n, err := s.client.Del(ctx, s.keyIn(g, id, "cfg")).Result()
	if err != nil {
		return s.fail("delete board", id, err)
	}
	if err := s.client.SRem(ctx, s.boardsKey(), id).Err(); err != nil {
		return s.fail("delete board", id, err)
	}
	pattern := escapeGlob(s.cfg.Prefix) + ":{" + id + "}:*"
	if g != id {
		pattern = escapeGlob(s.cfg.Prefix) + ":{" + g + "}/" + id + ":*"
	}
	if err := s.deleteKeys(ctx, pattern); err != nil {
		return s.fail("delete board", id, err)
	}
	if err := s.deleteShards(ctx, old.b); err != nil {
		return s.fail("delete board", id, err)
	}
	if err := s.client.HDel(ctx, s.groupsKey(), id).Err(); err != nil {
		return s.fail("delete board", id, err)
	}
	s.forget(id)
	if n == 0 {
		return fmt.Errorf("redisstore: delete board %s: %w", id, rank.ErrUnknownBoard)
	}
	return nil
}

// deleteKeys unlinks every key matching pattern. The pattern's hash tag puts
// them all in one slot; on a cluster each master is scanned (only the owner
// has any).
func (s *Store) deleteKeys(ctx context.Context, pattern string) error {
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				if err := c.Unlink(ctx, keys...).Err(); err != nil {
					return err
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	}
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	}
	return scan(ctx, s.client)
}

// escapeGlob quotes the glob metacharacters of a key prefix for SCAN MATCH.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *Store) loadBoard(ctx context.Context, id string) (cachedBoard, error) {
	s.mu.Lock()
	gen := s.gen
	s.mu.Unlock()
	g, err := s.groupOfBoard(ctx, id)
	if err != nil {
		return cachedBoard{}, err
	}
	vals, err := s.client.HMGet(ctx, s.keyIn(g, id, "cfg"), "v", "j", "d", "b").Result()
	if err != nil {
		return cachedBoard{}, err
	}
	ver, _ := vals[0].(string)
	j, _ := vals[1].(string)
	deps, _ := vals[2].(string)
	building, _ := vals[3].(string)
	if ver == "" || j == "" {
		s.rememberUnknown(id, gen)
		return cachedBoard{}, rank.ErrUnknownBoard
	}
	var b rank.Board
	if err := json.Unmarshal([]byte(j), &b); err != nil {
		return cachedBoard{}, fmt.Errorf("config of %s: %w", id, err)
	}
	c := s.cached(b, ver)
	c.deps, c.building = parseDeps(deps), building != ""
	s.remember(id, c)
	return c, nil
}

// board returns the config of a board from the cache or Redis.
func (s *Store) board(ctx context.Context, id string) (cachedBoard, error) {
	c, err := s.boardRef(ctx, id)
	if err != nil {
		return cachedBoard{}, err
	}
	return *c, nil
}

// boardRef is board without the copy; the entry is shared (the cache's,
// or a fresh read's): the caller must not modify it.
func (s *Store) boardRef(ctx context.Context, id string) (*cachedBoard, error) {
	if c := s.hit(id); c != nil {
		if c.unknown {
			return nil, rank.ErrUnknownBoard
		}
		return c, nil
	}
	c, err := s.loadBoard(ctx, id)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// hit is the cache's entry for id while it is fresh, else nil. The caller
// must not modify it. Every score reads its board here: the entry is not
// copied under the lock (a config is about 1 KB), and its age is read from
// the monotonic clock alone (c.at has a monotonic reading), half the cost
// of a time.Now.
func (s *Store) hit(id string) *cachedBoard {
	s.mu.Lock()
	c := s.boards[id]
	s.mu.Unlock()
	if c == nil || time.Since(c.at) >= c.ttl() {
		return nil
	}
	return c
}

func (s *Store) remember(id string, c cachedBoard) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.rememberLocked(id, c)
}

// rememberUnknown caches that board id did not exist, unless a config was
// stored or forgotten since the read began (gen): the board may exist by
// now (PutBoard on this node, or another node's heard over the bus), and
// a read that raced it must not hide it.
func (s *Store) rememberUnknown(id string, gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return
	}
	s.rememberLocked(id, cachedBoard{unknown: true, at: time.Now()})
}

// rememberLocked stores c, keeping the cache bounded (s.mu held). Only
// valid ids are cached, so a hit needs no R15 check (Board).
func (s *Store) rememberLocked(id string, c cachedBoard) {
	if !rank.ValidBoardID(id) {
		return
	}
	if len(s.boards) >= maxCachedBoards {
		now := time.Now()
		for k, v := range s.boards {
			if !v.fresh(now) {
				delete(s.boards, k)
			}
		}
		if len(s.boards) >= maxCachedBoards {
			clear(s.boards) // all fresh: a burst of boards; start over
		}
	}
	s.boards[id] = &c
}

func (s *Store) forget(id string) {
	s.mu.Lock()
	delete(s.boards, id)
	delete(s.groups, id)
	s.gen++
	s.mu.Unlock()
}

// Board returns the config events are applied with, from the cache.
func (s *Store) Board(ctx context.Context, id string) (rank.Board, error) {
	if b, ok := s.CachedBoard(id); ok { // only valid ids are cached: a hit needs no check
		return *b, nil
	}
	if !rank.ValidBoardID(id) {
		return rank.Board{}, fmt.Errorf("redisstore: board %q: %w", id, rank.ErrInvalidBoard)
	}
	c, err := s.boardRef(ctx, id)
	if err != nil {
		return rank.Board{}, s.fail("board", id, err)
	}
	return c.b, nil
}

// CachedBoard implements rank.BoardCache: the config Board would return,
// when the cache holds it fresh. It is shared: the caller must not modify
// it.
func (s *Store) CachedBoard(id string) (*rank.Board, bool) {
	if c := s.hit(id); c != nil && !c.unknown {
		return &c.b, true
	}
	return nil, false
}

// Forget drops the cached config of a board changed elsewhere.
func (s *Store) Forget(id string) { s.forget(id) }
