package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

// lane is one apply lane: one FIFO queue and one goroutine that sends
// one pipeline of EVALSHA at a time, made of everything queued meanwhile.
// One pipeline at a time keeps the lane's events in order although it does
// not wait between them (pipelines on different pooled connections could
// overtake each other), and while one is out the next batch queues up, so
// batches grow with load; only a round holding a sharded board's events
// waits on a timer, briefly, to fill its shard calls (lingerFor).
//
// A store runs Config.Lanes of them. Every event of one submitter to one
// board goes to the same lane (Store.laneOf), which is all the order
// rank.Store promises; events of different lanes may be applied in either
// order, as events sent to two nodes are. Several lanes keep Redis busy:
// a lane's round trip has stretches in which Redis has nothing of it to
// do (the replies read and parsed, the batch handed on, the next pipeline
// built and written, on a machine whose cores the gateway shares), and
// another lane's pipeline fills them.
//
// The lane does Redis work only: it builds the pipeline, sends it, parses
// the replies, re-sends what the scripts refused (one pipeline per retry
// round), and hands the finished batch to its completer (completer.go).
// Batches are a fixed set of buffers passed around (idle → lane → done →
// completer → idle), so a slow completer pushes back on the lane and the
// lane on the callers, and nothing grows.
type lane struct {
	client redis.UniversalClient
	sc     *script
	max    int
	log    *slog.Logger
	// work does one batch's Redis work, setting every call's outcome
	// (Store.work).
	work func(*lane, *batch)
	// wait is the WAIT that ends each pipeline when Config.Replicas is
	// set (durable.go); nil otherwise.
	wait *replicaWait
	// down is the lane's slots whose master is unreachable (cluster.go);
	// nil off a cluster.
	down *downSlots

	// linger is Config.ShardLinger (off when not positive); timer is
	// the lane's for it, made at its first use.
	linger time.Duration
	timer  *time.Timer

	quit chan struct{} // closed by close
	wg   sync.WaitGroup

	pipelines atomic.Int64 // pipelines sent, for tests and metrics
	calls     atomic.Int64 // events sent in them
	scripts   atomic.Int64 // EVALSHA commands sent in them
	busy      atomic.Int64 // ns the lane spent in work (LaneStats.Busy)
	lingered  atomic.Int64 // rounds that waited for more (lingerFor), for tests

	// free recycles finished calls: nothing refers to them again.
	free sync.Pool

	// async is the lane's queue, bounded (capacity max): a full queue
	// pushes back on callers. asyncMu orders submissions against close,
	// so no call is left in the queue unanswered.
	async       chan *call
	asyncMu     sync.RWMutex
	asyncClosed bool // guarded by asyncMu

	idle chan *batch // buffers the lane may fill
	done chan *batch // buffers the completer is to finish; closed by the lane
}

// DefaultLanes is Config.Lanes's default: a second lane fills the gaps in
// Redis's work that one lane's round trip leaves, and more did no better
// in bench/run.sh's Redis ingest (docs/performance.md).
const DefaultLanes = 2

// DefaultShardLinger is Config.ShardLinger's default: short against an
// ack's round trip through a loaded gateway, long enough to fill a sharded
// board's calls (docs/scaling.md).
const DefaultShardLinger = time.Millisecond

// laneOf is the lane of an event of board by submitter. Submitters are
// counters (a connection's, a request's), so consecutive ones take the
// lanes in turn. A sharded
// board's events all go to the board's own lane instead, whoever submits
// them: a lane round splits a board's events over its shards, one call
// per shard, and a call's fixed cost dwarfs an event's, so the board's
// calls are filled only when one lane gathers all its events. One
// submitter's events to one board still share a lane, in order (whether a
// board is sharded is fixed for its life); its events to different boards
// may then be applied in either order (rank.Store.Apply). The board's
// config is read here, from the cache as the lane would; a board that
// cannot be read fails now, as it would in the lane.
func (s *Store) laneOf(ctx context.Context, board string, submitter uint64) (*lane, int, error) {
	n := uint64(len(s.lanes))
	cb, err := s.boardRef(ctx, board)
	if err != nil {
		return nil, 0, s.fail("apply", board, err)
	}
	if cb.b.Sharded() {
		return s.lanes[boardHash(board)%n], cb.b.Shards, nil
	}
	return s.lanes[submitter%n], 0, nil
}

// boardHash spreads boards over the lanes (FNV-1a).
func boardHash(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * 1099511628211
	}
	return h
}

// script is the script cmd runs.
func (b *lane) script(m *cmd) *script {
	if m.sc != nil {
		return m.sc
	}
	return b.sc
}

func newLane(client redis.UniversalClient, sc *script, cfg Config, hooks rank.Hooks, log *slog.Logger, work func(*lane, *batch)) *lane {
	b := &lane{
		client: client,
		sc:     sc,
		max:    cfg.MaxBatch,
		log:    log,
		linger: cfg.ShardLinger,
		work:   work,
		wait:   newReplicaWait(cfg, client, log),
		quit:   make(chan struct{}),
		async:  make(chan *call, cfg.MaxBatch),
		idle:   make(chan *batch, batchBuffers),
		done:   make(chan *batch, batchBuffers),
	}
	b.free.New = func() any { return &call{} }
	cp := &completer{hooks: hooks, in: b.done, idle: b.idle, recycle: b.recycle}
	for range batchBuffers {
		bt := newBatch(cfg.MaxBatch)
		bt.finish = func() { cp.runDones(bt) }
		b.idle <- bt
	}
	b.wg.Add(2)
	go b.run()
	go func() {
		defer b.wg.Done()
		cp.run()
	}()
	return b
}

// close stops the lane; a pipeline in flight finishes and is completed.
// Calls still queued fail with ErrClosed.
func (b *lane) close() {
	b.asyncMu.Lock() // waits for submissions in progress (the lane still runs)
	b.asyncClosed = true
	b.asyncMu.Unlock()
	close(b.quit)
	b.wg.Wait()
	for {
		select {
		case c := <-b.async:
			b.finishNow(c, ErrClosed)
		default:
			return
		}
	}
}

// get returns a recycled call.
func (b *lane) get() *call { return b.free.Get().(*call) }

// recycle gives back a call that is finished.
func (b *lane) recycle(c *call) {
	*c = call{}
	b.free.Put(c)
}

// finishNow answers a call that was never sent.
func (b *lane) finishNow(c *call, err error) {
	done := c.fin
	b.recycle(c)
	done(rank.Result{}, err)
}

// submit queues a call for the lane, waiting while the queue is full.
// c.fin is called exactly once.
func (b *lane) submit(c *call) {
	b.asyncMu.RLock()
	if b.asyncClosed {
		b.asyncMu.RUnlock()
		b.finishNow(c, failClosed(c.e.Board))
		return
	}
	select {
	case b.async <- c:
		b.asyncMu.RUnlock()
	case <-c.ctx.Done():
		b.asyncMu.RUnlock()
		b.finishNow(c, failCtx(c.e.Board, c.ctx.Err()))
	}
}

// run takes what is queued, has it applied, and hands the batch on;
// close answers what is left in the queue.
func (b *lane) run() {
	defer b.wg.Done()
	defer close(b.done)
	for {
		var first *call
		select {
		case first = <-b.async:
		case <-b.quit:
			return
		}
		bt := <-b.idle // the completer returns one soon: done never blocks
		bt.calls = append(bt.calls, first)
		bt.calls = fill(bt.calls, b.async, b.max)
		bt.calls = b.lingerFor(bt.calls)
		start := time.Now()
		b.work(b, bt)
		b.busy.Add(int64(time.Since(start)))
		settled := settleFirst(bt)
		b.done <- bt
		if settled != nil {
			<-settled
		}
	}
}

// LaneStats are the Redis lanes' running totals since the store opened,
// summed over the lanes, for metrics. Busy against the time Redis spends
// in the scripts (INFO commandstats, evalsha) shows how much of a lane's
// round trip Redis works: the rest it waits for the lane (building,
// sending, reading and parsing) and for the machine to run either.
type LaneStats struct {
	Pipelines int64         // pipelines sent, re-sends included
	Events    int64         // events sent in them (a re-sent event counts again)
	Busy      time.Duration // wall time the lanes spent in their batches' Redis work (Store.work), summed
}

// LaneStats reads the lanes' totals.
func (s *Store) LaneStats() LaneStats {
	var st LaneStats
	for _, b := range s.lanes {
		st.Pipelines += b.pipelines.Load()
		st.Events += b.calls.Load()
		st.Busy += time.Duration(b.busy.Load())
	}
	return st
}

// settleFirst returns a channel the completer closes once bt's calls are
// done, when one of them failed unavailable, else nil; the lane then waits
// for it before it takes the next batch. A caller that stops on its first
// unavailable answer (a REST scores array cancels its context) must hear
// it before its later calls, already queued, are sent: otherwise one of
// them could be applied after an earlier one failed, and the failures would
// not be a suffix. Done callbacks never call the store (rank.Done), so the
// wait cannot deadlock; it costs the lane a completer's turn only on a
// failure.
func settleFirst(bt *batch) chan struct{} {
	for _, c := range bt.calls {
		if errors.Is(c.err, rank.ErrUnavailable) {
			bt.settled = make(chan struct{})
			return bt.settled
		}
	}
	return nil
}

// lingerFor returns calls, a round's calls, with those queued while it
// waits for more: a round holding a sharded board's events waits, at most
// the lane's linger, until it holds shardFill events per shard of the
// board (or the lane's MaxBatch). Such a round makes one call per shard,
// whose fixed cost is several events', so a fuller call costs Redis less
// per event (docs/scaling.md). A round of unsharded boards' events never
// waits.
func (b *lane) lingerFor(calls []*call) []*call {
	want := 0
	for _, c := range calls {
		want = max(want, c.shards*shardFill)
	}
	want = min(want, b.max)
	if b.linger <= 0 || len(calls) >= want {
		return calls
	}
	if b.timer == nil {
		b.timer = time.NewTimer(b.linger)
	} else {
		b.timer.Reset(b.linger)
	}
	defer b.timer.Stop()
	b.lingered.Add(1)
	for len(calls) < want {
		select {
		case c := <-b.async:
			calls = fill(append(calls, c), b.async, want)
			if c.shards*shardFill > want {
				want = min(c.shards*shardFill, b.max)
			}
		case <-b.timer.C:
			return calls
		case <-b.quit:
			return calls
		}
	}
	return calls
}

// shardFill is the events per shard a lingering round waits for (lane.lingerFor).
const shardFill = 8

// fill appends the calls already queued on q, without waiting, up to max.
func fill(batch []*call, q <-chan *call, max int) []*call {
	for len(batch) < max {
		select {
		case c := <-q:
			batch = append(batch, c)
		default:
			return batch
		}
	}
	return batch
}

// exec sends cmds as one pipeline and leaves each command's reply in its
// res. Commands that met NOSCRIPT (none of them ran) are resent, in order,
// after one SCRIPT LOAD; the others are not touched.
func (b *lane) exec(ctx context.Context, cmds []cmd) {
	if len(cmds) == 0 {
		return
	}
	b.pipeline(ctx, cmds)
	var again []int
	for i := range cmds {
		if isNoScript(cmds[i].res.Err()) {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return
	}
	b.log.Info("redisstore: server lost the apply script; loading it again", "resend", len(again))
	for _, i := range again {
		if err := b.script(&cmds[i]).load(ctx, b.client); err != nil {
			for _, i := range again {
				cmds[i].res.SetErr(err)
			}
			return
		}
	}
	resend := make([]cmd, len(again))
	for k, i := range again {
		resend[k] = cmds[i]
	}
	b.pipeline(ctx, resend)
	for k, i := range again {
		cmds[i].res, cmds[i].unsynced = resend[k].res, resend[k].unsynced
	}
}

func (b *lane) pipeline(ctx context.Context, cmds []cmd) {
	b.pipelines.Add(1)
	b.scripts.Add(int64(len(cmds)))
	pipe := b.client.Pipeline()
	for i := range cmds {
		m := &cmds[i]
		b.calls.Add(int64(len(m.calls)))
		m.res = pipe.Do(ctx, evalArgs(b.script(m).sha, m.keys, m.args)...)
		m.res.SetFirstKeyPos(3) // as EvalSha: a cluster routes by the first key
	}
	b.wait.exec(ctx, pipe, cmds) // with the WAIT that ends it (durable.go)
}
