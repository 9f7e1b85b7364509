package node

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// fakeProfiles is a profile store that counts batched reads and can hold
// them until released (gate), for the cache's unit tests.
type fakeProfiles struct {
	mu    sync.Mutex
	m     map[string]rank.Profile
	calls [][]string
	gate  chan struct{} // nil: answer at once
	err   error
}

func (f *fakeProfiles) Profiles(ctx context.Context, members []string) (map[string]rank.Profile, error) {
	f.mu.Lock()
	f.calls = append(f.calls, slices.Clone(members))
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]rank.Profile{}
	for _, m := range members {
		if p, ok := f.m[m]; ok {
			out[m] = p
		}
	}
	return out, f.err
}

func (f *fakeProfiles) set(m string, p rank.Profile) {
	f.mu.Lock()
	f.m[m] = p
	f.mu.Unlock()
}

func (f *fakeProfiles) nCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

type lateRecorder struct {
	mu sync.Mutex
	ms []string
}

func (l *lateRecorder) add(ms []string) { l.mu.Lock(); l.ms = append(l.ms, ms...); l.mu.Unlock() }
func (l *lateRecorder) get() []string   { l.mu.Lock(); defer l.mu.Unlock(); return slices.Clone(l.ms) }

func newTestCache(f *fakeProfiles, max int) (*profileCache, *lateRecorder) {
	l := &lateRecorder{}
	return newProfileCache(f, max, 5*time.Second, l.add, slog.New(slog.DiscardHandler)), l
}

func entriesOf(members ...string) []rank.Entry {
	es := make([]rank.Entry, len(members))
	for i, m := range members {
		es[i] = rank.Entry{Rank: int64(i + 1), Member: m, Name: m + "-token"}
	}
	return es
}

// TestCacheBatchesAndHits: the misses of one call (over several lists, with
// repeats) are one read; members without a profile keep their token name
// and are cached too; a second call reads nothing.
func TestCacheBatchesAndHits(t *testing.T) {
	t.Parallel()
	f := &fakeProfiles{m: map[string]rank.Profile{}}
	for i := 0; i < 100; i += 2 {
		f.m[fmt.Sprint("m", i)] = rank.Profile{Name: fmt.Sprint("Name ", i), Country: "FR"}
	}
	c, late := newTestCache(f, 1000)
	var members []string
	for i := range 100 {
		members = append(members, fmt.Sprint("m", i))
	}
	a, b := entriesOf(members...), entriesOf(members[:10]...)
	c.Decorate(t.Context(), a, b)
	if n := f.nCalls(); n != 1 || len(f.calls[0]) != 100 {
		t.Fatalf("%d reads (first of %d members), want one of 100", n, len(f.calls[0]))
	}
	for _, es := range [][]rank.Entry{a, b} {
		for i, e := range es {
			want := rank.Entry{Rank: int64(i + 1), Member: members[i], Name: members[i] + "-token"}
			if i%2 == 0 {
				want.Name, want.Country = fmt.Sprint("Name ", i), "FR"
			}
			if e != want {
				t.Fatalf("entry %d = %+v, want %+v", i, e, want)
			}
		}
	}
	again := entriesOf(members...)
	c.Decorate(t.Context(), again)
	if n := f.nCalls(); n != 1 {
		t.Fatalf("a warm cache read the store again (%d reads)", n)
	}
	if !slices.Equal(again, a) {
		t.Fatal("warm decoration differs from the first")
	}
	if len(late.get()) != 0 {
		t.Fatalf("late members %v with nobody giving up", late.get())
	}
}

// TestCacheBounded: the cache holds at most max members, dropping the least
// recently used.
func TestCacheBounded(t *testing.T) {
	t.Parallel()
	f := &fakeProfiles{m: map[string]rank.Profile{}}
	c, _ := newTestCache(f, 3)
	c.Decorate(t.Context(), entriesOf("a", "b", "c"))
	c.Decorate(t.Context(), entriesOf("a"))      // a is now the most recent
	c.Decorate(t.Context(), entriesOf("d"))      // evicts b
	c.Decorate(t.Context(), entriesOf("a", "c")) // both still cached
	if n := f.nCalls(); n != 2 {
		t.Fatalf("%d reads, want 2", n)
	}
	c.Decorate(t.Context(), entriesOf("b"))
	if n := f.nCalls(); n != 3 || c.len() != 3 {
		t.Fatalf("%d reads and %d cached, want 3 and 3", n, c.len())
	}
}

// TestCacheInvalidate: a change drops the cached copy; an invalidation that
// overtakes a fetch in flight keeps that fetch's (possibly old) answer out
// of the cache; Clear drops everything.
func TestCacheInvalidate(t *testing.T) {
	t.Parallel()
	f := &fakeProfiles{m: map[string]rank.Profile{"ann": {Name: "Ann"}}}
	c, _ := newTestCache(f, 100)
	es := entriesOf("ann")
	c.Decorate(t.Context(), es)
	f.set("ann", rank.Profile{Name: "Annie"})
	c.Invalidate([]string{"ann"})
	es = entriesOf("ann")
	c.Decorate(t.Context(), es)
	if es[0].Name != "Annie" {
		t.Fatalf("after invalidation: %q, want Annie", es[0].Name)
	}

	// A fetch in flight, overtaken by a change.
	f.mu.Lock()
	f.gate = make(chan struct{})
	f.mu.Unlock()
	c.Invalidate([]string{"ann"})
	done := make(chan []rank.Entry)
	go func() { es := entriesOf("ann"); c.Decorate(context.Background(), es); done <- es }()
	testenv.Until(t, 5*time.Second, "the fetch to start", func() bool { return f.nCalls() == 3 })
	c.Invalidate([]string{"ann"}) // the fetch may have read before this change
	close(f.gate)
	<-done
	if c.len() != 0 {
		t.Fatalf("a fetch overtaken by an invalidation was cached (%d members)", c.len())
	}
	c.Decorate(t.Context(), entriesOf("ann"))
	if c.len() != 1 || f.nCalls() != 4 {
		t.Fatalf("%d cached after %d reads, want 1 after 4", c.len(), f.nCalls())
	}
	c.Clear()
	if c.len() != 0 {
		t.Fatal("Clear left members cached")
	}
}

// TestCacheLate: a caller whose ctx ends before the read answers gets the
// stored names at once; the read's members are reported late when it
// finishes, and cached, so the re-read that follows is decorated. A failed
// read is reported too.
func TestCacheLate(t *testing.T) {
	t.Parallel()
	f := &fakeProfiles{m: map[string]rank.Profile{"ann": {Name: "Ann"}}, gate: make(chan struct{})}
	c, late := newTestCache(f, 100)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	es := entriesOf("ann", "bob")
	c.Decorate(ctx, es)
	if es[0].Name != "ann-token" {
		t.Fatalf("a caller that could not wait got %q, want the token name", es[0].Name)
	}
	close(f.gate)
	testenv.Until(t, 5*time.Second, "late members reported", func() bool { return len(late.get()) == 2 })
	if got := late.get(); !slices.Equal(got, []string{"ann", "bob"}) {
		t.Fatalf("late %v", got)
	}
	es = entriesOf("ann")
	c.Decorate(t.Context(), es)
	if es[0].Name != "Ann" || f.nCalls() != 1 {
		t.Fatalf("re-read: %q after %d reads, want Ann after 1", es[0].Name, f.nCalls())
	}

	f.mu.Lock()
	f.gate, f.err = nil, rank.ErrUnavailable
	f.mu.Unlock()
	es = entriesOf("cat")
	c.Decorate(t.Context(), es)
	if es[0].Name != "cat-token" || c.len() != 2 {
		t.Fatalf("failed read: %q, %d cached", es[0].Name, c.len())
	}
	testenv.Until(t, 5*time.Second, "failed members reported", func() bool { return slices.Contains(late.get(), "cat") })
}

// len is the number of members cached (for tests).
func (c *profileCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
