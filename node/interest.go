package node

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// DefaultInterestLinger is how long a node stays subscribed to a board's
// changes after its last local watcher left. A spectator who reloads the
// page, or flips between two boards, comes back within a few seconds: the
// linger turns that into no NATS traffic at all, where unsubscribing at
// once would cost an UNSUB, a SUB, a round trip and a full re-read of the
// board per flip. What it costs is at most 5 s of one board's messages
// nobody reads, once per board a node stops watching.
const DefaultInterestLinger = 5 * time.Second

// watchRetry spaces attempts to confirm a subscription that failed (NATS
// down or slow); a reconnect resyncs every board anyway.
const watchRetry = time.Second

// SelfInterest is the default Config.Interest: a board's frames need its
// own changes only.
func SelfInterest(board string) []string { return []string{board} }

// watcher is the bus's side of interest (bus.Bus).
type watcher interface {
	Watch(ctx context.Context, boards ...string) error
	Unwatch(boards ...string) error
}

// interest keeps the node's NATS change subscriptions to exactly the boards
// its local watchers need, plus the ones lingering.
//
// The live engine reports a board's first and last local subscription
// (watch, called under its lock, so in order); the worker goroutine turns
// that into refcounts of the boards each watched board's interest names and
// into Watch/Unwatch calls on the bus, with no lock of the node held (the
// interest function may read the store).
//
// No update a watcher should see is lost: a board that gains interest is
// subscribed, the server confirms the subscription (a round trip), and only
// then every local board that needs it is resynced: re-read from the store,
// which holds every change published before the subscription took effect;
// the ones after it arrive over NATS.
type interest struct {
	of     func(board string) []string
	linger time.Duration
	log    *slog.Logger

	mu    sync.Mutex // guards want and stale
	want  map[string]bool
	stale map[string]struct{}

	wake chan struct{} // capacity 1
	quit chan struct{}
	done chan struct{}

	// Owned by the worker goroutine.
	bus    watcher
	resync func(board string)
	local  map[string][]string // watched local board → the boards its interest named
	refs   map[string]int      // board → local boards naming it
	subbed map[string]bool     // boards the bus watches
	// unconfirmed are subscribed boards whose round trip failed: Watch is
	// retried for them, and the boards needing them resynced when it works.
	unconfirmed map[string]bool
	idle        map[string]time.Time // subscribed boards no local board names, since when
	// failing is set while subscriptions go unconfirmed (logged once).
	failing bool
}

func newInterest(of func(string) []string, linger time.Duration, log *slog.Logger) *interest {
	if of == nil {
		of = SelfInterest
	}
	if linger == 0 {
		linger = DefaultInterestLinger
	}
	return &interest{
		of: of, linger: max(linger, 0), log: log,
		want: make(map[string]bool), stale: make(map[string]struct{}),
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		local: make(map[string][]string), refs: make(map[string]int),
		subbed: make(map[string]bool), idle: make(map[string]time.Time), unconfirmed: make(map[string]bool),
	}
}

// watch is live's OnWatch: board gained its first local subscription
// (watched) or lost its last one. It never blocks.
func (in *interest) watch(board string, watched bool) {
	in.mu.Lock()
	in.want[board] = watched
	in.mu.Unlock()
	in.poke()
}

// refresh asks for board's interest to be computed again (its config, so
// perhaps its sources, changed). A board not watched here is ignored.
func (in *interest) refresh(board string) {
	in.mu.Lock()
	in.stale[board] = struct{}{}
	in.mu.Unlock()
	in.poke()
}

func (in *interest) poke() {
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// start runs the worker until stop.
func (in *interest) start(bus watcher, resync func(string)) {
	in.bus, in.resync = bus, resync
	go in.run()
}

// stop ends the worker; the bus's subscriptions end with the bus.
func (in *interest) stop() {
	select {
	case <-in.quit:
	default:
		close(in.quit)
	}
	<-in.done
}

func (in *interest) run() {
	defer close(in.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-in.quit
		cancel()
	}()
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		if d, ok := in.pass(ctx, time.Now()); ok {
			t.Reset(d)
		}
		select {
		case <-in.wake:
		case <-t.C:
		case <-in.quit:
			t.Stop()
			return
		}
		t.Stop()
	}
}

// pass applies what live reported since the last pass and brings the bus's
// subscriptions in line. It returns when the next pass is due without a
// report (a linger ending, a retry), if ever.
func (in *interest) pass(ctx context.Context, now time.Time) (time.Duration, bool) {
	in.mu.Lock()
	want, stale := in.want, in.stale
	in.want, in.stale = make(map[string]bool), make(map[string]struct{})
	in.mu.Unlock()

	for board, on := range want {
		names, had := in.local[board]
		switch {
		case on && !had:
			in.add(board, in.names(board))
			delete(stale, board) // just computed
		case !on && had:
			in.release(names, now)
			delete(in.local, board)
		}
	}
	for board := range stale {
		if old, ok := in.local[board]; ok {
			in.add(board, in.names(board)) // counts the new names before releasing the old
			in.release(old, now)
		}
	}

	var unwatch, watch []string
	for board, since := range in.idle {
		if now.Sub(since) >= in.linger {
			unwatch = append(unwatch, board)
		}
	}
	for board, n := range in.refs {
		if n > 0 && (!in.subbed[board] || in.unconfirmed[board]) {
			watch = append(watch, board)
		}
	}
	if len(unwatch) > 0 {
		if err := in.bus.Unwatch(unwatch...); err != nil {
			in.log.Debug("node: NATS unsubscribe failed", "err", err)
		}
		for _, b := range unwatch {
			delete(in.subbed, b)
			delete(in.unconfirmed, b)
			delete(in.idle, b)
			delete(in.refs, b)
		}
	}
	retry := false
	if len(watch) > 0 {
		// Subscribed from now on, confirmed or not: the bus keeps what
		// Watch subscribed even when the round trip fails, so a board
		// released meanwhile must still be unwatched.
		for _, b := range watch {
			in.subbed[b] = true
		}
		if err := in.bus.Watch(ctx, watch...); err != nil {
			// Once per outage: NATS down is reported by the bus and /readyz.
			if ctx.Err() == nil && !in.failing {
				in.log.Warn("node: NATS subscription not confirmed; retrying every second", "boards", len(watch), "err", err)
			}
			in.failing = true
			retry = true
			for _, b := range watch {
				in.unconfirmed[b] = true
			}
		} else {
			if in.failing {
				in.log.Info("node: NATS subscriptions confirmed", "boards", len(watch))
			}
			in.failing = false
			for _, b := range watch {
				delete(in.unconfirmed, b)
			}
			in.resyncNeeding(watch)
		}
	}

	next, ok := time.Duration(0), false
	if retry || len(in.unconfirmed) > 0 {
		next, ok = watchRetry, true
	}
	for _, since := range in.idle {
		if d := since.Add(in.linger).Sub(now); !ok || d < next {
			next, ok = max(d, 0), true
		}
	}
	return next, ok
}

// names is board's interest, deduplicated.
func (in *interest) names(board string) []string {
	names := slices.Clone(in.of(board))
	slices.Sort(names)
	return slices.Compact(names)
}

// add counts names for the local board.
func (in *interest) add(board string, names []string) {
	in.local[board] = names
	for _, b := range names {
		in.refs[b]++
		delete(in.idle, b)
	}
}

// release uncounts names; a board nobody names any more lingers if
// subscribed, else is forgotten.
func (in *interest) release(names []string, now time.Time) {
	for _, b := range names {
		in.refs[b]--
		if in.refs[b] > 0 {
			continue
		}
		if in.subbed[b] {
			in.refs[b] = 0
			in.idle[b] = now
		} else {
			delete(in.refs, b)
		}
	}
}

// resyncNeeding re-reads every local board whose interest names one of
// the boards just subscribed.
func (in *interest) resyncNeeding(subscribed []string) {
	set := make(map[string]struct{}, len(subscribed))
	for _, b := range subscribed {
		set[b] = struct{}{}
	}
	for board, names := range in.local {
		if slices.ContainsFunc(names, func(b string) bool { _, ok := set[b]; return ok }) {
			in.resync(board)
		}
	}
}
