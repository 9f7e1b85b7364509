package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// buildRig is two nodes (two Stores, one key prefix) on one Redis with one
// injected store clock, and two sources holding data in group "bg"; u is
// the union to build over them.
type buildRig struct {
	a, b *Store
	u    rank.Board
	mu   sync.Mutex
	clk  time.Time
}

func newBuildRig(t *testing.T, keeperB time.Duration) *buildRig {
	t.Helper()
	srv := testenv.StartRedis(t)
	r := &buildRig{clk: time.Now().UTC()}
	prefix := fmt.Sprintf("t%d", prefixes.Add(1))
	r.a = newStore(t, srv, Config{Prefix: prefix, Now: r.now, HotInterval: -1, Timeout: 5 * time.Second, Logger: tlog(t)})
	r.b = newStore(t, srv, Config{Prefix: prefix, Now: r.now, HotInterval: keeperB, Timeout: 5 * time.Second, Logger: tlog(t)})
	grp := func(id string) rank.Board {
		b := rank.DefaultBoard(id)
		b.Group = "bg"
		return b
	}
	mustPut(t, r.a, grp("ba"))
	mustPut(t, r.a, grp("bb"))
	fillPeriod(t, r.a, "ba", 0, 20_000)
	fillPeriod(t, r.a, "bb", 0, 10_000)
	r.u = grp("bu")
	r.u.Source = rank.UnionOf([]string{"ba", "bb"}, []int64{2, 3})
	return r
}

func (r *buildRig) now() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clk
}

func (r *buildRig) advance(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clk = r.clk.Add(d)
}

// put runs a PUT of the union on s in the background.
func (r *buildRig) put(s *Store) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := s.PutBoard(context.Background(), r.u)
		ch <- err
	}()
	return ch
}

// events applies k events on both sources through s in the background,
// members old and new.
func (r *buildRig) events(t *testing.T, s *Store, tag string, k int) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range k {
			e := incr([]string{"ba", "bb"}[i%2], tag+strconv.Itoa(i), "m"+strconv.Itoa(rand.IntN(25_000)), int64(rand.IntN(50)-10))
			if _, err := rank.ApplyWait(context.Background(), s, e); err != nil {
				t.Errorf("event %d: %v", i, err)
				return
			}
		}
	})
	return &wg
}

// exact checks the union against its recomputation from the sources and
// that the building mark is gone.
func (r *buildRig) exact(t *testing.T) {
	t.Helper()
	if v, _ := r.a.client.HExists(context.Background(), r.a.keyIn("bg", "bu", "cfg"), "b").Result(); v {
		t.Fatal("the building mark is still set")
	}
	sameSums(t, "union", scores(t, r.b, "bu", ""), sums(t, r.b, "", []string{"ba", "bb"}, []int64{2, 3}))
}

// wait is the result of a background PUT, failing the test if it takes
// longer than within.
func wait(t *testing.T, what string, ch <-chan error, within time.Duration) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(within):
		t.Fatalf("%s: no answer in %s", what, within)
		return nil
	}
}

// replies records what build.lua answered s, by status. With stallAt > 0,
// s's builder stops inside its stallAt-th call that did members, holding
// its lease as a builder that died would, until release is called (a
// frozen process, then woken: it must then do no harm).
type replies struct {
	mu      sync.Mutex
	status  map[string]int
	workers map[string]bool // tokens that recomputed members
	resumes [][]any
	steps   int

	stallAt int
	stalled chan struct{}
	rel     chan struct{}
	once    sync.Once
}

func listen(s *Store, stallAt int) *replies {
	r := &replies{status: map[string]int{}, workers: map[string]bool{}, stallAt: stallAt,
		stalled: make(chan struct{}), rel: make(chan struct{})}
	h := func(token string, a []any) {
		r.mu.Lock()
		st, _ := a[0].(string)
		r.status[st]++
		stall := false
		if st == "step" && num(a[1]) > 0 {
			r.workers[token] = true
			r.steps++
			stall = r.steps == r.stallAt
		}
		if st == "go" {
			r.resumes = append(r.resumes, a)
		}
		r.mu.Unlock()
		if stall {
			close(r.stalled)
			<-r.rel
		}
	}
	s.buildHook.Store(&h)
	return r
}

func (r *replies) release() { r.once.Do(func() { close(r.rel) }) }

func (r *replies) count(st string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status[st]
}

// A builder that stops mid-build (its node froze or died) keeps its lease
// until the lease lapses on the store clock; a PUT on another node waits
// meanwhile, then takes over from the saved position, with events racing
// it, and the union equals its recomputation. The frozen builder, woken,
// answers 200 without building again.
func TestDerivedBuildTakeover(t *testing.T) {
	t.Parallel()
	r := newBuildRig(t, -1)
	ra := listen(r.a, 30)
	defer ra.release()
	putA := r.put(r.a)
	select {
	case <-ra.stalled:
	case err := <-putA:
		t.Fatalf("the PUT on node A ended before its build stalled: %v", err)
	}
	rb := listen(r.b, 0)
	putB := r.put(r.b)
	testenv.Until(t, 20*time.Second, "node B to find the lease held", func() bool { return rb.count("busy") > 0 })
	select {
	case err := <-putB:
		t.Fatalf("node B's PUT answered (%v) while A's lease ran", err)
	default:
	}
	rb.mu.Lock()
	early := len(rb.workers)
	rb.mu.Unlock()
	if early > 0 {
		t.Fatal("node B recomputed members while A held the lease")
	}
	evs := r.events(t, r.b, "e", 300)
	r.advance(buildLease + time.Second)
	if err := wait(t, "node B's PUT", putB, 2*time.Minute); err != nil {
		t.Fatalf("node B's PUT: %v", err)
	}
	evs.Wait()
	rb.mu.Lock()
	resumed := false
	for _, a := range rb.resumes {
		if num(a[1]) > 0 || fmt.Sprint(a[2]) != "0" {
			resumed = true
		}
	}
	rb.mu.Unlock()
	if !resumed {
		t.Fatal("node B started the build again instead of going on from A's saved position")
	}
	ra.release()
	if err := wait(t, "node A's PUT", putA, time.Minute); err != nil {
		t.Fatalf("node A's PUT, woken after B built: %v", err)
	}
	r.exact(t)
}

// A builder that stops mid-build is taken over by the keeper of a node
// that has the board cached as building (it read it), without another PUT.
func TestDerivedBuildKeeper(t *testing.T) {
	t.Parallel()
	r := newBuildRig(t, 20*time.Millisecond)
	ra := listen(r.a, 30)
	defer ra.release()
	putA := r.put(r.a)
	select {
	case <-ra.stalled:
	case err := <-putA:
		t.Fatalf("the PUT on node A ended before its build stalled: %v", err)
	}
	rb := listen(r.b, 0)
	if _, err := r.b.Top(context.Background(), "bu", "", 0, 10); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 20*time.Second, "node B's keeper to find the lease held", func() bool { return rb.count("busy") > 0 })
	evs := r.events(t, r.b, "k", 300)
	r.advance(buildLease + time.Second)
	testenv.Eventually(t, 2*time.Minute, "node B's keeper to finish the build", func() error {
		v, err := r.b.client.HExists(context.Background(), r.b.keyIn("bg", "bu", "cfg"), "b").Result()
		if err != nil || v {
			return fmt.Errorf("building mark %v, %v", v, err)
		}
		return nil
	})
	evs.Wait()
	ra.release()
	if err := wait(t, "node A's PUT", putA, time.Minute); err != nil {
		t.Fatalf("node A's PUT, woken after B's keeper built: %v", err)
	}
	r.exact(t)
}

// Two PUTs of a new derived board at once, on two nodes: one builds, the
// other waits for it, and both answer 200 once the board is exact. The
// second PUT writes the config again while the first builds (the first
// builder then plans again and goes on from its saved position).
func TestDerivedBuildConcurrentPuts(t *testing.T) {
	t.Parallel()
	r := newBuildRig(t, -1)
	ra, rb := listen(r.a, 1), listen(r.b, 0)
	defer ra.release()
	putA := r.put(r.a)
	select {
	case <-ra.stalled:
	case err := <-putA:
		t.Fatalf("the PUT on node A ended before its build began: %v", err)
	}
	putB := r.put(r.b)
	testenv.Until(t, 20*time.Second, "node B to find the lease held", func() bool { return rb.count("busy") > 0 })
	ra.release()
	evs := r.events(t, r.a, "c", 300)
	errA := wait(t, "node A's PUT", putA, 2*time.Minute)
	errB := wait(t, "node B's PUT", putB, 2*time.Minute)
	evs.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("PUTs: %v, %v", errA, errB)
	}
	// The store clock stood still, so no lease lapsed: one token did every
	// member.
	ra.mu.Lock()
	rb.mu.Lock()
	workers := len(ra.workers) + len(rb.workers)
	resumes := len(ra.resumes)
	t.Logf("node A: %v, node B: %v", ra.status, rb.status)
	rb.mu.Unlock()
	ra.mu.Unlock()
	if workers != 1 {
		t.Fatalf("%d builders recomputed members, want 1", workers)
	}
	if resumes < 2 {
		t.Fatalf("node A resumed %d times, want a second plan after B's PUT changed the config", resumes)
	}
	r.exact(t)
}

// build.lua stops at its work budget: a 7-day window's members cost at
// least 7 cells' reads and 7 view writes each, so a small budget does a few
// of them a call, and calls resumed where the last stopped leave every
// member exact (here after their views were overwritten with garbage).
func TestDerivedBuildBudget(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	clk := time.Now().UTC()
	s := newStore(t, srv, Config{Now: func() time.Time { return clk }, HotInterval: -1, Logger: tlog(t)})
	ctx := context.Background()
	src := rank.DefaultBoard("wd")
	src.Group, src.Reset, src.Retain = "wg", rank.Daily, 6
	mustPut(t, s, src)
	cur := rank.PeriodAt(src, clk)
	p := cur
	for range 7 {
		fillPeriod(t, s, "wd", p.Index, 300)
		p = p.Previous(src)
	}
	w := rank.DefaultBoard("ww")
	w.Group = "wg"
	w.Source = rank.WindowOf("wd", 7)
	mustPut(t, s, w)
	want := map[string]int64{}
	p = cur
	for range 7 {
		for m, v := range scores(t, s, "wd", rank.PeriodSel(strconv.FormatInt(p.Index, 10))) {
			want[m] += v
		}
		p = p.Previous(src)
	}
	sameSums(t, "window built by the PUT", scores(t, s, "ww", ""), want)

	// Garbage in the current view, and the board marked as building again.
	g, _ := s.groupOfBoard(ctx, "ww")
	zk := s.keyIn(g, "ww", "z:"+strconv.FormatInt(cur.Index, 10))
	var members []string
	for i := range 300 {
		m := "m" + strconv.Itoa(i)
		members = append(members, m)
		if err := s.client.ZAdd(ctx, zk, redis.Z{Score: -1, Member: m}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.client.HSet(ctx, s.keyIn(g, "ww", "cfg"), "b", "1").Err(); err != nil {
		t.Fatal(err)
	}
	plan, err := s.planBuild(ctx, "ww")
	if err != nil {
		t.Fatal(err)
	}
	const budget, minCost = 200, 14 + 7*6 // 7 cells with an entry (HGET, ZSCORE), 7 view writes
	plan.work = budget
	calls := 0
	for rest := members; len(rest) > 0; calls++ {
		a, err := s.buildCall(ctx, &plan, "build", "tok", "", rest)
		if err != nil {
			t.Fatal(err)
		}
		n := int(num(a[1]))
		if n < 1 || n > budget/minCost+1 {
			t.Fatalf("a call with budget %d did %d members (of %d given), want 1..%d", budget, n, len(rest), budget/minCost+1)
		}
		rest = rest[n:]
	}
	t.Logf("%d members in %d calls of budget %d", len(members), calls, budget)
	a, err := s.buildCall(ctx, &plan, "finish", "tok", "", nil)
	if err != nil || a[0] != "done" {
		t.Fatalf("finish: %v, %v", a, err)
	}
	sameSums(t, "window rebuilt in small calls", scores(t, s, "ww", ""), want)
}

// A PUT that died between storing a new union's config and registering it
// with its sources leaves a board marked as building that no source
// maintains: the keeper that takes the build over registers it first, so
// the union stays exact after later events.
func TestDerivedBuildKeeperLinks(t *testing.T) {
	t.Parallel()
	r := newBuildRig(t, 20*time.Millisecond)
	ctx := context.Background()
	mustPut(t, r.a, r.u)
	// As the dead PUT left it: not listed by its sources, marked building.
	if err := r.a.link(ctx, r.u, "remove"); err != nil {
		t.Fatal(err)
	}
	if err := r.a.client.HSet(ctx, r.a.keyIn("bg", "bu", "cfg"), "b", "1").Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ba", "bb"} {
		c, err := r.a.loadBoard(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.deps) != 0 {
			t.Fatalf("%s still lists %v", id, c.deps)
		}
	}
	if _, err := r.b.Top(ctx, "bu", "", 0, 10); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "node B's keeper to finish the build", func() error {
		v, err := r.b.client.HExists(ctx, r.b.keyIn("bg", "bu", "cfg"), "b").Result()
		if err != nil || v {
			return fmt.Errorf("building mark %v, %v", v, err)
		}
		return nil
	})
	r.events(t, r.b, "l", 200).Wait()
	r.exact(t)
}
