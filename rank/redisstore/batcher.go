package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

// batcher is one apply lane: one FIFO queue and one goroutine that sends
// one pipeline of EVALSHA at a time, made of everything queued meanwhile.
// One pipeline at a time keeps the lane's events in order although it does
// not wait between them (pipelines on different pooled connections could
// overtake each other), and while one is out the next batch queues up, so
// batches grow with load and nothing waits on a timer.
//
// A store runs Config.Lanes of them. Every event of one submitter goes to
// the same lane (Store.laneOf), which is all the order rank.Store promises;
// events of different lanes may be applied in either order, as events sent
// to two nodes are. Several lanes keep Redis busy: a lane's round trip
// has stretches in which Redis has nothing of it to do (the replies read
// and parsed, the batch handed on, the next pipeline built and written, on
// a machine whose cores the gateway shares), and another lane's pipeline
// fills them.
//
// The lane does Redis work only: it builds the pipeline, sends it, parses
// the replies, re-sends what the scripts refused (one pipeline per retry
// round), and hands the finished batch to the completer, one goroutine
// that calls the sink once per batch and then every call's done, in
// submission order. Batches are a fixed set of buffers passed around
// (free → lane → done → completer → free), so a slow completer pushes back
// on the lane and the lane on the callers, and nothing grows.
type batcher struct {
	client redis.UniversalClient
	sc     *script
	max    int
	log    *slog.Logger
	// hooks: the completer calls Sink, then Complete once per batch.
	hooks rank.Hooks
	// work does one batch's Redis work, setting every call's outcome
	// (Store.work).
	work func(*batcher, *batch)
	// down is the lane's slots whose master is unreachable (cluster.go);
	// nil off a cluster.
	down *downSlots

	quit chan struct{} // closed by close
	wg   sync.WaitGroup

	pipelines atomic.Int64 // pipelines sent, for tests and metrics
	calls     atomic.Int64 // events sent in them
	scripts   atomic.Int64 // EVALSHA commands sent in them
	busy      atomic.Int64 // ns the lane spent in work (LaneStats.Busy)

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

// DefaultLanes is Config.Lanes's default. Two lanes took Redis from 80% to
// about 91% of a core in bench/run.sh's Redis ingest (one Redis, one
// gateway and the load on two cores), and ingest up by 18%; three and four
// did no better (docs/performance.md, "Two apply lanes").
const DefaultLanes = 2

// laneOf is the lane of a submitter's events. Submitters are counters (a
// connection's, a request's), so consecutive ones take the lanes in turn.
func (s *Store) laneOf(submitter uint64) *batcher {
	return s.lanes[submitter%uint64(len(s.lanes))]
}

// batchBuffers is how many batches exist per lane: one being filled and
// sent, the others waiting for or in the completer.
const batchBuffers = 4

// call is one submitted event, from Apply to its done. The lane owns it
// until it hands its batch to the completer, which owns it from then on.
type call struct {
	ctx         context.Context
	deadline    time.Time // not sent after it
	e           rank.Event
	hash, token string // payload hash and attempt token: the two halves of rec
	rec         string // "<hash>.<token>", the record's first field (setRecord)
	at          int64  // the event's at in unix ms, when it has one
	fin         rank.Done

	// The outcome, set by the lane.
	r   rank.Result
	err error

	// On a sharded board (shard.go): the shard's keys, the board's config,
	// the sorted-set members apply.lua reported (new, old) and the bucket
	// hash it wrote the record in.
	shard            *applyKeys
	board            *cachedBoard
	newZ, oldZ, recH string
}

// batch is one lane round: the calls taken from the queue, in submission
// order, and the lane's scratch space for them.
type batch struct {
	calls   []*call
	changes []rank.Change
	// settled, when set by the lane (settleFirst), is closed by the
	// completer once every call's done has run.
	settled chan struct{}
	// finish is b.runDones(bt), bound once per buffer, so Hooks.Complete
	// costs no closure per batch.
	finish func()

	// The lane's scratch space (Store.work, Store.build).
	send    []*call        // calls still to send
	memo    []boardMemo    // the configs of this round (Store.memoBoard)
	groupOf map[string]int // board -> group index (Store.build)
	cmds    []cmd          // the pipeline being built
	groups  []group        // the boards of send, in order of first appearance
	order   []int          // the group of each call of send; -1 = not sent
	next    []int          // per group, the next free place in grouped
	grouped []*call        // send's calls arranged by board, each board's in order
}

// newBatch is an empty batch for up to max calls.
func newBatch(max int) *batch {
	return &batch{calls: make([]*call, 0, max), groupOf: make(map[string]int)}
}

// cmd is one EVALSHA of a pipeline: the calls it applies (consecutive
// events of one board, in submission order), its keys and arguments.
type cmd struct {
	calls []*call
	keys  []string
	args  []any
	res   *redis.Cmd
	// sc is the script to run; nil = the batcher's (apply.lua). Hot
	// boards' events go to hot.lua, whose scores have decimals.
	sc       *script
	decimals int
	// cfg is the config the command was built with (its group's, valid
	// for the lane round), for the times of a board_closed reason.
	cfg *rank.Board
}

// script is the script cmd runs.
func (b *batcher) script(m *cmd) *script {
	if m.sc != nil {
		return m.sc
	}
	return b.sc
}

func newBatcher(client redis.UniversalClient, sc *script, cfg Config, hooks rank.Hooks, log *slog.Logger, work func(*batcher, *batch)) *batcher {
	b := &batcher{
		client: client,
		sc:     sc,
		max:    cfg.MaxBatch,
		log:    log,
		hooks:  hooks,
		work:   work,
		quit:   make(chan struct{}),
		async:  make(chan *call, cfg.MaxBatch),
		idle:   make(chan *batch, batchBuffers),
		done:   make(chan *batch, batchBuffers),
	}
	b.free.New = func() any { return &call{} }
	for range batchBuffers {
		bt := newBatch(cfg.MaxBatch)
		bt.finish = func() { b.runDones(bt) }
		b.idle <- bt
	}
	b.wg.Add(2)
	go b.lane()
	go b.complete()
	return b
}

// close stops the lane; a pipeline in flight finishes and is completed.
// Calls still queued fail with ErrClosed.
func (b *batcher) close() {
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
func (b *batcher) get() *call { return b.free.Get().(*call) }

// recycle gives back a call that is finished.
func (b *batcher) recycle(c *call) {
	*c = call{}
	b.free.Put(c)
}

// finishNow answers a call that was never sent.
func (b *batcher) finishNow(c *call, err error) {
	done := c.fin
	b.recycle(c)
	done(rank.Result{}, err)
}

// submit queues a call for the lane, waiting while the queue is full.
// c.fin is called exactly once.
func (b *batcher) submit(c *call) {
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

// lane takes what is queued, has it applied, and hands the batch on;
// close answers what is left in the queue.
func (b *batcher) lane() {
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

// complete finishes the lane's batches: the sink hears of all of a batch's
// changes at once, then every call's done runs, in submission order.
func (b *batcher) complete() {
	defer b.wg.Done()
	for bt := range b.done {
		if sink := b.hooks.Sink; sink != nil {
			for _, c := range bt.calls {
				if c.err != nil {
					continue
				}
				if ch, ok := rank.ChangeOf(c.e, c.r); ok {
					bt.changes = append(bt.changes, ch)
				}
			}
			if len(bt.changes) > 0 {
				sink(bt.changes)
			}
			clear(bt.changes)
			bt.changes = bt.changes[:0]
		}
		b.hooks.Completes(bt.finish)
		clear(bt.calls)
		bt.calls = bt.calls[:0]
		if bt.settled != nil {
			close(bt.settled)
			bt.settled = nil
		}
		b.idle <- bt
	}
}

// runDones calls every call's done, in submission order, recycling each
// call first (the done may be the last to look at its outcome).
func (b *batcher) runDones(bt *batch) {
	for _, c := range bt.calls {
		done, r, err := c.fin, c.r, c.err
		b.recycle(c)
		done(r, err)
	}
}

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
func (b *batcher) exec(ctx context.Context, cmds []cmd) {
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
		cmds[i].res = resend[k].res
	}
}

func (b *batcher) pipeline(ctx context.Context, cmds []cmd) {
	b.pipelines.Add(1)
	b.scripts.Add(int64(len(cmds)))
	pipe := b.client.Pipeline()
	for i := range cmds {
		m := &cmds[i]
		b.calls.Add(int64(len(m.calls)))
		m.res = pipe.Do(ctx, evalArgs(b.script(m).sha, m.keys, m.args)...)
		m.res.SetFirstKeyPos(3) // as EvalSha: a cluster routes by the first key
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
}

// evalArgs is EVALSHA sha with keys and args as one argument list. Unlike
// EvalSha it refers to the keys instead of boxing each in an interface (a
// pointer boxes without allocating), and it builds one slice, not two:
// keys must not change until the pipeline is sent.
func evalArgs(sha string, keys []string, args []any) []any {
	out := make([]any, 0, 3+len(keys)+len(args))
	out = append(out, "evalsha", sha, len(keys))
	for i := range keys {
		out = append(out, &keys[i])
	}
	return append(out, args...)
}

// setRecord sets the call's payload hash and attempt token (prefix and
// number n) and their "<hash>.<token>" in one allocation: the three are
// substrings of one string.
func (c *call) setRecord(e rank.Event, prefix string, n uint64) {
	var buf [64]byte
	b := strconv.AppendUint(buf[:0], e.PayloadHash(), 36)
	h := len(b)
	b = append(b, '.')
	b = append(b, prefix...)
	b = strconv.AppendUint(b, n, 36)
	c.rec = string(b)
	c.hash, c.token = c.rec[:h], c.rec[h+1:]
}

// appendArgs appends the call's six apply.lua (and hot.lua) arguments:
// member, name, op, amount, "<hash>.<token>", at. The strings and the
// numbers go as pointers into the call, which boxes without allocating;
// the call is not recycled before its pipeline's replies are read.
func (c *call) appendArgs(args []any) []any {
	var at any = ""
	if !c.e.At.IsZero() {
		c.at = c.e.At.UnixMilli()
		at = &c.at
	}
	return append(args, &c.e.Member, &c.e.Name, int(c.e.Op), &c.e.Amount, &c.rec, at)
}
