package main

import (
	"bytes"
	"testing"
	"time"
)

// --redis-replicas and --redis-replica-timeout (docs/protocol.md §1):
// defaults, env twins, and refusals.
func TestRedisReplicaFlags(t *testing.T) {
	t.Parallel()
	o, err := parseServe([]string{"--dev"}, envMap(nil), new(bytes.Buffer))
	if err != nil || o.RedisReplicas != 0 || o.RedisReplicaTO != time.Second {
		t.Fatalf("defaults: %v, replicas %d, timeout %s", err, o.RedisReplicas, o.RedisReplicaTO)
	}
	o, err = parseServe([]string{"--dev"}, envMap(map[string]string{"LB_REDIS_REPLICAS": "1", "LB_REDIS_REPLICA_TIMEOUT": "300ms"}), new(bytes.Buffer))
	if err != nil || o.RedisReplicas != 1 || o.RedisReplicaTO != 300*time.Millisecond {
		t.Fatalf("env twins: %v, replicas %d, timeout %s", err, o.RedisReplicas, o.RedisReplicaTO)
	}
	for _, args := range [][]string{{"--dev", "--redis-replicas", "-1"}, {"--dev", "--redis-replica-timeout", "0s"}} {
		if _, err := parseServe(args, envMap(nil), new(bytes.Buffer)); err == nil {
			t.Errorf("parseServe accepted %v", args)
		}
	}
}
