package bus

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// Publish queues c for every other node; see PublishChanges.
func (b *Bus) Publish(c rank.Change) { b.PublishChanges([]rank.Change{c}) }

// PublishChanges queues a batch of changes (of any boards) for every other
// node, under one lock. It never blocks: past MaxPending queued changes the
// oldest is dropped, counted, and its board resynced on the other nodes. A
// change without a board is ignored. The batch is not retained.
func (b *Bus) PublishChanges(batch []rank.Change) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.dropped.Add(int64(len(batch)))
		return
	}
	var lost int64
	for _, c := range batch {
		if c.Board == "" {
			continue
		}
		if old, l := b.changes.push(c); l {
			b.markResyncLocked(old.Board)
			lost++
		}
	}
	b.mu.Unlock()
	if lost > 0 {
		b.dropped.Add(lost)
	}
	b.poke()
}

// PublishBoard queues e for every other node. It never blocks: past 1024
// queued board events the oldest is dropped, counted, and its board resynced.
// An event without a board is ignored.
func (b *Bus) PublishBoard(e BoardEvent) {
	if e.Board == "" {
		return
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.dropped.Add(1)
		return
	}
	old, lost := b.events.push(e)
	if lost {
		b.markResyncLocked(old.Board)
	}
	b.mu.Unlock()
	if lost {
		b.dropped.Add(1)
	}
	b.poke()
}

// poke wakes the publisher without blocking.
func (b *Bus) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// markResyncLocked records that the other nodes must re-read board ("" =
// all). b.mu must be held.
func (b *Bus) markResyncLocked(board string) {
	if board == "" || len(b.resync) >= maxResyncBoards {
		b.resyncAll = true
		clear(b.resync)
		return
	}
	if !b.resyncAll {
		b.resync[board] = struct{}{}
	}
}

// publisher is the state owned by the publisher goroutine.
type publisher struct {
	changes  []rank.Change
	events   []BoardEvent
	resync   []string
	profiles []string
	buf      []byte       // encoded changes, reused
	ebuf     bytes.Buffer // encoded board events, reused
}

// run is the publisher goroutine: idle, it flushes as soon as something is
// queued (low latency); busy, it flushes once per FlushInterval, so a burst
// becomes one message per board per interval.
func (b *Bus) run() {
	defer close(b.runDone)
	var p publisher
	var timer *time.Timer
	if b.cfg.FlushInterval > 0 {
		timer = time.NewTimer(b.cfg.FlushInterval)
		timer.Stop()
	}
	for {
		select {
		case <-b.wake:
		case <-b.quit:
			b.flush(&p)
			return
		}
		worked := b.flush(&p)
		for worked && timer != nil {
			timer.Reset(b.cfg.FlushInterval)
			select {
			case <-timer.C:
			case <-b.quit:
				timer.Stop()
				b.flush(&p)
				return
			}
			worked = b.flush(&p)
		}
	}
}

// flush publishes everything queued and reports whether there were any
// changes or board events (a failed resync alone waits for the next wake-up,
// e.g. the reconnect, rather than spinning).
func (b *Bus) flush(p *publisher) bool {
	b.mu.Lock()
	p.changes = b.changes.drainTo(p.changes[:0])
	p.events = b.events.drainTo(p.events[:0])
	b.mu.Unlock()

	for _, e := range p.events {
		p.ebuf.Reset()
		_ = json.NewEncoder(&p.ebuf).Encode(e) // a struct of a string and a bool cannot fail
		if err := b.nc.Publish(b.subjBoards, p.ebuf.Bytes()); err != nil {
			b.publishFailed(e.Board, 1, err)
		}
	}

	// One message per board (in chunks of maxBatch), seq order kept: the
	// sort is stable and the queue is in publish order.
	slices.SortStableFunc(p.changes, func(x, y rank.Change) int { return cmp.Compare(x.Board, y.Board) })
	for start := 0; start < len(p.changes); {
		end := start + 1
		for end < len(p.changes) && end-start < maxBatch && p.changes[end].Board == p.changes[start].Board {
			end++
		}
		b.publishChanges(p, p.changes[start:end])
		start = end
	}

	np := b.flushProfiles(p)

	// Resyncs (for drops in the queue or in this flush) go after the
	// changes, so a receiver re-reads after applying whatever did arrive.
	b.mu.Lock()
	p.resync = p.resync[:0]
	if b.resyncAll {
		p.resync = append(p.resync, "")
	} else {
		p.resync = slices.AppendSeq(p.resync, maps.Keys(b.resync))
	}
	b.resyncAll = false
	clear(b.resync)
	b.mu.Unlock()
	for _, board := range p.resync {
		if err := b.nc.Publish(b.subjResync, []byte(board)); err != nil {
			b.log.Debug("bus: publish resync failed; will retry", "board", board, "err", err)
			b.mu.Lock()
			b.markResyncLocked(board)
			b.mu.Unlock()
		}
	}

	n := len(p.changes) + len(p.events) + np
	clear(p.changes) // release strings until the next flush
	return n > 0
}

// publishChanges sends one board's changes as one message (codec.go).
func (b *Bus) publishChanges(p *publisher, batch []rank.Change) {
	board := batch[0].Board
	p.buf = appendChanges(p.buf[:0], board, batch)
	// nats.go copies the payload into its write buffer, so buf is reusable.
	if err := b.nc.Publish(b.subjChanges+encodeToken(board), p.buf); err != nil {
		b.publishFailed(board, len(batch), err)
		return
	}
	b.published.Add(int64(len(batch)))
	b.messages.Add(1)
}

// publishFailed counts n lost items of board and schedules its resync.
func (b *Bus) publishFailed(board string, n int, err error) {
	b.dropped.Add(int64(n))
	b.log.Debug("bus: publish failed", "board", board, "lost", n, "err", err)
	b.mu.Lock()
	b.markResyncLocked(board)
	b.mu.Unlock()
}
