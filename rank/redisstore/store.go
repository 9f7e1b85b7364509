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
//	<p>:{b}:ban       hash: the board's bans, own and global copies (R21, ban.lua)
//	<p>:{b}:x:<idx>   sorted set of period idx's entries hidden by bans
//	<p>:gbans         hash: member -> global ban record (outside every hash tag)
//	<p>:{b}:r:<W>.<k>  hash: idempotency records of time bucket k = floor(now / W),
//	                   W the window in ms: field "<m>|<id>" (member m's request id;
//	                   R4 v1.1: ids are per member; '|' never occurs in a member id,
//	                   so the field is unambiguous) -> record; a record is found for
//	                   W to 2W (rank/lua/prelude.lua; the cfg hash's fields rw, rs,
//	                   ro and rb are the scripts' own bookkeeping)
//	<p>:{b}:guard      never written: apply.lua names it so that on Redis Cluster a
//	                   call never runs while its slot migrates (cluster.go)
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
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/lua"
)

// Config is a Store's tuning; its zero value is usable.
type Config struct {
	// Prefix starts every key; default "lb". Keys are "<prefix>:{<board>}:...".
	Prefix string
	// Now overrides the store clock, for tests only: nil means the Redis
	// server's TIME. Idempotency records are bucketed on this clock too;
	// their hashes expire on the server's (a relative PEXPIRE).
	Now func() time.Time
	// Timeout bounds every operation; default 2s. An operation that does not
	// finish in time fails with rank.ErrUnavailable.
	Timeout time.Duration
	// MaxBatch caps the applies sent in one pipeline; default 256.
	MaxBatch int
	// Lanes is how many apply lanes (lane.go) the store runs, each with
	// one pipeline in flight; default DefaultLanes. A submitter's events
	// (rank.Event.Submitter) to a board all go to one lane, so they keep
	// their order (a sharded board's go to the board's lane, lane.go);
	// submitters spread over the lanes, so while one lane reads its replies
	// and builds its next pipeline, Redis works on another's.
	Lanes int
	// ShardLinger is how long a lane round holding a sharded board's
	// events waits for more before it is sent, until it holds enough to
	// fill the board's per-shard calls (lane.go); default
	// DefaultShardLinger, negative = never. Rounds of unsharded boards'
	// events never wait.
	ShardLinger time.Duration
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Replicas makes an event's acknowledgement wait until its write
	// reached this many replicas (Redis WAIT at the end of its pipeline,
	// durable.go; docs/protocol.md §10); 0 acknowledges at the master's
	// answer. Not available on a Cluster client yet.
	Replicas int
	// ReplicaTimeout bounds that wait; default 1s, and shorter than
	// Timeout. Past it the pipeline's events fail with rank.ErrUnavailable
	// (they may have been applied; a re-send with the same id is safe).
	ReplicaTimeout time.Duration
	// HotInterval is how often the keeper builds hot boards' next views
	// ahead of their boundaries (hot.go); default 250ms. Negative: no
	// keeper (tests drive the steps; boundaries are then done by whoever
	// reads or writes first, step by step).
	HotInterval time.Duration
	// EraseChunk is how many idempotency record fields one erasure call
	// looks at (erase.go): each call stays a few milliseconds long, however
	// many records a board holds; default DefaultEraseChunk.
	EraseChunk int
}

// Store is the Redis engine. All methods are safe for concurrent use.
type Store struct {
	cfg      Config
	client   redis.UniversalClient
	log      *slog.Logger
	apply    *script
	top      *script
	ranks    *script
	ban      *script
	shard    *script // reads of one shard of a sharded board (shard.go)
	hot      *script // hot.lua (hot.go)
	rerecord *script // rerecord.lua (shard.go)
	shardSeq *script // shardseq.lua (shard_write.go)
	derive   *script // derived.go
	deps     *script // derived.go
	// holdScript is hold.lua (integrity.go).
	holdScript *script
	clock      clock
	closed     atomic.Bool
	// epoch is a local reading taken at New; epoch.Add(time.Since(epoch))
	// is a reading of the monotonic clock alone, for deadlines (monoNow).
	epoch time.Time

	// Every Apply call carries an attempt token, stored with the payload
	// hash in the idempotency record. A record bearing the caller's own token
	// was written by this very call (go-redis re-sent the pipeline after a
	// timeout), so it is the first result, not a duplicate (R4).
	attemptPrefix string        // random per Store, so nodes never share tokens
	attempts      atomic.Uint64 // counter of Apply calls
	rounds        atomic.Uint64 // counter of lane rounds holding sharded events (roundToken)

	mu sync.Mutex // guards boards, groups and forgets
	// boards: board id -> config as last read, or unknown. An entry is
	// never modified once stored (a read replaces it), so a hit is used
	// outside the lock without copying it.
	boards map[string]*cachedBoard
	groups map[string]string     // board id -> group, as last read (derived.go)
	gen    uint64                // bumped by every forget and stored config: a missing board read across one is not cached
	loads  map[string]*boardLoad // configs being read (boardload.go)

	hotMu       sync.Mutex       // guards hotCur
	hotCur      map[string]int64 // hot board -> the bucket this node last saw its view current for
	keeperStop  chan struct{}    // closed by Close to end the keeper (hot.go)
	keeperEnded chan struct{}

	buildMu   sync.Mutex                                      // guards builders
	builders  map[string]int                                  // derived board -> builds this node's PUTs run (build.go)
	buildHook atomic.Pointer[func(token string, reply []any)] // tests only: hears each build.lua reply (build.go)

	lanes []*lane // the apply lanes (lane.go); laneOf picks one
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
	// shards holds, on a sharded board, each shard's config and keys (its
	// ID the shard's key-space id, shardID); nil otherwise.
	shards []cachedBoard

	deps     []dep // the board's dependants, as stored with this version (derived.go)
	building bool  // a derived board whose build over data has not finished
}

// fresh reports whether the entry is still trusted at now.
func (c *cachedBoard) fresh(now time.Time) bool { return now.Sub(c.at) < c.ttl() }

// ttl is how long the entry is trusted after its read.
func (c *cachedBoard) ttl() time.Duration {
	if c.unknown {
		return unknownTTL
	}
	return boardTTL
}

// applyKeys are the keys and boxed arguments of Apply that depend only on
// the board and its config version, built once per cached config instead of
// once per event. last holds those of the most recent period pair.
type applyKeys struct {
	cfg, seq, n, ban, guard string // guard: a key never written (apply.lua's KEYS[11])
	ver                     any
	spec                    string // the apply config (spec.go), which apply.lua reads from the cfg hash
	// hot.lua's arguments: the idempotency window in ms, the lifecycle's
	// (§6): starts_at and ends_at ("" = none), grace in ms,
	// max_submissions, the cap (§18: "<points>.<per>", "" = none).
	window, startsAt, endsAt, grace, maxSubs, cap any
	last                                          atomic.Pointer[periodKeys]
}

// periodKeys are the sorted-set and member-hash keys and the slot arguments
// of one period pair.
type periodKeys struct {
	sl                     slots
	za, ma, zb, mb, zp, mp string
	args                   [7]any // start, bound, end, a, b, expireA, expireB
	pargs                  [3]any // start of P, P, expireP

	dkeys []string // the dependants' keys and arguments (derived.go)
	dargs []any
}

func (s *Store) cached(b rank.Board, ver string) cachedBoard {
	c := s.cachedOne(b, ver)
	c.shards = s.cachedShards(b, ver)
	return c
}

func (s *Store) cachedOne(b rank.Board, ver string) cachedBoard {
	g := b.GroupID()
	return cachedBoard{b: b, ver: ver, at: time.Now(), keys: &applyKeys{
		cfg: s.keyIn(g, b.ID, "cfg"), seq: s.keyIn(g, b.ID, "seq"), n: s.keyIn(g, b.ID, "n"), ban: s.keyIn(g, b.ID, "ban"), guard: s.keyIn(g, b.ID, "guard"),
		ver: ver, spec: applySpec(b),
		window:   time.Duration(b.IdempotencyWindow).Milliseconds(),
		startsAt: msArg(b.StartsAt), endsAt: msArg(b.EndsAt),
		grace: time.Duration(b.Grace).Milliseconds(), maxSubs: b.MaxSubmissions, cap: capArg(b),
	}}
}

// msArg is a schedule time as a script argument: unix ms, "" when unset.
func msArg(t rank.Instant) any {
	if t.IsZero() {
		return ""
	}
	return t.UnixMilli()
}

// periodKeys returns the keys of the current period pair at now, reusing
// the last pair's while now is in its slot A: slotsFor costs three PeriodAt
// calls per event otherwise, each loading the time zone on a board outside UTC.
func (s *Store) periodKeys(c cachedBoard, now time.Time) *periodKeys {
	k, board := c.keys, &c.b
	if p := k.last.Load(); p != nil && p.sl.covers(now) {
		return p
	}
	sl, _ := slotsFor(c.b, "", now) // the current period never fails
	p := s.slotKeys(board, sl)
	p.dkeys, p.dargs = s.depKeys(c, sl)
	k.last.Store(p)
	return p
}

// slotKeys are the keys and arguments of the slots sl of board b, but the
// derived boards'.
func (s *Store) slotKeys(b *rank.Board, sl slots) *periodKeys {
	return &periodKeys{
		sl: sl,
		za: s.zkey(b, sl.a), ma: s.mkey(b, sl.a), zb: s.zkey(b, sl.b), mb: s.mkey(b, sl.b),
		zp: s.zkey(b, sl.p), mp: s.mkey(b, sl.p),
		args:  [7]any{sl.start, sl.bound, sl.end, sl.a, sl.b, sl.expireA, sl.expireB},
		pargs: [3]any{sl.pstart, sl.p, sl.expireP},
	}
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
	// staleRetries is how often an operation re-reads config or clock after
	// a script reported either as stale.
	staleRetries = 3
)

// ErrClosed is returned by every operation after Close.
var ErrClosed = errors.New("redisstore: store closed")

// New validates cfg, loads every script (SCRIPT LOAD) and syncs the clock.
// client is a single node, a failover or a Cluster client (NewClient builds
// one from a --redis-url); Store.Close closes it. The sink hears of every
// change, and Complete runs once per pipeline with a function that runs
// that pipeline's Done callbacks, in submission order, on the completer's
// goroutine. New fails with rank.ErrUnavailable when Redis does not answer
// in time.
func New(ctx context.Context, client redis.UniversalClient, hooks rank.Hooks, cfg Config) (*Store, error) {
	if client == nil {
		return nil, errors.New("redisstore: new: a client is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "lb"
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, fmt.Errorf("redisstore: Config.Prefix %q must not contain braces (they would move the hash tag)", cfg.Prefix)
	}
	if cfg.EraseChunk <= 0 {
		cfg.EraseChunk = DefaultEraseChunk
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = 256
	}
	if cfg.ShardLinger == 0 {
		cfg.ShardLinger = DefaultShardLinger
	}
	if cfg.Lanes == 0 {
		cfg.Lanes = DefaultLanes
	}
	if cfg.ReplicaTimeout == 0 {
		cfg.ReplicaTimeout = defaultReplicaTimeout
	}
	if cfg.Timeout < 0 || cfg.MaxBatch < 0 || cfg.Lanes < 0 || cfg.Replicas < 0 || cfg.ReplicaTimeout < 0 {
		return nil, errors.New("redisstore: Config.Timeout, MaxBatch, Lanes, Replicas and ReplicaTimeout must not be negative")
	}
	if err := checkReplicas(cfg); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		cfg:        cfg,
		client:     client,
		log:        log,
		apply:      newScript(lua.Apply),
		top:        newScript(lua.Top),
		ranks:      newScript(lua.Ranks),
		ban:        newScript(lua.Ban),
		shard:      newScript(lua.Shard),
		hot:        newScript(lua.Hot),
		rerecord:   newScript(lua.Rerecord),
		shardSeq:   newScript(lua.ShardSeq),
		hotCur:     make(map[string]int64),
		boards:     make(map[string]*cachedBoard),
		groups:     make(map[string]string),
		derive:     newScript(lua.Build),
		deps:       newScript(lua.Deps),
		holdScript: newScript(lua.Hold),
		epoch:      time.Now(),
	}
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("redisstore: attempt tokens: %w", err)
	}
	s.attemptPrefix = strconv.FormatUint(binary.LittleEndian.Uint64(seed[:])%(36*36*36*36*36*36), 36) + "-"
	s.clock.injected = cfg.Now
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	for _, sc := range []*script{s.apply, s.top, s.ranks, s.ban, s.shard, s.hot, s.rerecord, s.shardSeq, s.derive, s.deps, s.holdScript} {
		if err := sc.load(ctx, s.client); err != nil {
			return nil, s.fail("new", "", err)
		}
	}
	if err := s.clock.sync(ctx, s.client); err != nil {
		return nil, s.fail("new", "", err)
	}
	for range cfg.Lanes {
		b := newLane(s.client, s.apply, cfg, hooks, log, s.work)
		b.wait.setTags(s.syncTags)
		if cc, ok := client.(*redis.ClusterClient); ok {
			b.down = newDownSlots(cc)
		}
		s.lanes = append(s.lanes, b)
	}
	s.keeperStop, s.keeperEnded = make(chan struct{}), make(chan struct{})
	if cfg.HotInterval == 0 {
		cfg.HotInterval = hotKeeperTick
	}
	if cfg.HotInterval > 0 {
		go s.keeper(s.keeperStop, s.keeperEnded, cfg.HotInterval)
	} else {
		close(s.keeperEnded)
	}
	return s, nil
}

// Close stops the lanes, fails calls still queued, and closes the client.
// Later calls fail with ErrClosed. It is safe to call twice.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	close(s.keeperStop)
	<-s.keeperEnded
	for _, b := range s.lanes {
		b.close()
	}
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
