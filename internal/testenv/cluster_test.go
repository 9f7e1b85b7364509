package testenv

import (
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
