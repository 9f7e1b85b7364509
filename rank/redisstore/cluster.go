package redisstore

// Redis Cluster: what the lane does while a board's slot moves between
// masters (CLUSTER SETSLOT MIGRATING/IMPORTING, MIGRATE, SETSLOT NODE).
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
	"time"

	"github.com/redis/go-redis/v9"
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
