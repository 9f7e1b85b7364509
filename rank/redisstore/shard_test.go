package redisstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// TestShardedRefused: this engine keeps a board in one shard, so a config
// of more shards is a bad_request naming the field, and nothing is stored.
func TestShardedRefused(t *testing.T) {
	t.Parallel()
	s := newStore(t, testenv.StartRedis(t), Config{})
	ctx := t.Context()
	b := rank.DefaultBoard("sh")
	b.Shards = 4
	_, err := s.PutBoard(ctx, b)
	if !errors.Is(err, rank.ErrInvalidConfig) || !strings.Contains(err.Error(), "field shards") {
		t.Fatalf("PutBoard shards 4: %v, want ErrInvalidConfig naming shards", err)
	}
	if _, err := s.GetBoard(ctx, "sh"); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("refused board stored: %v", err)
	}
	b.Shards = 1
	if _, err := s.PutBoard(ctx, b); err != nil {
		t.Fatalf("PutBoard shards 1: %v", err)
	}
}
