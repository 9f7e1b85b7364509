package live

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// ids is n member ids from m<from>.
func ids(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = member(from + i)
	}
	return out
}

// TestListOwnerBound: one member's members subscriptions on a board may
// list at most MaxListIDs distinct ids on the node, across its
// connections. One past it is a bad request that changes nothing; a
// subscription that replaces its own list counts what it frees; other
// members, and subscriptions without an owner, are not held to it.
func TestListOwnerBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1, MaxListIDs: 150}, nil)
		seedBoard(h)
		sub := func(r *reader, owner string, from, n int) error {
			return h.e.SubscribeSpec(context.Background(), r.o, Spec{Board: "g", Members: ids(from, n), Owner: owner})
		}
		a, b, c := newReader(t), newReader(t), newReader(t)
		if err := sub(a, "mallory", 0, 100); err != nil {
			t.Fatal(err)
		}
		if err := sub(b, "mallory", 50, 100); err != nil { // 50 new: 150 in all
			t.Fatal(err)
		}
		err := sub(c, "mallory", 100, 51) // m150 is one more
		if !errors.Is(err, rank.ErrBadRequest) || proto.CodeOf(err) != proto.CodeBadRequest {
			t.Fatalf("a list past the member's bound: %v, want bad_request", err)
		}
		if c.o.keys() != 0 || kindOf[*lists](h.e.boards["g"]).watching(member(150)) != 0 {
			t.Fatal("the refused subscription left a slot or an id behind")
		}
		// b replaces its list: m100..m149 are b's alone, so they free room.
		if err := sub(b, "mallory", 0, 100); err != nil {
			t.Fatal(err)
		}
		if err := sub(c, "mallory", 100, 50); err != nil {
			t.Fatalf("after b's replacement: %v", err)
		}
		if err := sub(newReader(t), "alice", 0, 100); err != nil {
			t.Fatalf("another member: %v", err)
		}
		for i := range 3 {
			if err := sub(newReader(t), "", 200+100*i, 100); err != nil {
				t.Fatalf("no owner: %v", err)
			}
		}
		// Leaving frees the ids.
		h.e.Drop(a.o)
		h.e.Drop(b.o)
		if err := sub(newReader(t), "mallory", 0, 100); err != nil {
			t.Fatalf("after its other connections left: %v", err)
		}
	})
}

// TestListNodeBound: the node's lists hold at most ListBudget ×
// maxListPeriods ids; a list with an id past it is refused, rate_limited
// with a retry (BusyError), and leaves nothing; lists of ids already held
// still pass.
func TestListNodeBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const budget = 10
		h := newHarness(t, Config{Refresh: -1, ListBudget: budget}, nil)
		seedBoard(h)
		full := budget * maxListPeriods
		for from := 0; from < full; from += 20 {
			if err := h.e.SubscribeSpec(context.Background(), newReader(t).o, Spec{Board: "g", Members: ids(from, 20)}); err != nil {
				t.Fatal(err)
			}
		}
		r := newReader(t)
		err := h.e.SubscribeSpec(context.Background(), r.o, Spec{Board: "g", Members: ids(full-5, 6)})
		var busy *BusyError
		if !errors.As(err, &busy) || busy.RetryAfter <= 0 || proto.CodeOf(err) != proto.CodeRateLimited {
			t.Fatalf("a list past the node's bound: %v, want rate_limited with a retry", err)
		}
		if r.o.keys() != 0 || h.e.listIDs != full {
			t.Fatalf("the refused list left %d slots, the node holds %d ids (want %d)", r.o.keys(), h.e.listIDs, full)
		}
		if err := h.e.SubscribeSpec(context.Background(), r.o, Spec{Board: "g", Members: ids(full-6, 6)}); err != nil {
			t.Fatalf("a list of ids already held: %v", err)
		}
	})
}

// TestListBudget: however large the union of listed ids, the node's lists
// read ListBudget ids per interval on average; beyond it the members
// frames come every few intervals instead of every one, and still follow
// the store.
func TestListBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		budget int
		want   int64 // ids read per interval, at most
	}{
		{50, 50 + 150/10}, // 150 ids every 3 intervals (and the first read's credit)
		{-1, 150},         // unbounded: all 150 every interval
	} {
		t.Run(fmt.Sprint(tc.budget), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Config{Refresh: -1, ListBudget: tc.budget}, nil)
				seedBoard(h)
				rs := make([]*reader, 2)
				for i := range rs {
					rs[i] = newReader(t)
					h.subscribeSpec(rs[i], Spec{Board: "g", Members: ids(50*i, 100)}) // m050..m149: half of them on the board
				}
				_, ranks0 := h.reads()
				ids0 := h.st.rankIDs.Load()
				const intervals = 40
				for i := range intervals {
					h.apply("g", member(i%100), 7, true) // every interval a listed member moves
					time.Sleep(testInterval)
				}
				h.settle()
				read := (h.st.rankIDs.Load() - ids0) / intervals
				_, ranks := h.reads()
				t.Logf("budget %d: %d ids read per interval, %d Ranks calls in %d intervals", tc.budget, read, ranks-ranks0, intervals)
				if read > tc.want || (tc.budget < 0 && read < tc.want*9/10) {
					t.Errorf("%d ids read per interval, want at most %d", read, tc.want)
				}
				time.Sleep(10 * testInterval) // a slowed list's next read
				synctest.Wait()
				for i, r := range rs {
					r.drain()
					want, err := h.st.Ranks(context.Background(), "g", "", ids(50*i, 100), rank.BoardRanks)
					if err != nil {
						t.Fatal(err)
					}
					got := map[string]string{}
					for _, e := range r.members["g"].Entries {
						got[e.Member] = fmt.Sprint(e.Rank, e.Score)
					}
					for _, m := range want.Members {
						if m.Found && got[m.Member] != fmt.Sprint(m.Rank, m.Score) {
							t.Fatalf("list %d: %s is %q in its last frame, %d %d in the store", i, m.Member, got[m.Member], m.Rank, m.Score)
						}
					}
				}
			})
		})
	}
}

// TestListCreditRefill: the list credit refills by the budget per interval
// elapsed, a debt included, up to one budget; the first refill fills it.
func TestListCreditRefill(t *testing.T) {
	t.Parallel()
	e := &Engine{cfg: Config{ListBudget: 100, Interval: 100 * time.Millisecond}}
	t0 := time.Unix(1e9, 0)
	e.refill(t0)
	if e.listCredit != 100 {
		t.Fatalf("first refill: %d, want 100", e.listCredit)
	}
	for _, tc := range []struct {
		credit int
		after  time.Duration
		want   int
	}{
		{-800, time.Second, 100},             // ten intervals repay a debt of eight
		{-800, 300 * time.Millisecond, -500}, // three repay three
		{-800, 50 * time.Millisecond, -750},
		{40, time.Hour, 100},
	} {
		e.listCredit, e.creditAt = tc.credit, t0
		e.refill(t0.Add(tc.after))
		if e.listCredit != tc.want {
			t.Errorf("credit %d after %v: %d, want %d", tc.credit, tc.after, e.listCredit, tc.want)
		}
	}
}
