package node

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// TestCountry: a member's country comes from the cache when it is there
// (no read), else from one read shared by every caller waiting for it;
// none is ""; a read a profile change overtakes is read again, so the
// answer is the new country; a failed read or an ended ctx is
// ErrUnavailable, never a guess.
func TestCountry(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := &fakeProfiles{m: map[string]rank.Profile{"ann": {Country: "DE"}, "bob": {Name: "Bob"}}}
	c, _ := newTestCache(f, 100)
	for m, want := range map[string]string{"ann": "DE", "bob": "", "cid": ""} {
		if got, err := c.Country(ctx, m); err != nil || got != want {
			t.Fatalf("Country(%s) = %q, %v; want %q", m, got, err, want)
		}
	}
	if n := f.nCalls(); n != 3 {
		t.Fatalf("%d reads for three members, want 3", n)
	}
	if got, err := c.Country(ctx, "ann"); err != nil || got != "DE" || f.nCalls() != 3 {
		t.Fatalf("cached: Country(ann) = %q, %v after %d reads; want DE and no read", got, err, f.nCalls())
	}

	// Callers of one uncached member wait for one read.
	f.mu.Lock()
	f.gate = make(chan struct{})
	f.mu.Unlock()
	f.set("dee", rank.Profile{Country: "JP"})
	var wg sync.WaitGroup
	got := make([]string, 5)
	for i := range got {
		wg.Go(func() { got[i], _ = c.Country(ctx, "dee") })
	}
	waitCalls(t, f, 4)
	// A change of dee's profile while the read is out: the read's answer
	// may predate it, so it is read again.
	f.set("dee", rank.Profile{Country: "FR"})
	c.Invalidate([]string{"dee"})
	close(f.gate)
	wg.Wait()
	for i, g := range got {
		if g != "FR" {
			t.Fatalf("caller %d: Country(dee) = %q, want FR (the profile after the change)", i, g)
		}
	}
	if n := f.nCalls(); n != 5 {
		t.Fatalf("%d reads, want 5 (one for all callers, one after the change)", n)
	}

	f.mu.Lock()
	f.gate, f.err = nil, errors.New("redis down")
	f.mu.Unlock()
	if _, err := c.Country(ctx, "eve"); !errors.Is(err, rank.ErrUnavailable) {
		t.Fatalf("Country with a failing read: %v, want ErrUnavailable", err)
	}
	f.mu.Lock()
	f.gate, f.err = make(chan struct{}), nil
	f.mu.Unlock()
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.Country(short, "fay"); !errors.Is(err, rank.ErrUnavailable) {
		t.Fatalf("Country past its ctx: %v, want ErrUnavailable", err)
	}
	close(f.gate)
}

func waitCalls(t *testing.T, f *fakeProfiles, n int) {
	t.Helper()
	testenv.Until(t, 5*time.Second, "the profile reads", func() bool { return f.nCalls() >= n })
}
