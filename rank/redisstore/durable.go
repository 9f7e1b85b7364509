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
// WAIT covers the writes of its own connection only. An event answered
// from a record already written (a duplicate whose first send wrote it,
// maybe on another pooled connection, maybe unconfirmed; or a pipeline
// go-redis re-sent on a new connection) and a sharded board's record
// rewrite (another pipeline) are not covered by their pipeline's WAIT; for
// those, lanes send one PUBLISH (which Redis replicates, so it moves the connection's
// replication offset to the master's current one) followed by WAIT.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// checkReplicas refuses a configuration the engine cannot honour: a
// replica wait at least as long as the store timeout would fail every
// pipeline on the client's read deadline, and on a Cluster a pipeline
// spans several masters, each needing its own WAIT, which is not built.
func checkReplicas(cfg Config, cluster bool) error {
	if cfg.Replicas == 0 {
		return nil
	}
	if cluster {
		return errors.New("redisstore: Config.Replicas is not supported on a Redis Cluster client")
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
	log     *slog.Logger
	warned  time.Time // the last warning; lane only
}

func newReplicaWait(cfg Config, log *slog.Logger) *replicaWait {
	if cfg.Replicas <= 0 {
		return nil
	}
	return &replicaWait{n: cfg.Replicas, timeout: cfg.ReplicaTimeout, ms: max(cfg.ReplicaTimeout.Milliseconds(), 1), log: log}
}

// append adds the WAIT to pipe, after the commands it confirms.
func (w *replicaWait) append(ctx context.Context, pipe redis.Pipeliner) *redis.Cmd {
	if w == nil {
		return nil
	}
	return pipe.Do(ctx, "wait", w.n, w.ms)
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
	need := false
	for _, c := range calls {
		if uncovered(c) {
			need = true
			break
		}
	}
	if !need {
		return
	}
	pipe := client.Pipeline()
	pipe.Publish(ctx, syncChannel, "")
	wait := w.append(ctx, pipe)
	_, _ = pipe.Exec(ctx)
	err := w.check(wait)
	if err == nil {
		return
	}
	for _, c := range calls {
		if uncovered(c) {
			c.err, c.unsynced = fmt.Errorf("redisstore: apply %s: %w", c.e.Board, err), !c.r.Duplicate
		}
	}
}
