package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
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

// budgetCtx is a context whose time runs out after looks checks of its
// Err: an erasure's budget that ends after a known number of steps,
// whatever the machine's speed.
type budgetCtx struct {
	context.Context
	looks atomic.Int64
}

func (c *budgetCtx) Err() error {
	if c.looks.Add(-1) < 0 {
		return context.DeadlineExceeded
	}
	return nil
}

// TestEraseResumes (R29 on a busy board): the member's idempotency records
// sit among tens of thousands of others' in one bucket hash, and every
// erasure call looks at 500 fields at most (Config.EraseChunk); an Erase
// whose budget ends after a few calls answers Done false with what it
// did, the next goes on from the kept cursors (its counts include the
// earlier ones), and the one that finishes leaves no record of the
// member, its old request ids applied anew, the others' records kept, and
// no progress key (a scan finds the id nowhere).
func TestEraseResumes(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{HotInterval: -1, EraseChunk: 500})
	ctx := t.Context()
	mustPut(t, s, rank.DefaultBoard("busy"))
	mustPut(t, s, rank.DefaultBoard("quiet"))
	for i := range 3 {
		mustApply(t, s, incr("busy", fmt.Sprintf("old-%d", i), eraseMember, 1))
	}
	mustApply(t, s, incr("busy", "b1", "bob", 1))
	mustApply(t, s, incr("quiet", "q1", eraseMember, 1))
	// The bucket the records went to, filled as a busy board fills it: the
	// others' records and more of the member's (their values do not
	// matter to an erasure).
	buckets, err := s.client.Keys(ctx, escapeGlob(s.cfg.Prefix)+":{busy}:r:*").Result()
	if err != nil || len(buckets) != 1 {
		t.Fatalf("buckets %v, %v: want the one records were written to", buckets, err)
	}
	const others, mine = 40000, 2000
	// In pipelines of 5,000: one of 42,000 may outlast the client's write
	// timeout on a busy machine.
	for start := 0; start < others+mine; start += 5000 {
		pipe := s.client.Pipeline()
		for i := start; i < min(start+5000, others+mine); i++ {
			m := fmt.Sprintf("p%d", i)
			if i%((others+mine)/mine) == 0 {
				m = eraseMember
			}
			pipe.HSet(ctx, buckets[0], fmt.Sprintf("%s|r%d", m, i), "x")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	left := func() int {
		n := 0
		var cursor uint64
		for {
			fs, next, err := s.client.HScan(ctx, buckets[0], cursor, escapeGlob(eraseMember)+"|*", 5000).Result()
			if err != nil {
				t.Fatal(err)
			}
			n += len(fs) / 2
			if next == 0 {
				return n
			}
			cursor = next
		}
	}
	total := left()

	var last rank.Erasure
	calls, still := 0, 0
	for !last.Done {
		calls++
		if calls > 200 {
			t.Fatalf("not done after %d calls: %+v", calls, last)
		}
		bctx := &budgetCtx{Context: ctx}
		bctx.looks.Store(6)
		e, err := s.Erase(bctx, eraseMember)
		if err != nil {
			t.Fatalf("Erase call %d: %v", calls, err)
		}
		if e.Records < last.Records || e.Entries < last.Entries {
			t.Fatalf("call %d: %+v after %+v: the counts went back", calls, e, last)
		}
		// A call may only finish empty buckets; never two in a row.
		if still++; e.Records != last.Records || e.Entries != last.Entries || len(e.Boards) != len(last.Boards) {
			still = 0
		}
		if !e.Done && still > 2 {
			t.Fatalf("call %d: no progress in %d calls: %+v", calls, still, e)
		}
		if !e.Done {
			// Records counts busy's, and quiet's one once it got there.
			if got := left(); got != total-int(e.Records) && got != total-int(e.Records)+1 {
				t.Fatalf("call %d: %d of the member's records left of %d, answer %+v", calls, got, total, e)
			}
		}
		last = e
	}
	if calls < 3 {
		t.Fatalf("done in %d calls: the budget did not cut the erasure short", calls)
	}
	t.Logf("erased in %d calls: %+v", calls, last)
	if last.Entries != 2 || last.Records != int64(total)+1 || !slices.Equal(last.Boards, []string{"busy", "quiet"}) {
		t.Fatalf("the last answer %+v, want 2 entries, %d records (and quiet's one), boards busy and quiet", last, total+1)
	}
	if got := left(); got != 0 {
		t.Fatalf("%d records of the member left", got)
	}
	if n, _ := s.client.HLen(ctx, buckets[0]).Result(); n != others+1 {
		t.Fatalf("%d records left in the bucket, want the others' %d and bob's", n, others)
	}
	if got := mentions(t, s, eraseMember); len(got) != 0 {
		t.Fatalf("after the erasure the member is still in:\n%s", strings.Join(got, "\n"))
	}
	if keys, _ := s.client.Keys(ctx, escapeGlob(s.cfg.Prefix)+":*:er:*").Result(); len(keys) != 0 {
		t.Fatalf("progress keys left: %v", keys)
	}
	if r := mustApply(t, s, incr("busy", "old-0", eraseMember, 5)); r.Duplicate || r.Score != 5 {
		t.Fatalf("an old id after the erasure: %+v, want applied anew", r)
	}
}
