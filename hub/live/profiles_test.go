package live

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/wsgateway/wsgateway/rank"
)

// mapDecorator decorates from a map the test changes.
type mapDecorator struct {
	mu    sync.Mutex
	names map[string]string
}

func (d *mapDecorator) Decorate(_ context.Context, lists ...[]rank.Entry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, es := range lists {
		for i := range es {
			if n, ok := d.names[es[i].Member]; ok {
				es[i].Name, es[i].Country = n, "FR"
			}
		}
	}
}

func (d *mapDecorator) set(member, name string) {
	d.mu.Lock()
	d.names[member] = name
	d.mu.Unlock()
}

// TestProfilesChanged: frames carry the decorator's fields; a profile
// change re-reads and re-sends exactly the frames that show the member
// (top for m001, the view for m050), and nothing for a member no frame
// shows.
func TestProfilesChanged(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		d := &mapDecorator{names: map[string]string{member(1): "One", member(50): "Fifty"}}
		h, r := watched(t, Config{Refresh: -1, Decorator: d})
		r.drain()
		if e := r.top["g"].Entries[1]; e.Name != "One" || e.Country != "FR" {
			t.Fatalf("top entry %+v, want the decorator's name and country", e)
		}
		if e := r.view["g"].Around[2]; e.Member != member(50) || e.Name != "Fifty" {
			t.Fatalf("view entry %+v, want m050 as Fifty", e)
		}

		step := func(member, name string, wantTop, wantRanks int64) {
			t.Helper()
			top0, ranks0 := h.reads()
			d.set(member, name)
			h.e.ProfilesChanged([]string{member})
			h.settle()
			r.drain()
			top, ranks := h.reads()
			if top-top0 != wantTop || ranks-ranks0 != wantRanks {
				t.Fatalf("%s renamed: %d top and %d view reads, want %d and %d", member, top-top0, ranks-ranks0, wantTop, wantRanks)
			}
		}
		step(member(1), "Uno", 1, 0)
		if e := r.top["g"].Entries[1]; e.Name != "Uno" {
			t.Fatalf("after the rename the top frame shows %+v", e)
		}
		step(member(50), "Cinquante", 0, 1)
		if e := r.view["g"].Around[2]; e.Name != "Cinquante" {
			t.Fatalf("after the rename the view shows %+v", e)
		}
		step(member(70), "Seventy", 0, 0) // on no frame of this node
	})
}
