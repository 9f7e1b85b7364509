package redisstore

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

// batcher collects concurrent applies and sends them as one pipeline of
// EVALSHA. A batch is sent at once when no pipeline is in flight; while one
// is, calls gather for up to the window or until the batch is full. Batches
// go to a fixed set of workers, so at most `workers` pipelines are in flight
// and a full set of workers pushes back on callers through the bounded
// submit queue.
//
// Order: a batch keeps submission order inside its pipeline, and a caller
// waits for its result before submitting again, so one goroutine's events
// are applied in the order it submitted them.
//
// Async calls (Store.ApplyAsync) take another path, the lane: one FIFO
// queue and one goroutine that sends one pipeline at a time, made of
// everything queued meanwhile. A caller there does not wait between its
// events, so two of its events may sit in consecutive pipelines; pipelines
// on different pooled connections could overtake each other, one at a time
// cannot. The lane also runs the pipeline itself (no collector → worker
// hand-off): while it is out, the next batch queues up.
type batcher struct {
	client  redis.UniversalClient
	sc      *script
	window  time.Duration
	max     int
	timeout time.Duration
	log     *slog.Logger

	submit  chan *call    // capacity max
	batches chan []*call  // unbuffered: a batch goes to a free worker
	idle    chan struct{} // capacity 1: the last in-flight pipeline finished
	busy    atomic.Int32  // batches handed to workers, not yet finished
	quit    chan struct{} // closed by close
	wg      sync.WaitGroup

	pipelines atomic.Int64 // pipelines sent, for tests and metrics
	calls     atomic.Int64 // calls sent in them

	// free recycles calls (and their done channels) whose reply the caller
	// took: nothing sends on such a call again.
	free sync.Pool

	// The async lane. async is bounded (capacity max): a full queue
	// pushes back on callers. asyncMu orders submissions against close,
	// so no call is left in the queue unanswered.
	async       chan *call
	asyncMu     sync.RWMutex
	asyncClosed bool // guarded by asyncMu
	// prepare builds a lane batch's commands and returns those to send,
	// finishing the others (Store.prepareAsync); finish completes an async
	// call (Store.finishAsync), which owns c from then on.
	prepare func(ctx context.Context, batch []*call) []*call
	finish  func(c *call, v any, err error)
}

// workers is the number of pipelines in flight at most.
const workers = 4

type call struct {
	ctx  context.Context
	keys []string
	args []any
	done chan reply // capacity 1: the worker never blocks on it

	// Async calls only: not sent after deadline; the event and the
	// caller's callback, for Store.finishAsync.
	deadline    time.Time
	e           rank.Event
	hash, token string
	fin         func(rank.Result, error)
}

type reply struct {
	v   any
	err error
}

func newBatcher(client redis.UniversalClient, sc *script, cfg Config, log *slog.Logger,
	prepare func(context.Context, []*call) []*call, finish func(*call, any, error)) *batcher {
	b := &batcher{
		client:  client,
		sc:      sc,
		window:  cfg.BatchWindow,
		max:     cfg.MaxBatch,
		timeout: cfg.Timeout,
		log:     log,
		submit:  make(chan *call, cfg.MaxBatch),
		batches: make(chan []*call),
		idle:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		async:   make(chan *call, cfg.MaxBatch),
		prepare: prepare,
		finish:  finish,
	}
	b.free.New = func() any { return &call{done: make(chan reply, 1)} }
	b.wg.Add(2 + workers)
	go b.collect()
	go b.lane()
	for range workers {
		go b.work()
	}
	return b
}

// close stops the collector and the workers; a pipeline in flight finishes.
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
			b.finish(c, nil, ErrClosed)
		default:
			return
		}
	}
}

// get returns a recycled call for keys and args.
func (b *batcher) get(ctx context.Context, keys []string, args []any) *call {
	c := b.free.Get().(*call)
	c.ctx, c.keys, c.args = ctx, keys, args
	return c
}

// do runs the script with keys and args in the next pipeline and waits for
// its own reply, or for ctx.
func (b *batcher) do(ctx context.Context, keys []string, args []any) (any, error) {
	c := b.get(ctx, keys, args)
	select {
	case b.submit <- c:
	case <-ctx.Done():
		b.recycle(c)
		return nil, ctx.Err()
	case <-b.quit:
		b.recycle(c)
		return nil, ErrClosed
	}
	select {
	case r := <-c.done:
		b.recycle(c)
		return r.v, r.err
	case <-ctx.Done():
		// The call may still be applied; a retry with the same id is safe.
		// A reply may still come: c is not recycled.
		return nil, ctx.Err()
	case <-b.quit:
		select {
		case r := <-c.done:
			b.recycle(c)
			return r.v, r.err
		default:
			return nil, ErrClosed
		}
	}
}

// recycle gives back a call that will not be sent on again.
func (b *batcher) recycle(c *call) {
	c.ctx, c.keys, c.args = nil, nil, nil
	c.e, c.hash, c.token, c.fin = rank.Event{}, "", "", nil
	b.free.Put(c)
}

// submitAsync queues an async call for the lane, waiting while the queue is
// full. b.finish gets c exactly once.
func (b *batcher) submitAsync(c *call) {
	b.asyncMu.RLock()
	if b.asyncClosed {
		b.asyncMu.RUnlock()
		b.finish(c, nil, ErrClosed)
		return
	}
	select {
	case b.async <- c:
		b.asyncMu.RUnlock()
	case <-c.ctx.Done():
		b.asyncMu.RUnlock()
		b.finish(c, nil, c.ctx.Err())
	}
}

// lane sends the async calls, one pipeline at a time, in queue order;
// close answers what is left in the queue.
func (b *batcher) lane() {
	defer b.wg.Done()
	batch := make([]*call, 0, b.max)
	for {
		select {
		case c := <-b.async:
			batch = append(batch, c)
		case <-b.quit:
			return
		}
		batch = fill(batch, b.async, b.max)
		b.runAsync(batch)
		clear(batch)
		batch = batch[:0]
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

// runAsync builds and sends one pipeline of async calls and finishes each.
func (b *batcher) runAsync(batch []*call) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	b.send(ctx, b.prepare(ctx, batch), b.finish)
}

// collect owns the batch being gathered.
func (b *batcher) collect() {
	defer b.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var batch []*call
		select {
		case c := <-b.submit:
			batch = append(make([]*call, 0, b.max), c)
		case <-b.quit:
			b.drain(nil)
			return
		}
		batch = fill(batch, b.submit, b.max)
		if len(batch) < b.max && b.busy.Load() > 0 {
			timer.Reset(b.window)
		wait:
			for len(batch) < b.max {
				select {
				case c := <-b.submit:
					batch = append(batch, c)
				case <-timer.C:
					break wait
				case <-b.idle:
					if b.busy.Load() == 0 {
						break wait
					}
				case <-b.quit:
					timer.Stop()
					b.drain(batch)
					return
				}
			}
			timer.Stop()
		}
		b.busy.Add(1)
		select {
		case b.batches <- batch:
		case <-b.quit:
			b.drain(batch)
			return
		}
	}
}

// drain fails batch and every call still queued with ErrClosed.
func (b *batcher) drain(batch []*call) {
	for _, c := range batch {
		c.done <- reply{err: ErrClosed}
	}
	for {
		select {
		case c := <-b.submit:
			c.done <- reply{err: ErrClosed}
		default:
			return
		}
	}
}

func (b *batcher) work() {
	defer b.wg.Done()
	for {
		select {
		case batch := <-b.batches:
			b.run(batch)
			if b.busy.Add(-1) == 0 {
				select {
				case b.idle <- struct{}{}:
				default:
				}
			}
		case <-b.quit:
			return
		}
	}
}

// run sends one pipeline and hands every caller its reply. Commands that
// met NOSCRIPT (none of them ran) are resent, in order, after one SCRIPT
// LOAD; the others are not touched.
func (b *batcher) run(batch []*call) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	live := batch[:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.done <- reply{err: err} // the caller gave up: do not apply it
			continue
		}
		live = append(live, c)
	}
	b.send(ctx, live, deliver)
}

func deliver(c *call, v any, err error) { c.done <- reply{v, err} }

// send runs calls as one pipeline and hands each its reply through out, in
// order. Commands that met NOSCRIPT (none of them ran; they are the tail)
// are resent, in order, after one SCRIPT LOAD; the others are not touched.
func (b *batcher) send(ctx context.Context, calls []*call, out func(*call, any, error)) {
	if len(calls) == 0 {
		return
	}
	var again []*call
	for i, cmd := range b.exec(ctx, calls) {
		if isNoScript(cmd.Err()) {
			again = append(again, calls[i])
			continue
		}
		out(calls[i], cmd.Val(), cmd.Err())
	}
	if len(again) == 0 {
		return
	}
	b.log.Info("redisstore: server lost the apply script; loading it again", "resend", len(again))
	if err := b.sc.load(ctx, b.client); err != nil {
		for _, c := range again {
			out(c, nil, err)
		}
		return
	}
	for i, cmd := range b.exec(ctx, again) {
		out(again[i], cmd.Val(), cmd.Err())
	}
}

func (b *batcher) exec(ctx context.Context, calls []*call) []*redis.Cmd {
	b.pipelines.Add(1)
	b.calls.Add(int64(len(calls)))
	pipe := b.client.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		cmds[i] = pipe.EvalSha(ctx, b.sc.sha, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	return cmds
}
