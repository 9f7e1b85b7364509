package testenv

// A Sentinel topology: a master, its replicas and the Sentinels that
// watch it and promote a replica when the master dies, each on free
// loopback ports and stopped at the end of the test.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SentinelMaster is the master name the Sentinels of StartRedisSentinel
// monitor.
const SentinelMaster = "lbmaster"

// RedisSentinel is a master with replicas watched by Sentinels. Redis[0]
// starts as the master; Master tells which one it is now.
type RedisSentinel struct {
	Redis     []*Redis
	Sentinels []*Proc
}

// StartRedisSentinel starts a master, replicas replicas of it and
// sentinels Sentinels with a quorum of a majority, then waits until every
// replica's link is up and every Sentinel knows the replicas and the other
// Sentinels. With sentinels = 0 it is a master and its replicas alone. The Sentinels call a master down after a second without an
// answer, so a failover completes within a few seconds. extra are
// redis-server arguments for the master and the replicas.
func StartRedisSentinel(t testing.TB, replicas, sentinels int, extra ...string) *RedisSentinel {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Missing(t, "redis-server", "apt-get install -y redis-server")
	}
	rs := &RedisSentinel{}
	master := StartRedis(t, extra...)
	rs.Redis = append(rs.Redis, master)
	for range replicas {
		r := StartRedis(t, append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(master.Port)}, extra...)...)
		rs.Redis = append(rs.Redis, r)
	}
	rs.WaitReplicas(t, replicas, 30*time.Second)
	quorum := sentinels/2 + 1
	for i := range sentinels {
		p := newProc(t, "sentinel"+strconv.Itoa(i), bin, func(port int, dir string) []string {
			conf := filepath.Join(dir, "sentinel.conf")
			body := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndir %s\n"+
				"sentinel monitor %s 127.0.0.1 %d %d\n"+
				"sentinel down-after-milliseconds %[3]s 1000\n"+
				"sentinel failover-timeout %[3]s 4000\n"+
				"sentinel parallel-syncs %[3]s 1\n",
				port, dir, SentinelMaster, master.Port, quorum)
			if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
				t.Fatalf("testenv: sentinel config: %v", err)
			}
			return []string{conf, "--sentinel"}
		}, redisReady)
		rs.Sentinels = append(rs.Sentinels, p)
	}
	Eventually(t, 30*time.Second, "every Sentinel knows the replicas and the other Sentinels", func() error {
		for _, s := range rs.Sentinels {
			m, err := sentinelMasterInfo(s.Addr())
			if err != nil {
				return err
			}
			if m["num-slaves"] != strconv.Itoa(replicas) || m["num-other-sentinels"] != strconv.Itoa(sentinels-1) {
				return fmt.Errorf("sentinel %s: num-slaves %s, num-other-sentinels %s", s.Addr(), m["num-slaves"], m["num-other-sentinels"])
			}
		}
		return nil
	})
	return rs
}

// URL is the redis-sentinel:// URL naming every Sentinel.
func (rs *RedisSentinel) URL() string {
	addrs := make([]string, len(rs.Sentinels))
	for i, s := range rs.Sentinels {
		addrs[i] = s.Addr()
	}
	return "redis-sentinel://" + strings.Join(addrs, ",") + "/" + SentinelMaster
}

// Master is the node the running Sentinels name as master now.
func (rs *RedisSentinel) Master(t testing.TB) *Redis {
	t.Helper()
	var lastErr error
	for _, s := range rs.Sentinels {
		v, err := RedisDo(s.Addr(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster)
		if err != nil {
			lastErr = err
			continue
		}
		a, ok := v.([]any)
		if !ok || len(a) != 2 {
			lastErr = fmt.Errorf("get-master-addr-by-name answered %v", v)
			continue
		}
		for _, r := range rs.Redis {
			if fmt.Sprint(a[1]) == strconv.Itoa(r.Port) {
				return r
			}
		}
		lastErr = fmt.Errorf("master %v is none of the started servers", a)
	}
	t.Fatalf("testenv: Sentinel master: %v", lastErr)
	return nil
}

// WaitPromoted waits until the Sentinels name a master other than old
// and that node answers as a master, and returns it.
func (rs *RedisSentinel) WaitPromoted(t testing.TB, old *Redis, within time.Duration) *Redis {
	t.Helper()
	var got *Redis
	Eventually(t, within, "a replica promoted by Sentinel", func() error {
		m := rs.Master(t)
		if m == old {
			return fmt.Errorf("the Sentinels still name %s", old.Addr())
		}
		role, err := RedisDo(m.Addr(), "ROLE")
		if err != nil {
			return err
		}
		if a, ok := role.([]any); !ok || len(a) == 0 || a[0] != "master" {
			return fmt.Errorf("%s answers ROLE %v", m.Addr(), role)
		}
		got = m
		return nil
	})
	return got
}

// WaitReplicas waits until the current master has n replicas online
// (their initial sync done).
func (rs *RedisSentinel) WaitReplicas(t testing.TB, n int, within time.Duration) {
	t.Helper()
	master := rs.Redis[0]
	if len(rs.Sentinels) > 0 {
		master = rs.Master(t)
	}
	Eventually(t, within, fmt.Sprintf("%d replicas online on %s", n, master.Addr()), func() error {
		v, err := RedisDo(master.Addr(), "INFO", "replication")
		if err != nil {
			return err
		}
		info := fmt.Sprint(v)
		online := strings.Count(info, "state=online")
		if online < n {
			return fmt.Errorf("%d replicas online:\n%s", online, info)
		}
		return nil
	})
}

// sentinelMasterInfo is SENTINEL MASTER's field list as a map.
func sentinelMasterInfo(addr string) (map[string]string, error) {
	v, err := RedisDo(addr, "SENTINEL", "MASTER", SentinelMaster)
	if err != nil {
		return nil, err
	}
	a, ok := v.([]any)
	if !ok || len(a)%2 != 0 {
		return nil, fmt.Errorf("SENTINEL MASTER answered %v", v)
	}
	m := make(map[string]string, len(a)/2)
	for i := 0; i < len(a); i += 2 {
		m[fmt.Sprint(a[i])] = fmt.Sprint(a[i+1])
	}
	return m, nil
}
