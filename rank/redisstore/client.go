package redisstore

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client defaults chosen so an unreachable server is reported promptly
// (R13) and a retry never waits long. go-redis retries are safe for applies:
// the idempotency record makes a resent EVALSHA a duplicate, never a second
// application.
const (
	dialTimeout  = 500 * time.Millisecond
	ioTimeout    = 2 * time.Second
	poolTimeout  = time.Second
	maxRetries   = 1
	dialAttempts = 1
	// clusterReload is how old a Redis Cluster client's slot map may get
	// before a command has it read again (one CLUSTER SLOTS, in the
	// background). go-redis reads it again on MOVED but not when a master
	// stops answering, so after a failover the promoted replica would stay
	// unknown for its default minute, and every read of the dead master's
	// boards (a board config, a top) would keep dialing the dead address.
	clusterReload = time.Second
)

// NewClient turns a --redis-url (docs/protocol.md §1) into a client:
//
//	redis://[:pass@]host:port/db, rediss://...      one node (rediss = TLS)
//	host:port                                       one node
//	h1:p1,h2:p2  or  redis://h1:p1,h2:p2            Redis Cluster, seed addresses
//	redis-cluster://[:pass@]h1:p1,h2:p2             Redis Cluster
//	redis-sentinel://[:pass@]h1:p1,h2:p2/name[/db]  the master "name" found through
//	                                                these Sentinels and followed
//	                                                through failovers (rediss-sentinel = TLS)
//
// Query parameters are go-redis's (dial_timeout, pool_size, ...). Timeouts
// not given default to short values and ContextTimeoutEnabled is set, so a
// context deadline bounds every call.
func NewClient(rawURL string) (redis.UniversalClient, error) {
	u := strings.TrimSpace(rawURL)
	if u == "" {
		return nil, errors.New("redisstore: empty redis url")
	}
	scheme, rest, hasScheme := strings.Cut(u, "://")
	if !hasScheme {
		scheme, rest = "redis", u
	}
	cluster := scheme == "redis-cluster" || scheme == "rediss-cluster"
	if cluster {
		scheme = strings.TrimSuffix(scheme, "-cluster")
	}
	sentinel := scheme == "redis-sentinel" || scheme == "rediss-sentinel"
	if sentinel {
		scheme = strings.TrimSuffix(scheme, "-sentinel")
	}
	if scheme != "redis" && scheme != "rediss" {
		return nil, fmt.Errorf("redisstore: redis url scheme %q: want redis, rediss, redis-cluster or redis-sentinel", scheme)
	}
	// Several full urls ("redis://h1:p1,redis://h2:p2") are seed lists too.
	for _, sep := range []string{", ", ",rediss://", ",redis://"} {
		rest = strings.ReplaceAll(rest, sep, ",")
	}
	// Split "[user@]h1:p1,h2:p2[/db][?query]" by hand: net/url rejects a
	// comma-separated host list.
	hostPart, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		hostPart, tail = rest[:i], rest[i:]
	}
	userinfo := ""
	if i := strings.LastIndex(hostPart, "@"); i >= 0 {
		userinfo, hostPart = hostPart[:i+1], hostPart[i+1:]
	}
	var hosts []string
	for _, h := range strings.Split(hostPart, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, fmt.Errorf("redisstore: redis url %q: empty address", redact(rawURL))
		}
		hosts = append(hosts, h)
	}
	if sentinel {
		return newFailover(rawURL, scheme, userinfo, hosts, tail)
	}
	if len(hosts) > 1 {
		cluster = true
	}
	if !cluster {
		opt, err := redis.ParseURL(scheme + "://" + userinfo + hosts[0] + tail)
		if err != nil {
			return nil, fmt.Errorf("redisstore: redis url %q: %w", redact(rawURL), err)
		}
		opt.ContextTimeoutEnabled = true
		fillDefaults(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout, &opt.MaxRetries, &opt.DialerRetries)
		return redis.NewClient(opt), nil
	}
	// The cluster parser takes the first seed as the host and the others as
	// addr= query parameters.
	path, query, _ := strings.Cut(tail, "?")
	if path != "" && path != "/" && path != "/0" {
		return nil, fmt.Errorf("redisstore: redis url %q: Redis Cluster has only database 0", redact(rawURL))
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("redisstore: redis url %q: %w", redact(rawURL), err)
	}
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	opt, err := redis.ParseClusterURL(scheme + "://" + userinfo + hosts[0] + "?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("redisstore: redis url %q: %w", redact(rawURL), err)
	}
	opt.ContextTimeoutEnabled = true
	fillDefaults(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout, &opt.MaxRetries, &opt.DialerRetries)
	opt.ClusterStateReloadInterval = or(opt.ClusterStateReloadInterval, clusterReload)
	return redis.NewClusterClient(opt), nil
}

// newFailover is NewClient for a redis-sentinel:// URL: tail is
// "/<master-name>[/db][?query]". The URL's password is the master's (and
// its replicas'); Sentinels that require one of their own take it from the
// sentinel_password query parameter, so a password never goes to a server
// that was not configured with it.
func newFailover(rawURL, scheme, userinfo string, sentinels []string, tail string) (redis.UniversalClient, error) {
	path, query, _ := strings.Cut(tail, "?")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if parts[0] == "" || len(parts) > 2 {
		return nil, fmt.Errorf("redisstore: redis url %q: want redis-sentinel://host:port[,host:port...]/<master-name>[/db]", redact(rawURL))
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("redisstore: redis url %q: %w", redact(rawURL), err)
	}
	sentinelPassword := q.Get("sentinel_password")
	q.Del("sentinel_password")
	q.Set("master_name", parts[0])
	if len(parts) == 2 {
		q.Set("db", parts[1])
	}
	for _, h := range sentinels[1:] {
		q.Add("addr", h)
	}
	// The parser takes the URL's userinfo as the Sentinels' credentials;
	// they are the master's here, set below.
	opt, err := redis.ParseFailoverURL(scheme + "://" + sentinels[0] + "?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("redisstore: redis url %q: %w", redact(rawURL), err)
	}
	if userinfo != "" {
		u, err := url.Parse(scheme + "://" + userinfo + "x")
		if err != nil {
			return nil, fmt.Errorf("redisstore: redis url %q: %w", redact(rawURL), err)
		}
		opt.Username = u.User.Username()
		opt.Password, _ = u.User.Password()
	}
	opt.SentinelPassword = sentinelPassword
	opt.ContextTimeoutEnabled = true
	fillDefaults(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout, &opt.MaxRetries, &opt.DialerRetries)
	return redis.NewFailoverClient(opt), nil
}

// fillDefaults sets the fields a URL left at zero, for both client kinds
// (redis.Options and redis.ClusterOptions share them by name, not by type).
func fillDefaults(dial, read, write, pool *time.Duration, retries, dialerRetries *int) {
	*dial = or(*dial, dialTimeout)
	*read = or(*read, ioTimeout)
	*write = or(*write, ioTimeout)
	*pool = or(*pool, poolTimeout)
	*retries = or(*retries, maxRetries)
	*dialerRetries = or(*dialerRetries, dialAttempts)
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// redact hides a password in a url for error messages.
func redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw
	}
	user := rest[:at]
	if i := strings.Index(user, ":"); i >= 0 {
		user = user[:i] + ":xxxxx"
	}
	return scheme + "://" + user + rest[at:]
}
