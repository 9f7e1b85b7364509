package redisstore

// Redis Cluster: what the lane does while a board's slot moves between
// masters (CLUSTER SETSLOT MIGRATING/IMPORTING, MIGRATE, SETSLOT NODE),
// and while a master is down (downSlots, below).
//
// go-redis follows MOVED and ASK itself. A script whose keys are split
// by a migration in progress gets TRYAGAIN instead: apply.lua always
// names a key that does not exist yet (the event's idempotency record),
// so every apply to a migrating slot meets it until SETSLOT NODE ends the
// migration. Such a reply means the script ran nowhere, so the lane sends
// the command again, in its place among its board's commands, after a
// pause that doubles, for at most a quarter of the store timeout; past
// that the call is answered unavailable (R13: promptly) and the client
// re-sends it with the same id. A command that did run and is sent again
// anyway (go-redis resends a node's whole pipeline when its first reply
// is TRYAGAIN) finds its own idempotency record with its own attempt
// token, so it counts once and answers as the first run.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

const (
	// busyShare: a lane batch retries a busy slot for at most
	// Timeout/busyShare, then answers unavailable.
	busyShare = 4
	// busyPause is the first pause before a busy slot is tried again;
	// it doubles up to maxBusyPause.
	busyPause    = 2 * time.Millisecond
	maxBusyPause = 64 * time.Millisecond
)

// downFor is how long the lane answers a slot's applies unavailable
// without sending them, after one failed for want of its master. Then the
// next apply goes out as a probe. Shorter than hub's retry_after_ms
// (1 s), so a client's retry finds the master again if it is back.
const downFor = 500 * time.Millisecond

// maxDownSlots bounds downSlots; past it, expired entries are dropped.
const maxDownSlots = 1024

// downSlots remembers, on a Redis Cluster, the hash tags (so the slots)
// whose master did not answer: connection refused or reset, a timeout,
// CLUSTERDOWN. Without it, with one master down, every lane round that
// holds one event for that master waits out the client's reconnect
// attempts (100–300 ms), and the events of every other board in the round
// wait with it. With it, they wait once per downFor. Lane only; a nil
// *downSlots (one Redis node) does nothing.
//
// A down period also has the client reload the cluster's slot map, for
// go-redis does not on a dial failure: only on MOVED, or every
// ClusterStateReloadInterval (a minute). Without it, once the cluster has
// promoted the dead master's replica, the lane would keep dialing the dead
// address for up to that minute; with it, the next probe after the
// promotion finds the new master.
type downSlots struct {
	until  map[string]time.Time // hash tag -> end of its down period
	reload func()               // has the slot map read again, asynchronously
}

func newDownSlots(cc *redis.ClusterClient) *downSlots {
	return &downSlots{until: make(map[string]time.Time), reload: func() { cc.ReloadState(context.Background()) }}
}

// hashTag is the part of key between its first '{' and the next '}'
// (the Redis Cluster rule), or the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// skip answers, and takes out of bt.cmds, the commands whose slot is in a
// down period.
func (d *downSlots) skip(bt *batch) {
	if d == nil || len(d.until) == 0 {
		return
	}
	now := time.Now()
	n := len(bt.cmds)
	keep := bt.cmds[:0]
	for _, m := range bt.cmds {
		tag := hashTag(m.keys[0])
		if until, ok := d.until[tag]; ok && now.Before(until) {
			err := fmt.Errorf("redisstore: apply %s: %w: the master of its slot did not answer %s ago", m.calls[0].e.Board,
				rank.ErrUnavailable, (downFor - until.Sub(now)).Round(time.Millisecond))
			for _, c := range m.calls {
				c.err = err
			}
			continue
		}
		keep = append(keep, m)
	}
	clear(bt.cmds[len(keep):n])
	bt.cmds = keep
}

// note starts a down period for m's slot when m failed for want of its
// master, and ends it when m got an answer.
func (d *downSlots) note(m *cmd) {
	if d == nil {
		return
	}
	tag := hashTag(m.keys[0])
	err := m.res.Err()
	if !masterDown(err) {
		delete(d.until, tag)
		return
	}
	d.reload() // go-redis reloads once at a time, at most every 200 ms
	now := time.Now()
	if len(d.until) >= maxDownSlots {
		for k, until := range d.until {
			if now.After(until) {
				delete(d.until, k)
			}
		}
	}
	if len(d.until) < maxDownSlots {
		d.until[tag] = now.Add(downFor)
	}
}

// masterDown reports whether err says the slot's master could not be
// reached: any failure that is not a Redis reply (dial, reset, timeout),
// or CLUSTERDOWN. A cancelled caller is not.
func masterDown(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var re redis.Error
	if errors.As(err, &re) {
		return redis.HasErrorPrefix(err, "CLUSTERDOWN")
	}
	return true
}

// isBusy reports whether err is a cluster redirection or refusal that
// means the command was not run and may run after a short wait: TRYAGAIN
// (keys split by a migration), or MOVED/ASK left over after go-redis's
// own redirects. CLUSTERDOWN is not: a slot whose master is down stays
// down for longer than a wait, and its callers must hear unavailable at
// once.
func isBusy(err error) bool {
	if err == nil {
		return false
	}
	for _, p := range []string{"TRYAGAIN", "MOVED ", "ASK "} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
