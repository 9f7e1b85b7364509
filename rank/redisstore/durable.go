package redisstore

// Durable acknowledgements (docs/protocol.md §10, R25): with
// Config.Replicas = N, every apply pipeline ends with WAIT N timeout, on
// the connection that carried its scripts. WAIT answers how many replicas
// have acknowledged everything that connection wrote, so when it answers
// fewer than N the pipeline's applied events are answered unavailable:
// they may be lost if the master dies now, and a re-send with the same id
// is safe (R4). Appended to the pipeline, the WAIT costs no round trip of
// its own, only the time the replica takes to acknowledge.
//
// On a Redis Cluster, go-redis splits a pipeline by master and sends each
// master's part on one pooled connection of that master's own client, so
// one WAIT in the pipeline would reach one master, on a connection that
// carried none of the writes. There a pipeline hook on every master's
// client (waitHook) ends each part with a WAIT of its own, written on the
// part's connection right after its commands, and the lane answers each
// command by the WAIT of the part that ran it. A part go-redis re-sends
// (MOVED, ASK, a broken connection) gets a new WAIT; a command that ran
// in a part no WAIT ended (a master's client not hooked yet) counts as
// unconfirmed.
//
// WAIT covers the writes of its own connection only. An event answered
// from a record already written (a duplicate whose first send wrote it,
// maybe on another pooled connection, maybe unconfirmed; or a pipeline
// go-redis re-sent on a new connection) and a sharded board's record
// rewrite (another pipeline) are not covered by their pipeline's WAIT; for
// those, lanes send one write that Redis replicates, which moves the
// connection's replication offset to the master's current one, followed
// by WAIT: a PUBLISH on one master, and on a Cluster (where PUBLISH goes
// over the cluster bus, not to the replicas) a short-lived key in each
// slot concerned.

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

// defaultReplicaTimeout is Config.ReplicaTimeout's default, the
// --redis-replica-timeout default of docs/protocol.md §10.
const defaultReplicaTimeout = time.Second

// syncChannel is the channel of the PUBLISH that moves a connection's
// replication offset; nobody subscribes to it.
const syncChannel = "lb:replica-sync"

// syncTTL is how long a sync key (syncKey) lives: it only has to be
// written; nothing reads it.
const syncTTL = time.Second

// checkReplicas refuses a configuration the engine cannot honour: a
// replica wait at least as long as the store timeout would fail every
// pipeline on the client's read deadline.
func checkReplicas(cfg Config) error {
	if cfg.Replicas == 0 {
		return nil
	}
	if cfg.ReplicaTimeout >= cfg.Timeout {
		return fmt.Errorf("redisstore: Config.ReplicaTimeout %s must be shorter than Timeout %s", cfg.ReplicaTimeout, cfg.Timeout)
	}
	return nil
}

// replicaWait is a lane's WAIT. A nil *replicaWait (Replicas = 0) sends
// nothing and confirms everything.
type replicaWait struct {
	n       int
	timeout time.Duration
	ms      int64
	prefix  string // Config.Prefix, for sync keys
	log     *slog.Logger
	warned  time.Time // the last warning; lane only
	// hook ends each master's part of a pipeline with a WAIT, on a Redis
	// Cluster; nil on one master.
	hook *waitHook
	// tags names the hash tags of the slots a call wrote in
	// (Store.syncTags), for the sync keys of confirmEarlier on a Cluster.
	tags func(*call) []string
}

func newReplicaWait(cfg Config, client redis.UniversalClient, log *slog.Logger) *replicaWait {
	if cfg.Replicas <= 0 {
		return nil
	}
	w := &replicaWait{n: cfg.Replicas, timeout: cfg.ReplicaTimeout, ms: max(cfg.ReplicaTimeout.Milliseconds(), 1), prefix: cfg.Prefix, log: log}
	if cc, ok := client.(*redis.ClusterClient); ok {
		w.hook = newWaitHook(cc, w)
	}
	return w
}

// setTags sets w.tags; nil-safe.
func (w *replicaWait) setTags(tags func(*call) []string) {
	if w != nil {
		w.tags = tags
	}
}

// exec sends pipe, whose commands are cmds' scripts, and sets each cmd's
// unsynced. Without replicas it only sends.
func (w *replicaWait) exec(ctx context.Context, pipe redis.Pipeliner, cmds []cmd) {
	switch {
	case w == nil:
		_, _ = pipe.Exec(ctx) // each command carries its own error
	case w.hook == nil:
		wait := pipe.Do(ctx, "wait", w.n, w.ms)
		_, _ = pipe.Exec(ctx)
		err := w.check(wait)
		for i := range cmds {
			cmds[i].unsynced = err
		}
	default:
		sent := make([]redis.Cmder, len(cmds))
		keys := make([]string, len(cmds))
		for i := range cmds {
			sent[i], keys[i] = cmds[i].res, cmds[i].keys[0]
		}
		errs := w.hook.exec(ctx, pipe, sent, keys)
		for i := range cmds {
			cmds[i].unsynced = errs[i]
		}
	}
}

// check turns a WAIT's answer into nil (confirmed) or an error wrapping
// rank.ErrUnavailable, warning at most once a second: while replicas are
// missing every pipeline fails so, and the operator needs to hear it once.
func (w *replicaWait) check(cmd *redis.Cmd) error {
	got, err := cmd.Int64()
	switch {
	case err != nil:
		err = fmt.Errorf("%w: waiting for %d replicas: %v", rank.ErrUnavailable, w.n, err)
	case got < int64(w.n):
		err = fmt.Errorf("%w: the write reached %d of %d replicas within %s", rank.ErrUnavailable, got, w.n, w.timeout)
	default:
		return nil
	}
	if now := time.Now(); w.log != nil && now.Sub(w.warned) >= time.Second {
		w.warned = now
		w.log.Warn("redisstore: writes not confirmed on enough replicas; their events are answered unavailable", "err", err)
	}
	return err
}

// uncovered reports whether c was answered from a write its pipeline's
// WAIT may not cover: a record found already written (a duplicate, or the
// call's own first write when go-redis re-sent the pipeline on a new
// connection), or a sharded event, whose record shardFollowUp rewrote in
// a pipeline of its own.
func uncovered(c *call) bool {
	return c.err == nil && (c.found || c.shard != nil)
}

// confirmEarlier confirms, once per lane round, the writes the round's
// pipeline WAITs do not cover (uncovered). Unconfirmed, they fail
// unavailable like the rest.
func (w *replicaWait) confirmEarlier(ctx context.Context, client redis.UniversalClient, calls []*call) {
	if w == nil {
		return
	}
	var err error
	if w.hook == nil {
		err = w.syncOne(ctx, client, calls)
	} else {
		err = w.syncCluster(ctx, client, calls)
	}
	if err == nil {
		return
	}
	for _, c := range calls {
		if uncovered(c) {
			c.err, c.unsynced = fmt.Errorf("redisstore: apply %s: %w", c.e.Board, err), !c.r.Duplicate
		}
	}
}

// syncOne is confirmEarlier on one master: a PUBLISH, which Redis
// replicates there, and a WAIT, on one connection.
func (w *replicaWait) syncOne(ctx context.Context, client redis.UniversalClient, calls []*call) error {
	if !slices.ContainsFunc(calls, uncovered) {
		return nil
	}
	pipe := client.Pipeline()
	pipe.Publish(ctx, syncChannel, "")
	wait := pipe.Do(ctx, "wait", w.n, w.ms)
	_, _ = pipe.Exec(ctx)
	return w.check(wait)
}

// syncCluster is confirmEarlier on a Redis Cluster: a sync key written in
// each slot the uncovered calls wrote in, each master's part ended by its
// WAIT (waitHook).
func (w *replicaWait) syncCluster(ctx context.Context, client redis.UniversalClient, calls []*call) error {
	var keys []string
	for _, c := range calls {
		if !uncovered(c) {
			continue
		}
		for _, tag := range w.tags(c) {
			if k := w.syncKey(tag); !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	pipe := client.Pipeline()
	sent := make([]redis.Cmder, len(keys))
	for i, k := range keys {
		sent[i] = pipe.Set(ctx, k, "", syncTTL)
	}
	for i, err := range w.hook.exec(ctx, pipe, sent, keys) {
		if err == nil {
			err = sent[i].Err()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// syncKey is the key of confirmEarlier's write in the slot of hash tag
// tag. It matches a board's key pattern only if tag is a board's, so a
// board's deletion removes it with the rest.
func (w *replicaWait) syncKey(tag string) string {
	return w.prefix + ":{" + tag + "}:replica-sync"
}

// waitHook is the redis.Hook, added to every master's client of a Redis
// Cluster, that ends the master's part of a lane's pipeline with a WAIT on
// the part's connection. It acts only on pipelines whose context carries
// a waitRound under the hook itself (exec), so a client shared with other
// stores or other work is otherwise unchanged.
type waitHook struct {
	client *redis.ClusterClient
	w      *replicaWait

	mu     sync.Mutex
	hooked map[*redis.Client]bool // guarded by mu: the clients carrying the hook
}

func newWaitHook(cc *redis.ClusterClient, w *replicaWait) *waitHook {
	h := &waitHook{client: cc, w: w, hooked: make(map[*redis.Client]bool)}
	// The masters a failover or a resharding brings: go-redis creates
	// their clients then. Those that exist already are hooked by exec.
	cc.OnNewNode(h.add)
	return h
}

// add hooks a node's client, once.
func (h *waitHook) add(c *redis.Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.hooked[c] {
		h.hooked[c] = true
		c.AddHook(h)
	}
}

// waitRound is one pipeline's WAITs: each master's part that ran, and the
// WAIT that ended it. Parts run concurrently, hence the mutex.
type waitRound struct {
	mu    sync.Mutex
	waits map[redis.Cmder]bool // the WAITs appended, so a re-sent part drops its stale one
	parts []waitPart
}

type waitPart struct {
	ran  []redis.Cmder // the part's commands that got an answer
	wait *redis.Cmd
}

// exec sends pipe, whose commands include sent (each with a key in
// keys, for its master), and returns for each of sent nil when the WAIT
// of every part that ran it confirmed it, else an error wrapping
// rank.ErrUnavailable. A command that failed gets nil: its own error
// answers it.
func (h *waitHook) exec(ctx context.Context, pipe redis.Pipeliner, sent []redis.Cmder, keys []string) []error {
	for _, k := range keys {
		// Before the send, so the part is hooked already; a master the
		// client does not know yet is hooked by OnNewNode when it does.
		if c, err := h.client.MasterForKey(ctx, k); err == nil {
			h.add(c)
		}
	}
	r := &waitRound{waits: make(map[redis.Cmder]bool)}
	_, _ = pipe.Exec(context.WithValue(ctx, h, r))
	// Exec returned: every part is done, so r is read without its mutex.
	verdict := make(map[redis.Cmder]error, len(sent))
	for _, p := range r.parts {
		err := h.w.check(p.wait)
		for _, c := range p.ran {
			if prev, seen := verdict[c]; !seen || prev == nil {
				verdict[c] = err
			}
		}
	}
	errs := make([]error, len(sent))
	for i, c := range sent {
		if c.Err() != nil {
			continue
		}
		err, seen := verdict[c]
		if !seen {
			err = fmt.Errorf("%w: no WAIT followed the write on its master's connection", rank.ErrUnavailable)
		}
		errs[i] = err
	}
	return errs
}

// DialHook is go-redis's own.
func (h *waitHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook is go-redis's own: a single command is not a lane's.
func (h *waitHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook ends a lane pipeline's part with a WAIT, sent on the
// part's connection after its commands, and notes what the part ran.
func (h *waitHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r, ok := ctx.Value(h).(*waitRound)
		if !ok {
			return next(ctx, cmds)
		}
		part := make([]redis.Cmder, 0, len(cmds)+1)
		r.mu.Lock()
		for _, c := range cmds {
			if !r.waits[c] { // a WAIT of an earlier attempt, re-sent with its part
				part = append(part, c)
			}
		}
		if len(part) == 0 {
			r.mu.Unlock()
			return nil
		}
		wait := redis.NewCmd(ctx, "wait", h.w.n, h.w.ms)
		r.waits[wait] = true
		r.mu.Unlock()
		err := next(ctx, append(part, wait))
		var ran []redis.Cmder
		for _, c := range part {
			if c.Err() == nil {
				ran = append(ran, c)
			}
		}
		r.mu.Lock()
		r.parts = append(r.parts, waitPart{ran: ran, wait: wait})
		r.mu.Unlock()
		return err
	}
}

// syncTags is the hash tags of the slots c wrote in that its pipeline's
// WAIT may not cover (uncovered): its board's (the record, a sharded
// board's seq) and, on a sharded board, its shard's and its record
// bucket's.
func (s *Store) syncTags(c *call) []string {
	tags := []string{hashTag(c.seq)}
	if c.shard != nil {
		tags = append(tags, hashTag(c.shard.seq))
	}
	if c.recH != "" {
		tags = append(tags, hashTag(c.recH))
	}
	return tags
}
