package bus

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// watchTimeout bounds Watch's wait for the server's confirmation when ctx
// has no deadline.
const watchTimeout = 2 * time.Second

// Watch makes the bus receive the changes of boards (Config.PerBoard; a
// no-op without it, where every board's changes arrive anyway). It
// subscribes to each board's change subject not yet watched, then waits for
// a round trip to the server: when Watch returns nil, every change
// published from then on reaches this node. Changes published before were
// not received; the caller re-reads the store for them (see node's
// interest). Without a deadline on ctx it waits at most 2s. On an error the
// subscriptions made stay (nats.go re-sends them on reconnect); calling
// Watch again retries the confirmation.
func (b *Bus) Watch(ctx context.Context, boards ...string) error {
	if !b.cfg.PerBoard {
		return nil
	}
	b.subMu.Lock()
	for _, board := range boards {
		if _, ok := b.watched[board]; ok || board == "" {
			continue
		}
		sub, err := b.nc.ChanSubscribe(b.subjChanges+encodeToken(board), b.msgs)
		if err != nil {
			b.subMu.Unlock()
			return fmt.Errorf("bus: watch %s: %w", board, err)
		}
		b.watched[board] = sub
	}
	b.subMu.Unlock()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, watchTimeout)
		defer cancel()
	}
	// The server handles a connection's protocol in order: once it answers
	// this PING, it has processed every SUB sent before it.
	if err := b.nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("bus: watch: %w", err)
	}
	return nil
}

// Unwatch stops receiving the changes of boards (Config.PerBoard; a no-op
// without it, and for a board not watched). Changes already queued for the
// receiving goroutine are still delivered.
func (b *Bus) Unwatch(boards ...string) error {
	if !b.cfg.PerBoard {
		return nil
	}
	var errs []error
	b.subMu.Lock()
	defer b.subMu.Unlock()
	for _, board := range boards {
		sub, ok := b.watched[board]
		if !ok {
			continue
		}
		delete(b.watched, board)
		if err := sub.Unsubscribe(); err != nil {
			errs = append(errs, fmt.Errorf("bus: unwatch %s: %w", board, err))
		}
	}
	return errors.Join(errs...)
}

// watchedCount is the number of boards watched.
func (b *Bus) watchedCount() int {
	b.subMu.Lock()
	defer b.subMu.Unlock()
	return len(b.watched)
}
