package rank

import (
	"errors"
	"testing"
)

// TestShardOf pins the placement (FNV-1a 32 of the member id, mod n): it is
// part of the data layout, so a change would strand every member.
func TestShardOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		m    string
		n    int
		want int
	}{
		{"alice", 16, 0x872213e7 % 16}, {"bob", 16, 0x86c6a0d4 % 16}, {"m:1", 16, 0x1708be75 % 16},
		{"alice", 3, 0x872213e7 % 3}, {"alice", 1, 0}, {"alice", 0, 0},
	}
	for _, c := range cases {
		if got := ShardOf(c.m, c.n); got != c.want {
			t.Errorf("ShardOf(%q, %d) = %d, want %d", c.m, c.n, got, c.want)
		}
	}
}

func TestParseBoardShards(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]int{`{}`: 0, `{"shards":1}`: 1, `{"shards":16}`: 16, `{"shards":64}`: 64} {
		b, err := ParseBoard("b", []byte(body))
		if err != nil || b.Shards != want {
			t.Errorf("ParseBoard(%s) = %d, %v; want %d", body, b.Shards, err, want)
		}
		if b.Sharded() != (want > 1) {
			t.Errorf("ParseBoard(%s).Sharded() = %v", body, b.Sharded())
		}
	}
	for _, body := range []string{`{"shards":0}`, `{"shards":65}`, `{"shards":-1}`, `{"shards":"4"}`, `{"shards":1.5}`} {
		if _, err := ParseBoard("b", []byte(body)); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("ParseBoard(%s): %v, want ErrInvalidConfig", body, err)
		}
	}
	old, next := DefaultBoard("b"), DefaultBoard("b")
	next.Shards = 1
	if err := CheckShardsChange(old, next); err != nil {
		t.Errorf("absent -> 1 is no change: %v", err)
	}
	next.Shards = 2
	if err := CheckShardsChange(old, next); !errors.Is(err, ErrShardsFixed) || ErrShardsFixed.Code() != "read_only" {
		t.Errorf("1 -> 2: %v, want ErrShardsFixed (read_only)", err)
	}
}
