package testenv

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The helper forms a working cluster: every slot served, a key written
// through its owner, MOVED from the others; a slot migrated with its keys
// is served by the target afterwards; a killed master rejoins with its
// slots.
func TestRedisCluster(t *testing.T) {
	Long(t)
	t.Parallel()
	c := StartRedisCluster(t, 3)
	key := "{board}:x"
	slot := c.KeySlot(t, key)
	owner := c.Owner(t, slot)
	for i, n := range c.Nodes {
		_, err := RedisDo(n.Addr(), "SET", key, "1")
		if i == owner && err != nil {
			t.Fatalf("SET on the owner: %v", err)
		}
		if i != owner && (err == nil || !strings.HasPrefix(err.Error(), "MOVED "+strconv.Itoa(slot))) {
			t.Fatalf("SET on node %d (owner %d): %v, want MOVED", i, owner, err)
		}
	}
	to := (owner + 1) % 3
	rounds := 0
	moved := c.MigrateSlot(t, slot, owner, to, 1, func() { rounds++ })
	if moved != 1 || rounds != 1 {
		t.Errorf("migrated %d keys in %d rounds, want 1 in 1", moved, rounds)
	}
	c.WaitOK(t, 10*time.Second)
	if got := c.Owner(t, slot); got != to {
		t.Fatalf("slot %d owned by %d after the migration, want %d", slot, got, to)
	}
	if v, err := RedisDo(c.Nodes[to].Addr(), "GET", key); err != nil || v != "1" {
		t.Fatalf("GET on the new owner = %v, %v", v, err)
	}

	c.Nodes[owner].Kill()
	if _, err := RedisDo(c.Nodes[to].Addr(), "GET", key); err != nil {
		t.Fatalf("GET on a live master while another is down: %v", err)
	}
	c.Nodes[owner].Start()
	c.WaitOK(t, 20*time.Second)
}

// A cluster with replicas: each master has its replica online; a killed
// master's replica is promoted and serves its slots; the old master,
// restarted, rejoins as the new master's replica.
func TestRedisClusterReplicas(t *testing.T) {
	Long(t)
	t.Parallel()
	c := StartRedisClusterReplicas(t, 3, 1)
	if len(c.Nodes) != 6 || c.ReplicaOf[0] != -1 || c.ReplicaOf[3] != 0 || c.ReplicaOf[5] != 2 {
		t.Fatalf("nodes %d, ReplicaOf %v", len(c.Nodes), c.ReplicaOf)
	}
	key := "{board}:x"
	owner := c.Owner(t, c.KeySlot(t, key))
	if owner > 2 {
		t.Fatalf("slot served by node %d, a replica", owner)
	}
	if _, err := RedisDo(c.Nodes[owner].Addr(), "SET", key, "1"); err != nil {
		t.Fatalf("SET on the owner: %v", err)
	}
	// WAIT would have to share the SET's connection; RedisDo dials anew,
	// so the replica's offset is compared with the master's instead.
	offset := func(addr, field string) int64 {
		v, err := RedisDo(addr, "INFO", "replication")
		if err != nil {
			t.Fatalf("INFO replication on %s: %v", addr, err)
		}
		for _, line := range strings.Split(fmt.Sprint(v), "\n") {
			if n, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
				off, _ := strconv.ParseInt(n, 10, 64)
				return off
			}
		}
		return -1
	}
	written := offset(c.Nodes[owner].Addr(), "master_repl_offset")
	replica := slices.Index(c.ReplicaOf, owner)
	Eventually(t, 10*time.Second, "the replica has the write", func() error {
		if got := offset(c.Nodes[replica].Addr(), "slave_repl_offset"); got < written {
			return fmt.Errorf("replica at offset %d, master wrote to %d", got, written)
		}
		return nil
	})
	c.Nodes[owner].Kill()
	promoted := c.WaitPromoted(t, owner, 30*time.Second)
	if c.ReplicaOf[promoted] != owner {
		t.Fatalf("node %d promoted, want %d's replica", promoted, owner)
	}
	if v, err := RedisDo(c.Nodes[promoted].Addr(), "GET", key); err != nil || v != "1" {
		t.Fatalf("GET on the promoted replica = %v, %v", v, err)
	}
	c.Nodes[owner].Start()
	c.WaitOK(t, 30*time.Second)
	c.WaitReplicas(t, 30*time.Second)
	role, err := RedisDo(c.Nodes[owner].Addr(), "ROLE")
	if err != nil || role.([]any)[0] != "slave" {
		t.Fatalf("the old master restarted answers ROLE %v, %v; want a replica", role, err)
	}
}

func TestNATSCluster(t *testing.T) {
	Long(t)
	t.Parallel()
	c := StartNATSCluster(t, 3)
	if got := strings.Count(c.URLs(), "nats://"); got != 3 {
		t.Fatalf("URLs() = %q", c.URLs())
	}
	if names, err := c.Clients(0); err != nil || len(names) != 0 {
		t.Fatalf("Clients(0) of a fresh node = %q, %v", names, err)
	}
	c.Nodes[1].Kill()
	c.Nodes[1].Start()
	c.WaitRoutes(t, 20*time.Second)
}
