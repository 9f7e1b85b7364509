package api_test

import (
	"context"
	"testing"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/redisstore"
)

// redisEngine runs the end-to-end tables against a real redis-server of the
// test's own (testenv.Missing when redis-server is not installed).
func redisEngine() engine {
	return engine{"redis", func(t testing.TB) rank.Store {
		srv := testenv.StartRedis(t)
		client, err := redisstore.NewClient(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		s, err := redisstore.New(context.Background(), redisstore.Config{Client: client})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}}
}
