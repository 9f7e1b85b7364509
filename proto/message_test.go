package proto

import (
	"errors"
	"fmt"
	"testing"
)

type coded struct{ code, msg string }

func (c *coded) Error() string { return c.msg }
func (c *coded) Code() string  { return c.code }

func TestPublicMessage(t *testing.T) {
	t.Parallel()
	conflict := &coded{CodeIdempotencyConflict, "request id already used with a different payload"}
	bad := &coded{CodeBadRequest, "bad request"}
	down := &coded{CodeUnavailable, "rank store unavailable"}
	unauth := &coded{CodeUnauthorized, "malformed token"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("api: apply b: redisstore: apply b: %w", conflict), "request id already used with a different payload"},
		{fmt.Errorf("api: top b: memstore: top b: %w: board b has no periods", bad), "bad request: board b has no periods"},
		{fmt.Errorf("redisstore: top b: %w: dial tcp 127.0.0.1:6379: connect: connection refused", down), "service unavailable, retry later"},
		{fmt.Errorf("auth: %w: token is malformed: could not JSON decode claim", unauth), "malformed token"},
		{errors.New("redisstore: EOF"), "internal error"},
		{bad, "bad request"},
	} {
		if got := PublicMessage(tc.err); got != tc.want {
			t.Errorf("PublicMessage(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
