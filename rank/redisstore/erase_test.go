package redisstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank/ranktest"
)

// eraseMember is the id the scans look for: no other test writes it.
const eraseMember = "gdpr-erase-me"

// mentions scans every key of store s (on every master of a cluster) and
// lists where the text occurs: in a key's name, a hash field or
// value, a set or sorted-set member, a list element or a string value.
// Only the webhook deliveries' contents are left out: a delivery names the
// member it tells of, member.erased included (R29, docs/operations.md,
// "Erasure"); the outbox's key names, markers included, are scanned.
func mentions(t *testing.T, s *Store, text string) []string {
	t.Helper()
	c, match := s.client, escapeGlob(s.cfg.Prefix)+":*"
	ctx := t.Context()
	var found []string
	scan := func(ctx context.Context, c redis.Cmdable) error {
		f, err := testenv.KeysHolding(ctx, c, match, text)
		found = append(found, f...)
		return err
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		mu := make(chan struct{}, 1) // one master's scan appends at a time
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			mu <- struct{}{}
			defer func() { <-mu }()
			return scan(ctx, m)
		})
	} else {
		err = scan(ctx, c)
	}
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	return found
}

// testEraseScan: R29 on Redis: after an erasure of a member that was on a
// plain board with history and meta over two periods, a banned one, a
// sharded one, a hot one, the sources of a union and the union, a window
// and its source, a cohort board and a league, with a profile, no key,
// field, member, element or value of the store holds its id, and its old
// request ids are applied anew. Twice: with a global ban (its copies on
// every board), and without, where its entries are in the boards' and the
// cohorts' sorted sets (a ban takes them out of both).
func testEraseScan(t *testing.T, mk func(t *testing.T, now func() time.Time) *Store) {
	for _, ban := range []bool{true, false} {
		t.Run(map[bool]string{true: "banned", false: "shown"}[ban], func(t *testing.T) {
			clk := ranktest.NewClock(ranktest.EraseAnchor())
			s := mk(t, clk.Now)
			fx := ranktest.SetupErasure(t, s, clk, eraseMember, "bob")
			if ban {
				fx.GlobalBan(t, s)
			}
			if got := mentions(t, s, eraseMember); len(got) < 20 {
				t.Fatalf("before the erasure the scan finds the member in %d places, want it everywhere: %q", len(got), got)
			}
			e, err := s.Erase(t.Context(), eraseMember)
			if err != nil {
				t.Fatalf("Erase: %v", err)
			}
			boards := len(fx.Boards)
			if !ban {
				boards-- // the board where only another member scores is untouched
			}
			if e.Entries != fx.Entries || len(e.Boards) != boards {
				t.Fatalf("Erase = %+v, want %d entries on %d of %v", e, fx.Entries, boards, fx.Boards)
			}
			if got := mentions(t, s, eraseMember); len(got) != 0 {
				t.Fatalf("after the erasure the member is still in:\n%s", strings.Join(got, "\n"))
			}
			fx.CheckErased(t, s)
		})
	}
}

func TestEraseScan(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	testEraseScan(t, func(t *testing.T, now func() time.Time) *Store {
		return newStore(t, srv, Config{Now: now, HotInterval: -1})
	})
}
