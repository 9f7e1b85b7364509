package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// redisLog routes go-redis's own messages (pool dial failures, dropped
// connections) through the node's slog logger, so stderr stays one JSON
// object per line. They are failures, so they log at WARN.
type redisLog struct{ log *slog.Logger }

func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	r.log.WarnContext(ctx, "redis client: "+strings.TrimSpace(fmt.Sprintf(format, v...)))
}

// useRedisLog installs the node's logger in go-redis. go-redis keeps its
// logger in a process-wide variable (redis.SetLogger is its only hook; it
// stores atomically), so this is the one piece of global state the gateway
// sets: one node runs per process, and a later node in the same process (in
// tests) takes it over.
func useRedisLog(log *slog.Logger) {
	redis.SetLogger(redisLog{log: log.With("component", "redis")})
}

// redactURLs hides the password of each URL in a comma-separated list, for
// the banner and logs.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		} else if at := strings.LastIndex(p, "@"); at >= 0 && err != nil {
			parts[i] = "xxxxx" + p[at:]
		}
	}
	return strings.Join(parts, ",")
}
