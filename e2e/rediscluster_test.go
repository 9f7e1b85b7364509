package e2e

import (
	"testing"
)

// eachStore runs f once on one redis-server and once on a 3-master Redis
// Cluster, as parallel subtests "redis" and "cluster": the multi-node
// tests hold on both deployments.
func eachStore(t *testing.T, f func(t *testing.T, o clusterOpts)) {
	t.Helper()
	for _, s := range []struct {
		name    string
		cluster bool
	}{{"redis", false}, {"cluster", true}} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			f(t, clusterOpts{RedisCluster: s.cluster})
		})
	}
}
