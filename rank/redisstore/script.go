package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank/lua"
)

// script is one embedded Lua script, run by its SHA1 and loaded again when
// the server has lost it (restart, SCRIPT FLUSH, failover).
type script struct {
	name string
	src  string
	sha  string
}

func newScript(name string) *script {
	src := lua.Source(name)
	h := sha1.Sum([]byte(src))
	return &script{name: name, src: src, sha: hex.EncodeToString(h[:])}
}

// load sends SCRIPT LOAD (to every master on a cluster client).
func (sc *script) load(ctx context.Context, c redis.UniversalClient) error {
	return c.ScriptLoad(ctx, sc.src).Err()
}

// run is EVALSHA, with one SCRIPT LOAD and resend on NOSCRIPT.
func (sc *script) run(ctx context.Context, c redis.UniversalClient, keys []string, args ...any) (any, error) {
	v, err := c.EvalSha(ctx, sc.sha, keys, args...).Result()
	if !isNoScript(err) {
		return v, err
	}
	if err := sc.load(ctx, c); err != nil {
		return nil, err
	}
	return c.EvalSha(ctx, sc.sha, keys, args...).Result()
}

// pipelined runs a pipeline of sc's calls that run builds and sends, once
// more after loading sc when the server had lost it (a pipelined EVALSHA
// cannot fall back to EVAL by itself).
func (sc *script) pipelined(ctx context.Context, c redis.UniversalClient, run func() ([]*redis.Cmd, error)) ([]*redis.Cmd, error) {
	cmds, err := run()
	if err != nil && isNoScript(err) {
		if err = sc.load(ctx, c); err == nil {
			cmds, err = run()
		}
	}
	return cmds, err
}

func isNoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }
