// Package redisstore is the Redis engine of rank.Store: every operation on a
// board is one Lua script (rank/lua) over keys that share the board's
// {hash tag}, so it runs on a single node, a failover pair or Redis Cluster.
// Concurrent applies are batched into pipelines of EVALSHA.
//
// Keys (p = Config.Prefix, b = board id):
//
//	<p>:boards        set of board ids (outside every hash tag; updated by separate commands)
//	<p>:{b}:cfg       hash: v = config version (random), j = config JSON
//	<p>:{b}:seq       the board's change sequence
//	<p>:{b}:n         hash: member -> display name
//	<p>:{b}:z:<idx>   sorted set of period idx (0 for a board that never resets)
//	<p>:{b}:m:<idx>   hash: member -> sorted-set member (tiebreak first/last)
//	<p>:{b}:i:<m>|<id> idempotency record of member m's request id, expiring after
//	                   the window (R4 v1.1: ids are per member; '|' never occurs in
//	                   a member id, so the key is unambiguous)
//
// Sorted-set members for tiebreak first/last are "<16-digit seq>|<member>"
// (inverted seq for first). DESIGN.md writes ':'; '|' is used because ':'
// may occur in a member id and '|' never does, so a stored member decodes
// unambiguously whatever the board's tiebreak was when it was written.
// DeleteBoard removes the seq too: a re-created board starts at seq 1.
//
// Time: period boundaries come from the Redis server's TIME, read inside the
// scripts. The Go side keeps an estimate of that clock only to pick which
// period keys to pass (the current one and the next); a script that finds
// the real time outside both answers "clock" and the store resyncs and
// retries, so the estimate's error (half the TIME round trip plus drift
// since the last sync, resynced every 5 s) never affects a result.
//
// Board configs are cached for a few seconds. Each stored config carries a
// random version and every script checks it, so a stale cache costs one
// retry, never a wrong result. A board found missing is remembered as
// unknown for a second (bounded with the rest), so requests naming random
// boards cost no Redis read each; PutBoard and Forget drop that at once.
package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/lua"
)

// Config configures a Store. The zero value of every field but Client is usable.
type Config struct {
	// Client is required: a single node, a failover or a Cluster client
	// (NewClient builds one from a --redis-url). Store.Close closes it.
	Client redis.UniversalClient
	// Prefix starts every key; default "lb". Keys are "<prefix>:{<board>}:...".
	Prefix string
	// Now overrides the store clock, for tests only: nil means the Redis
	// server's TIME. Idempotency windows always run on the server's clock.
	Now func() time.Time
	// Timeout bounds every operation; default 2s. An operation that does not
	// finish in time fails with rank.ErrUnavailable.
	Timeout time.Duration
	// MaxBatch caps the applies sent in one pipeline; default 256.
	MaxBatch int
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Sink hears of every change Apply makes (rank.Sink). nil = nobody
	// listens.
	Sink rank.Sink
}

// Store is the Redis engine. All methods are safe for concurrent use.
type Store struct {
	cfg    Config
	client redis.UniversalClient
	log    *slog.Logger
	apply  *script
	top    *script
	ranks  *script
	batch  *batcher
	clock  clock
	closed atomic.Bool

	// Every Apply call carries an attempt token, stored with the payload
	// hash in the idempotency record. A record bearing the caller's own token
	// was written by this very call (go-redis re-sent the pipeline after a
	// timeout), so it is the first result, not a duplicate (R4).
	attemptPrefix string        // random per Store, so nodes never share tokens
	attempts      atomic.Uint64 // counter of Apply calls

	mu     sync.Mutex             // guards boards and forgets
	boards map[string]cachedBoard // board id -> config as last read, or unknown
	gen    uint64                 // bumped by every forget and stored config: a missing board read across one is not cached

	memo    []boardMemo    // the lane's configs of its current batch (work)
	groupOf map[string]int // the lane's board -> group index of the batch it builds
}

var _ rank.Store = (*Store)(nil)

type cachedBoard struct {
	b    rank.Board
	ver  string
	at   time.Time  // local time of the read
	keys *applyKeys // Apply's per-board keys and arguments
	// unknown: the board did not exist at the read (negative entry, kept
	// unknownTTL), so a client naming random boards costs no Redis read
	// per request.
	unknown bool
}

// fresh reports whether the entry is still trusted.
func (c cachedBoard) fresh(now time.Time) bool {
	if c.unknown {
		return now.Sub(c.at) < unknownTTL
	}
	return now.Sub(c.at) < boardTTL
}

// applyKeys are the keys and boxed arguments of Apply that depend only on
// the board and its config version, built once per cached config instead of
// once per event. last holds those of the most recent period pair.
type applyKeys struct {
	cfg, seq, n, idem                  string // idem: the idempotency key without member and request id
	ver, mode, order, tiebreak, window any
	last                               atomic.Pointer[periodKeys]
}

// periodKeys are the sorted-set and member-hash keys and the slot arguments
// of one period pair.
type periodKeys struct {
	sl             slots
	za, ma, zb, mb string
	args           [7]any // start, bound, end, a, b, expireA, expireB
}

func (s *Store) cached(b rank.Board, ver string) cachedBoard {
	return cachedBoard{b: b, ver: ver, at: time.Now(), keys: &applyKeys{
		cfg: s.key(b.ID, "cfg"), seq: s.key(b.ID, "seq"), n: s.key(b.ID, "n"), idem: s.key(b.ID, "i:"),
		ver: ver, mode: string(b.Mode), order: string(b.Order), tiebreak: string(b.Tiebreak),
		window: time.Duration(b.IdempotencyWindow).Milliseconds(),
	}}
}

// periodKeys returns the keys of the current period pair at now, reusing
// the last pair's while now is in its slot A: slotsFor costs three PeriodAt
// calls per event otherwise, each loading the time zone on a board outside UTC.
func (s *Store) periodKeys(c cachedBoard, now time.Time) *periodKeys {
	k, board := c.keys, c.b.ID
	if p := k.last.Load(); p != nil && p.sl.covers(now) {
		return p
	}
	sl, _ := slotsFor(c.b, "", now) // the current period never fails
	p := &periodKeys{
		sl: sl,
		za: s.zkey(board, sl.a), ma: s.mkey(board, sl.a), zb: s.zkey(board, sl.b), mb: s.mkey(board, sl.b),
		args: [7]any{sl.start, sl.bound, sl.end, sl.a, sl.b, sl.expireA, sl.expireB},
	}
	k.last.Store(p)
	return p
}

const (
	// boardTTL is how long a cached config is trusted before re-reading it;
	// the version check makes staleness safe, the TTL keeps it rare.
	boardTTL = 5 * time.Second
	// unknownTTL is how long a board found missing is taken as unknown
	// without asking Redis again. PutBoard and Forget (a board created on
	// another node, heard over the bus) drop it at once.
	unknownTTL = time.Second
	// maxCachedBoards bounds the cache; past it, expired entries are swept.
	maxCachedBoards = 4096
	// maxPage bounds a Top page and a Ranks request so one script stays short.
	maxPage = 1000
	// staleRetries is how often an operation re-reads config or clock after
	// a script reported either as stale.
	staleRetries = 3
)

// ErrClosed is returned by every operation after Close.
var ErrClosed = errors.New("redisstore: store closed")

// New validates cfg, loads every script (SCRIPT LOAD) and syncs the clock.
// It fails with rank.ErrUnavailable when Redis does not answer in time.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, errors.New("redisstore: Config.Client is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "lb"
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, fmt.Errorf("redisstore: Config.Prefix %q must not contain braces (they would move the hash tag)", cfg.Prefix)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = 256
	}
	if cfg.Timeout < 0 || cfg.MaxBatch < 0 {
		return nil, errors.New("redisstore: Config.Timeout and MaxBatch must not be negative")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		cfg:     cfg,
		client:  cfg.Client,
		log:     log,
		apply:   newScript(lua.Apply),
		top:     newScript(lua.Top),
		ranks:   newScript(lua.Ranks),
		boards:  make(map[string]cachedBoard),
		groupOf: make(map[string]int),
	}
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("redisstore: attempt tokens: %w", err)
	}
	s.attemptPrefix = strconv.FormatUint(binary.LittleEndian.Uint64(seed[:])%(36*36*36*36*36*36), 36) + "-"
	s.clock.injected = cfg.Now
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	for _, sc := range []*script{s.apply, s.top, s.ranks} {
		if err := sc.load(ctx, s.client); err != nil {
			return nil, s.fail("new", "", err)
		}
	}
	if err := s.clock.sync(ctx, s.client); err != nil {
		return nil, s.fail("new", "", err)
	}
	s.batch = newBatcher(s.client, s.apply, cfg, log, s.work)
	return s, nil
}

// Close stops the batcher, fails calls still queued, and closes the client.
// Later calls fail with ErrClosed. It is safe to call twice.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.batch.close()
	return s.client.Close()
}

// Ping reports whether Redis answers within Timeout (for /readyz).
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.client.Ping(ctx).Err(); err != nil {
		return s.fail("ping", "", err)
	}
	return nil
}

// ---- keys ----

func (s *Store) key(board, suffix string) string {
	return s.cfg.Prefix + ":{" + board + "}:" + suffix
}

func (s *Store) boardsKey() string { return s.cfg.Prefix + ":boards" }

func (s *Store) zkey(board string, idx int64) string {
	return s.key(board, "z:"+strconv.FormatInt(idx, 10))
}

func (s *Store) mkey(board string, idx int64) string {
	return s.key(board, "m:"+strconv.FormatInt(idx, 10))
}

// ---- boards ----

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
	s.forget(b.ID)
	if err := s.client.HSet(ctx, s.key(b.ID, "cfg"), "v", ver, "j", j).Err(); err != nil {
		return rank.Board{}, s.fail("put board", b.ID, err)
	}
	// The list lives in another slot, so it is a separate command; Boards
	// skips ids whose config is missing, DeleteBoard removes config first.
	if err := s.client.SAdd(ctx, s.boardsKey(), b.ID).Err(); err != nil {
		return rank.Board{}, s.fail("put board", b.ID, err)
	}
	s.remember(b.ID, s.cached(b, ver))
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
	out := make([]rank.Board, 0, len(ids))
	const chunk = 500
	for len(ids) > 0 {
		part := ids[:min(chunk, len(ids))]
		ids = ids[len(part):]
		pipe := s.client.Pipeline()
		cmds := make([]*redis.StringCmd, len(part))
		for i, id := range part {
			cmds[i] = pipe.HGet(ctx, s.key(id, "cfg"), "j")
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
	s.forget(id)
	n, err := s.client.Del(ctx, s.key(id, "cfg")).Result()
	if err != nil {
		return s.fail("delete board", id, err)
	}
	if err := s.client.SRem(ctx, s.boardsKey(), id).Err(); err != nil {
		return s.fail("delete board", id, err)
	}
	if err := s.deleteKeys(ctx, escapeGlob(s.cfg.Prefix)+":{"+id+"}:*"); err != nil {
		return s.fail("delete board", id, err)
	}
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
	vals, err := s.client.HMGet(ctx, s.key(id, "cfg"), "v", "j").Result()
	if err != nil {
		return cachedBoard{}, err
	}
	ver, _ := vals[0].(string)
	j, _ := vals[1].(string)
	if ver == "" || j == "" {
		s.rememberUnknown(id, gen)
		return cachedBoard{}, rank.ErrUnknownBoard
	}
	var b rank.Board
	if err := json.Unmarshal([]byte(j), &b); err != nil {
		return cachedBoard{}, fmt.Errorf("config of %s: %w", id, err)
	}
	c := s.cached(b, ver)
	s.remember(id, c)
	return c, nil
}

// board returns the config of a board from the cache or Redis.
func (s *Store) board(ctx context.Context, id string) (cachedBoard, error) {
	s.mu.Lock()
	c, ok := s.boards[id]
	s.mu.Unlock()
	if ok && c.fresh(time.Now()) {
		if c.unknown {
			return cachedBoard{}, rank.ErrUnknownBoard
		}
		return c, nil
	}
	return s.loadBoard(ctx, id)
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

// rememberLocked stores c, keeping the cache bounded (s.mu held).
func (s *Store) rememberLocked(id string, c cachedBoard) {
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
	s.boards[id] = c
}

func (s *Store) forget(id string) {
	s.mu.Lock()
	delete(s.boards, id)
	s.gen++
	s.mu.Unlock()
}

// ---- periods ----

// slots are the two period keys a script may pick between, by its own
// clock: A until boundary, B from it. A board without periods, or a read
// of an explicit index, has boundary 0 and A = B.
type slots struct {
	a, b              int64 // period indexes
	start, bound, end int64 // unix ms: A is [start, bound), B is [bound, end)
	expireA, expireB  int64 // unix ms; 0 = no expiry
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// slotsFor resolves a period selector at the estimated time now.
func slotsFor(b rank.Board, sel rank.PeriodSel, now time.Time) (slots, error) {
	idx, err := sel.Resolve(b, now)
	if err != nil {
		return slots{}, err
	}
	if b.Reset == rank.None {
		return slots{}, nil
	}
	if sel != "" && sel != "current" && sel != "previous" {
		return slots{a: idx, b: idx}, nil // an explicit index
	}
	cur := rank.PeriodAt(b, now)
	next := rank.PeriodAt(b, cur.End)
	sl := slots{start: ms(cur.Start), bound: ms(cur.End), end: ms(next.End)}
	if sel == "previous" {
		sl.a, sl.b = idx, cur.Index
		return sl, nil
	}
	sl.a, sl.b = cur.Index, next.Index
	sl.expireA, sl.expireB = ms(cur.ExpireAt()), ms(next.ExpireAt())
	return sl, nil
}

// covers reports whether sl is the current pair at now: now is in slot A,
// or the board has no periods (one pair for all time).
func (sl slots) covers(now time.Time) bool {
	t := ms(now)
	return sl.bound == 0 || (t >= sl.start && t < sl.bound)
}

// pick is the period index the script chose (slot 1 = A, 2 = B).
func (sl slots) pick(slot int64) int64 {
	if slot == 2 {
		return sl.b
	}
	return sl.a
}

// ---- errors ----

// scriptError is the code of an "LB <code>" error reply, or "".
func scriptError(err error) string {
	var re redis.Error
	if errors.As(err, &re) {
		if code, ok := strings.CutPrefix(re.Error(), "LB "); ok {
			return code
		}
	}
	return ""
}

var scriptErrors = map[string]error{
	"unknown_board":   rank.ErrUnknownBoard,
	"bad_request":     rank.ErrBadRequest,
	"invalid_score":   rank.ErrInvalidScore,
	"out_of_range":    rank.ErrOutOfRange,
	"invalid_member":  rank.ErrInvalidMember,
	"delta_too_large": rank.ErrDeltaTooLarge,
}

// unavailablePrefixes are Redis error replies that mean "not now".
var unavailablePrefixes = []string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN",
	"READONLY", "NOREPLICAS", "NOSCRIPT", "ERR max number of clients", "MISCONF"}

// fail wraps err once with the operation, mapping it to the contract:
// script codes to their sentinels, transport failures and timeouts to
// rank.ErrUnavailable, a cancelled caller to its context error.
func (s *Store) fail(op, board string, err error) error {
	where := "redisstore: " + op
	if board != "" {
		where += " " + board
	}
	if code := scriptError(err); code != "" {
		if sentinel, ok := scriptErrors[code]; ok {
			return fmt.Errorf("%s: %w", where, sentinel)
		}
		return fmt.Errorf("%s: script error %q", where, code)
	}
	var asRank *rank.Error
	switch {
	case errors.As(err, &asRank), errors.Is(err, ErrClosed):
		return fmt.Errorf("%s: %w", where, err)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", where, err)
	case errors.Is(err, redis.ErrClosed):
		return fmt.Errorf("%s: %w", where, ErrClosed)
	}
	var re redis.Error
	if errors.As(err, &re) {
		for _, p := range unavailablePrefixes {
			if strings.HasPrefix(re.Error(), p) {
				return fmt.Errorf("%s: %w: %v", where, rank.ErrUnavailable, err)
			}
		}
		return fmt.Errorf("%s: %w", where, err)
	}
	// Network errors, dial failures, pool and deadline timeouts.
	return fmt.Errorf("%s: %w: %v", where, rank.ErrUnavailable, err)
}

// ---- time ----

// clock estimates the Redis server's clock (see the package comment).
type clock struct {
	injected func() time.Time

	mu     sync.Mutex    // guards offset and synced
	offset time.Duration // server time - local time
	synced time.Time     // local time of the last sync; zero forces one
}

const clockResync = 5 * time.Second

func (c *clock) sync(ctx context.Context, client redis.UniversalClient) error {
	if c.injected != nil {
		return nil
	}
	t0 := time.Now()
	st, err := client.Time(ctx).Result()
	if err != nil {
		return err
	}
	t1 := time.Now()
	mid := t0.Add(t1.Sub(t0) / 2)
	c.mu.Lock()
	c.offset, c.synced = st.Sub(mid), t1
	c.mu.Unlock()
	return nil
}

// now is the estimated server time, resynced when old. A failed resync
// keeps the old estimate: the script checks it anyway.
func (c *clock) now(ctx context.Context, client redis.UniversalClient) time.Time {
	if c.injected != nil {
		return c.injected()
	}
	c.mu.Lock()
	off, synced := c.offset, c.synced
	c.mu.Unlock()
	if time.Since(synced) >= clockResync {
		if err := c.sync(ctx, client); err == nil {
			c.mu.Lock()
			off = c.offset
			c.mu.Unlock()
		}
	}
	return time.Now().Add(off)
}

func (c *clock) invalidate() {
	c.mu.Lock()
	c.synced = time.Time{}
	c.mu.Unlock()
}
