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

// batcher is the lane every Apply goes through: one FIFO queue and one
// goroutine that sends one pipeline of EVALSHA at a time, made of
// everything queued meanwhile, and completes it before sending the next.
// One pipeline at a time keeps a submitter's events in order although it
// does not wait between them (pipelines on different pooled connections
// could overtake each other), and while one is out the next batch queues
// up, so batches grow with load and nothing waits on a timer.
type batcher struct {
	client  redis.UniversalClient
	sc      *script
	max     int
	timeout time.Duration
	log     *slog.Logger

	quit chan struct{} // closed by close
	wg   sync.WaitGroup

	pipelines atomic.Int64 // pipelines sent, for tests and metrics
	calls     atomic.Int64 // calls sent in them

	// free recycles finished calls: nothing refers to them again.
	free sync.Pool

	// async is the lane's queue, bounded (capacity max): a full queue
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

type call struct {
	ctx  context.Context
	keys []string
	args []any

	// Not sent after deadline; the event and the caller's callback, for
	// Store.finishAsync.
	deadline    time.Time
	e           rank.Event
	hash, token string
	fin         func(rank.Result, error)
}

func newBatcher(client redis.UniversalClient, sc *script, cfg Config, log *slog.Logger,
	prepare func(context.Context, []*call) []*call, finish func(*call, any, error)) *batcher {
	b := &batcher{
		client:  client,
		sc:      sc,
		max:     cfg.MaxBatch,
		timeout: cfg.Timeout,
		log:     log,
		quit:    make(chan struct{}),
		async:   make(chan *call, cfg.MaxBatch),
		prepare: prepare,
		finish:  finish,
	}
	b.free.New = func() any { return &call{} }
	b.wg.Add(1)
	go b.lane()
	return b
}

// close stops the lane; a pipeline in flight finishes.
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

// recycle gives back a call that will not be sent on again.
func (b *batcher) recycle(c *call) {
	c.ctx, c.keys, c.args = nil, nil, nil
	c.e, c.hash, c.token, c.fin = rank.Event{}, "", "", nil
	b.free.Put(c)
}

// submitAsync queues a call for the lane, waiting while the queue is
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

// lane sends the calls, one pipeline at a time, in queue order;
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

// runAsync builds and sends one pipeline and finishes each call.
func (b *batcher) runAsync(batch []*call) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	b.send(ctx, b.prepare(ctx, batch), b.finish)
}

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
