package redisstore

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

func TestNewClient(t *testing.T) {
	t.Parallel()
	cases := []struct {
		url      string
		cluster  bool
		addrs    []string
		password string
		db       int
		tls      bool
		dial     time.Duration
	}{
		{url: "redis://127.0.0.1:7000/2", addrs: []string{"127.0.0.1:7000"}, db: 2},
		{url: "redis://:s3cret@h:1/0", addrs: []string{"h:1"}, password: "s3cret"},
		{url: "rediss://h:6380", addrs: []string{"h:6380"}, tls: true},
		{url: "h:1", addrs: []string{"h:1"}},
		{url: "redis://h:1?dial_timeout=3s", addrs: []string{"h:1"}, dial: 3 * time.Second},
		{url: "h1:1,h2:2", cluster: true, addrs: []string{"h1:1", "h2:2"}},
		{url: "redis://h1:1, redis://h2:2", cluster: true, addrs: []string{"h1:1", "h2:2"}},
		{url: "redis-cluster://:pw@h1:1,h2:2,h3:3?dial_timeout=1s", cluster: true,
			addrs: []string{"h1:1", "h2:2", "h3:3"}, password: "pw", dial: time.Second},
		{url: "redis-cluster://h1:1", cluster: true, addrs: []string{"h1:1"}},
		{url: "rediss-cluster://h1:1,h2:2/0", cluster: true, addrs: []string{"h1:1", "h2:2"}, tls: true},
	}
	for _, tc := range cases {
		c, err := NewClient(tc.url)
		if err != nil {
			t.Errorf("NewClient(%q): %v", tc.url, err)
			continue
		}
		dial := tc.dial
		if dial == 0 {
			dial = dialTimeout
		}
		switch c := c.(type) {
		case *redis.Client:
			o := c.Options()
			if tc.cluster || o.Addr != tc.addrs[0] || o.Password != tc.password || o.DB != tc.db ||
				(o.TLSConfig != nil) != tc.tls || !o.ContextTimeoutEnabled || o.MaxRetries != maxRetries || o.DialTimeout != dial {
				t.Errorf("NewClient(%q): single node %+v, want %+v", tc.url, o, tc)
			}
		case *redis.ClusterClient:
			o := c.Options()
			if !tc.cluster || !slices.Equal(o.Addrs, tc.addrs) || o.Password != tc.password ||
				(o.TLSConfig != nil) != tc.tls || !o.ContextTimeoutEnabled || o.MaxRetries != maxRetries || o.DialTimeout != dial ||
				o.ClusterStateReloadInterval != clusterReload {
				t.Errorf("NewClient(%q): cluster %+v, want %+v", tc.url, o, tc)
			}
		default:
			t.Errorf("NewClient(%q): %T", tc.url, c)
		}
		c.Close()
	}
	for _, bad := range []string{"", "http://h:1", "redis-cluster://h1:1,h2:2/3", "redis://h:1/x", "h1:1,,h2:2", "redis://h:1?nonsense=1"} {
		if c, err := NewClient(bad); err == nil {
			c.Close()
			t.Errorf("NewClient(%q) succeeded", bad)
		}
	}
	if got := redact("redis://user:hunter2@h:1/0"); got != "redis://user:xxxxx@h:1/0" {
		t.Errorf("redact = %q", got)
	}
}

// A record written by the very call reading it (go-redis re-sent the
// pipeline after a timeout) is that call's result, not a duplicate; a record
// of another call with the same payload is a duplicate; another payload is a
// conflict.
func TestApplyResultAttemptToken(t *testing.T) {
	t.Parallel()
	rec := "k3x.ab12-7,120,1,0,0,5,0"
	for _, tc := range []struct {
		dup         int64
		hash, token string
		wantDup     bool
		wantErr     error
	}{
		{0, "k3x", "ab12-7", false, nil},
		{1, "k3x", "ab12-7", false, nil}, // our own write, seen again after a transport retry
		{1, "k3x", "ab12-8", true, nil},  // another call: a real duplicate
		{1, "k3x", "zz99-7", true, nil},  // another node
		{1, "other", "ab12-7", false, rank.ErrIdempotencyConflict},
	} {
		r, err := applyResult(rank.Event{Board: "b"}, strconv.FormatInt(tc.dup, 10)+rec, tc.hash, tc.token, nil)
		if !errors.Is(err, tc.wantErr) || (err == nil && tc.wantErr != nil) {
			t.Errorf("%+v: err %v, want %v", tc, err, tc.wantErr)
			continue
		}
		if err == nil && (r.Duplicate != tc.wantDup || r.Score != 120 || r.Seq != 5) {
			t.Errorf("%+v: result %+v", tc, r)
		}
	}
}
