package live

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// job is one refresh of one board: the config read when it is due, and
// each dirty kind's pass. A tick makes one per due board; a board's jobs
// run one at a time (the tick waits for them all).
type job struct {
	e      *Engine
	b      *board
	at     time.Time // the read's schedule point (schedule.go)
	final  finalRead // the board was final when the job began
	cfg    bool      // re-read the board config first
	newCfg rank.Board
	cfgOK  bool // the config read succeeded
	passes []pass
}

// delivery is one frame for the slots of its targets, offered after
// unlocking.
type delivery struct {
	key   slotKey
	seq   int64
	frame []byte
	to    []target  // immutable (subscribers.targets)
	at    time.Time // the read's schedule point; zero: a subscriber's first frame, held
}

// countFrames adds ds's frames to b's count. Lock held.
func countFrames(b *board, ds []delivery) {
	for _, d := range ds {
		b.framesOut += uint64(len(d.to))
	}
}

// deliverChunk is the fewest targets a delivery goroutine is started for.
const deliverChunk = 256

// deliver offers each delivery's frame to its targets. An offer may write
// the frame to the socket itself (Outbox.offerAt's direct path), a
// syscall per target: to 10,000 targets in one goroutine that can take a
// whole interval, during which the board's next read waits and
// the last targets' frames age. So a large target list is split across up
// to GOMAXPROCS goroutines, chunks of at least deliverChunk; deliver
// returns once every offer is made, so one outbox's frames are still
// offered in order.
func deliver(ds []delivery) {
	for _, d := range ds {
		n := len(d.to)
		parts := min(runtime.GOMAXPROCS(0), n/deliverChunk)
		if parts <= 1 {
			d.offer(d.to)
			continue
		}
		var wg sync.WaitGroup
		per := (n + parts - 1) / parts
		for lo := per; lo < n; lo += per {
			wg.Go(func() { d.offer(d.to[lo:min(lo+per, n)]) })
		}
		d.offer(d.to[:per])
		wg.Wait()
	}
}

// offer offers d's frame to each of to.
func (d *delivery) offer(to []target) {
	for _, t := range to {
		t.o.offerAt(d.key, t.gen, d.seq, d.frame, d.at)
	}
}

// snapshot takes b's dirty marks into a job read at schedule point at.
// Lock held.
func (e *Engine) snapshot(b *board, now, at time.Time) *job {
	j := &job{e: e, b: b, at: at, final: finalOf(b)}
	b.lastRead, b.lastPoint = now, at
	j.cfg = !b.cfgOK || now.Sub(b.cfgAt) >= cfgTTL
	for _, k := range b.kinds {
		if p := k.snapshot(j); p != nil {
			j.passes = append(j.passes, p)
		}
	}
	if b.probe && len(j.passes) == 0 {
		j.passes = append(j.passes, &probe{})
	}
	b.probe, b.reading = false, true
	return j
}

// runJob reads what j asks for with no lock held, installs the results
// and hands the frames to the subscribers. A failed read leaves its part
// marked, to be retried next tick.
func (e *Engine) runJob(ctx context.Context, j *job) {
	j.read(ctx)
	e.settleTransitions(ctx, j.b)
	now := e.now()
	b := j.b
	e.mu.Lock()
	b.reading = false
	if j.cfgOK && b.setCfg(j.newCfg, now) {
		b.markAll(b.unseq())
	}
	var out []delivery
	for _, p := range j.passes {
		out = p.install(j, out)
	}
	if b.profStale {
		b.profStale = false
		b.markAll(b.unseq()) // a profile changed while this job read: its entries may be stale
	}
	countFrames(b, out)
	e.unlock()
	deliver(out)
}

// read makes j's reads: the config, then each pass (none when the config
// read failed). A failed read is logged (Engine.call), and its pass marks
// itself again when it installs. No lock held.
func (j *job) read(ctx context.Context) {
	if j.cfg {
		c, err := j.e.getBoard(ctx, j.b.id)
		if err != nil {
			return
		}
		j.newCfg, j.cfgOK = c, true
	}
	for _, p := range j.passes {
		p.read(ctx, j)
	}
}

// stale records a read of seq in period for a key stamped st, and reports
// whether it answered for an earlier period than the board's current one:
// the store has not rolled over yet, the caller marks the key to read it
// again. Lock held.
func (j *job) stale(st *stamp, seq, period int64) bool {
	j.b.saw(seq)
	if j.b.cfgOK && !j.final.is && period < j.b.period {
		return true
	}
	st.read = max(st.read, seq)
	return false
}

// probe is the backstop's read of an idle board: one top entry, for the
// board's seq (0 until the read succeeds).
type probe struct{ seq int64 }

func (p *probe) read(ctx context.Context, j *job) error {
	page, err := j.e.readTop(ctx, j.e.sources[0], j.b.id, j.final.sel, "", 1)
	if err == nil {
		p.seq = page.Seq
	}
	return err
}

func (p *probe) install(j *job, out []delivery) []delivery {
	j.b.saw(p.seq)
	return out
}
