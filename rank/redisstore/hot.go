package redisstore

// Hot boards (docs/protocol.md §8, R22) on Redis: rank/lua/hot.lua holds the
// data layout and the reasoning; this file is the Go side. Reads go through
// top.lua and ranks.lua unchanged: a hot board's current view is its
// period-0 sorted set, and a read passes the current bucket as its slot, so
// a script that finds the clock past the bucket answers "clock" instead of
// reading a view of the past. Before a read of a bucket this node has not
// seen current yet, and after an apply answered "hot", the node runs the
// boundary's remaining steps itself (catchUp). The keeper (one goroutine
// per Store) builds each hot board's next view ahead of its boundary, under
// a lease so one node does it; a node that dies mid-way leaves the build's
// cursor in Redis, and the next step (any node's) carries on from it.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

const (
	// hotStepWork is the member-times-buckets work of one step: a step
	// reads each member's sums (up to `buckets` of them) and scores them,
	// so boards with more buckets take fewer members per step, and one
	// step stays short on Redis's one core whatever the board's shape
	// (docs/performance.md).
	hotStepWork = 6000
	// hotLease is how long a keeper's lease on a board's build lasts
	// without a step renewing it: a node that dies hands the build over
	// after this.
	hotLease = 3 * time.Second
	// hotKeeperTick is how often, by default, the keeper looks at the hot
	// boards this node knows, and hotKeeperSlice how long it works on them
	// per tick.
	hotKeeperTick  = 250 * time.Millisecond
	hotKeeperSlice = 100 * time.Millisecond
)

// hotKeys are a hot board's keys in hot.lua's KEYS order (without the
// idempotency keys).
func (s *Store) hotKeys(c cachedBoard) []string {
	b := &c.b
	return []string{c.keys.cfg, c.keys.seq, c.keys.n, s.zkey(b, 0), s.key(b, "h:nx"), s.key(b, "h:s"),
		s.key(b, "h:st"), s.ckey(b, 0), c.keys.ban, s.xkey(b, 0), s.key(b, "h:xn"), s.key(b, "h:lease")}
}

// hotArgs are hot.lua's ARGV[1..7].
func hotArgs(c cachedBoard, nowArg, op string) []any {
	d := c.b.Decay
	return []any{c.ver, nowArg, d.BucketMs(), d.Buckets, strconv.FormatFloat(d.Factor, 'g', -1, 64), string(c.b.Order), op}
}

// hotNow is the store clock for a hot board and the scripts' clock
// argument ("" = the script reads TIME).
func (s *Store) hotNow(ctx context.Context) (time.Time, string) {
	if s.cfg.Now != nil {
		t := s.cfg.Now()
		return t, strconv.FormatInt(t.UnixMilli(), 10)
	}
	return s.clock.now(ctx, s.client), ""
}

// hotApplyCmd is the hot.lua call applying calls, events of hot board c in
// order: the redisstore apply lane's one hook for hot boards (build).
func (s *Store) hotApplyCmd(c cachedBoard, nowArg string, calls []*call) cmd {
	k := c.keys
	keys := append(s.hotKeys(c), k.guard)
	args := append(hotArgs(c, nowArg, "apply"), k.window, k.startsAt, k.endsAt, k.grace, k.maxSubs, k.cap)
	for _, c := range calls {
		args = c.appendArgs(args)
	}
	return cmd{calls: calls, keys: keys, args: args, sc: s.hot, decimals: rank.HotDecimals}
}

// hotStep runs one step of board c's boundary work (hot.lua op step):
// token "" does it whoever holds the lease. It returns the bucket of the
// current view, the clock's bucket and the status.
func (s *Store) hotStep(ctx context.Context, c cachedBoard, token string) (cur, clock int64, status string, err error) {
	_, nowArg := s.hotNow(ctx)
	chunk := max(8, min(500, hotStepWork/c.b.Decay.Buckets))
	args := append(hotArgs(c, nowArg, "step"), chunk, token, hotLease.Milliseconds())
	v, err := s.hot.run(ctx, s.client, s.hotKeys(c), args...)
	if err != nil {
		return 0, 0, "", err
	}
	a, _ := v.([]any)
	if len(a) != 3 {
		return 0, 0, "", fmt.Errorf("unexpected reply %v", v)
	}
	st, _ := a[2].(string)
	return num(a[0]), num(a[1]), st, nil
}

// catchUp runs board's boundary steps until its current view is that of
// the clock's bucket. The keeper normally has the next view built before
// the boundary, so this is one swap; when it has not (a board no node
// watched, a keeper that died), it is the rest of the build, step by step.
func (s *Store) catchUp(ctx context.Context, board string) error {
	for {
		c, err := s.board(ctx, board)
		if err != nil {
			return err
		}
		if !c.b.Hot() {
			return nil
		}
		cur, clock, _, err := s.hotStep(ctx, c, "")
		if err != nil {
			if scriptError(err) == "stale" {
				s.forget(board)
				continue
			}
			return err
		}
		if cur == clock {
			s.hotMu.Lock()
			s.hotCur[board] = cur
			s.hotMu.Unlock()
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// hotSlots are the read slots of hot board c at now: the current bucket as
// slot A, so a read script whose clock has left it answers "clock". It
// first catches the board up when this node has not seen its bucket
// current yet.
func (s *Store) hotSlots(ctx context.Context, c cachedBoard, now time.Time) (slots, error) {
	d := c.b.Decay
	cb := d.BucketAt(now)
	s.hotMu.Lock()
	known := s.hotCur[c.b.ID]
	s.hotMu.Unlock()
	if known != cb {
		if err := s.catchUp(ctx, c.b.ID); err != nil {
			return slots{}, err
		}
	}
	start := d.BucketStart(cb).UnixMilli()
	end := start + d.BucketMs()
	return slots{start: start, bound: end, end: end}, nil
}

// hotRemove drops a removed member's sums and next entries (hot.lua op
// remove), after ban.lua removed its current entry.
func (s *Store) hotRemove(ctx context.Context, board, member string) error {
	c, err := s.board(ctx, board)
	if err != nil || !c.b.Hot() {
		return err
	}
	_, nowArg := s.hotNow(ctx)
	_, err = s.hot.run(ctx, s.client, s.hotKeys(c), append(hotArgs(c, nowArg, "remove"), member)...)
	return err
}

// keeper builds the next view of every hot board this node has used, a
// little each tick, under each board's lease. It ends when stop closes.
func (s *Store) keeper(stop <-chan struct{}, done chan<- struct{}, every time.Duration) {
	defer close(done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	token := s.attemptPrefix + "keeper"
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		var hot []string
		for id, c := range s.boards {
			if !c.unknown && c.b.Hot() {
				hot = append(hot, id)
			}
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
		for _, id := range hot {
			s.keep(ctx, id, token)
		}
		s.keepBuilds(ctx, token) // derived boards whose builder died (build.go)
		cancel()
	}
}

// keep works on one board's build for at most hotKeeperSlice.
func (s *Store) keep(ctx context.Context, id, token string) {
	until := time.Now().Add(hotKeeperSlice)
	for time.Now().Before(until) {
		c, err := s.board(ctx, id)
		if err != nil || !c.b.Hot() {
			return
		}
		_, _, status, err := s.hotStep(ctx, c, token)
		if err != nil {
			if scriptError(err) == "stale" {
				s.forget(id)
				continue
			}
			if scriptError(err) != "unknown_board" {
				s.log.Warn("redisstore: hot board step", "board", id, "err", err)
			}
			return
		}
		if status == "idle" || status == "busy" {
			return
		}
	}
}
