package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

func (h *harness) subscribeSpec(r *reader, sp Spec) {
	h.t.Helper()
	if err := h.e.SubscribeSpec(context.Background(), r.o, sp); err != nil {
		h.t.Fatal(err)
	}
	firstFrames(r.o)
}

// applyMeta applies a delta carrying m and tells the engine.
func (h *harness) applyMeta(board, member string, delta int64, m meta.Meta) {
	h.t.Helper()
	h.ids++
	r, err := rank.ApplyWait(context.Background(), h.st, rank.Event{
		Board: board, ID: fmt.Sprint("m", h.ids), Member: member, Op: rank.OpDelta, Amount: delta, Meta: m,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.e.Changed([]rank.Change{changeOf(r)})
}

// listed renders a members frame's entries as "member:rank:score".
func listed(f proto.Members) []string {
	out := make([]string, len(f.Entries))
	for i, e := range f.Entries {
		out[i] = fmt.Sprintf("%s:%d:%d", e.Member, e.Rank, e.Score)
	}
	return out
}

// TestMembersFrames (§11): a members subscription gets the listed members
// that have an entry, in rank order with their global ranks, at once and
// after every change of a listed member's rank (an overtake by a member
// not on the list included), score, name or meta; unsubscribe ends it.
func TestMembersFrames(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		d := &mapDecorator{names: map[string]string{}}
		h := newHarness(t, Config{Refresh: -1, Decorator: d}, nil)
		h.board(rank.DefaultBoard("g"))
		for i, m := range []string{"a", "b", "c", "d"} {
			h.apply("g", m, int64(100-10*i), true)
		}
		r := newReader(t)
		h.subscribeSpec(r, Spec{Board: "g", Members: []string{"c", "a", "nobody", "c"}})
		r.drain()
		f, ok := r.members["g"]
		if !ok || fmt.Sprint(listed(f)) != "[a:1:100 c:3:80]" || f.Total != 4 {
			t.Fatalf("first members frame %+v, want a then c, total 4", f)
		}
		if len(r.boards["g"]) != 1 {
			t.Fatalf("board frames %v, want one before the first members frame (R19)", r.boards["g"])
		}
		step := func(what, want string) {
			t.Helper()
			h.settle()
			r.drain()
			if got := fmt.Sprint(listed(r.members["g"])); got != want {
				t.Fatalf("after %s: %s, want %s", what, got, want)
			}
		}
		h.apply("g", "b", 5, true) // b is not listed: c keeps its rank
		step("a change above c that moves no rank", "[a:1:100 c:3:80]")
		h.apply("g", "z", 85, true) // z, not listed, overtakes c
		step("an overtake by a member not on the list", "[a:1:100 c:4:80]")
		h.apply("g", "c", 10, true)
		step("a listed member's own event", "[a:1:100 c:3:90]")

		n := r.n
		h.applyMeta("g", "a", 0, `{"replay":"https://r.example/1"}`)
		h.settle()
		r.drain()
		if r.n != n+1 || r.members["g"].Entries[0].Meta != `{"replay":"https://r.example/1"}` {
			t.Fatalf("after a meta change: %d frames, entries %+v; want one frame with a's meta", r.n-n, r.members["g"].Entries)
		}
		d.set("c", "Cee")
		h.e.ProfilesChanged([]string{"c"})
		h.settle()
		r.drain()
		if e := r.members["g"].Entries[1]; e.Name != "Cee" {
			t.Fatalf("after a rename: %+v, want c named Cee (R20)", e)
		}

		// A change that touches no listed member's rank, score, name or
		// meta (a new member at the bottom) sends no frame.
		n = r.n
		h.apply("g", "low", 1, true)
		h.settle()
		r.drain()
		if r.n != n {
			t.Fatalf("%d frames after a change that moved no listed member", r.n-n)
		}

		h.e.Unsubscribe(r.o, "g")
		n = r.n
		_, ranks := h.reads()
		h.apply("g", "z", 500, true)
		h.settle()
		r.drain()
		if _, after := h.reads(); r.n != n || after != ranks {
			t.Fatalf("after unsubscribe: %d frames, %d ranks reads; want none", r.n-n, after-ranks)
		}
		if st := h.e.Stats(); st.Boards != 0 {
			t.Fatalf("the board is still watched after the last unsubscribe: %+v", st)
		}
	})
}

// TestMembersReplace: a second members subscription of one board on one
// connection replaces the first; lists of several boards coexist; a list
// may come with top frames.
func TestMembersReplace(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		h.board(rank.DefaultBoard("g"))
		h.board(rank.DefaultBoard("k"))
		for i, m := range []string{"a", "b", "c"} {
			h.apply("g", m, int64(100-10*i), true)
			h.apply("k", m, int64(10+10*i), true)
		}
		r := newReader(t)
		h.subscribeSpec(r, Spec{Board: "g", Members: []string{"a"}})
		h.subscribeSpec(r, Spec{Board: "k", Members: []string{"a", "b"}})
		h.subscribeSpec(r, Spec{Board: "g", Members: []string{"b", "c"}})
		h.settle()
		r.drain()
		if g, k := fmt.Sprint(listed(r.members["g"])), fmt.Sprint(listed(r.members["k"])); g != "[b:2:90 c:3:80]" || k != "[b:2:20 a:3:10]" {
			t.Fatalf("g %s, k %s", g, k)
		}
		h.apply("g", "a", -95, true) // a falls below b and c: only a list without a would not care
		h.settle()
		r.drain()
		if g := fmt.Sprint(listed(r.members["g"])); g != "[b:1:90 c:2:80]" {
			t.Fatalf("g after a fell: %s, want the second list's members", g)
		}
		// A list with top frames: both kinds, each in its own slot.
		both := newReader(t)
		h.subscribeSpec(both, Spec{Board: "g", Top: 2, Members: []string{"c"}})
		both.drain()
		if top, m := both.top["g"], both.members["g"]; len(top.Entries) != 2 || fmt.Sprint(listed(m)) != "[c:2:80]" {
			t.Fatalf("top %+v and members %v, want both", top.Entries, listed(m))
		}
		h.e.Unsubscribe(both.o, "g")
		ls := kindOf[*lists](h.e.boards["g"])
		if len(ls.byKey) != 1 || ls.watching("a") != 0 || ls.watching("b") != 1 {
			t.Fatalf("g's lists after the replacement: %d lists, union %v", len(ls.byKey), ls.ids)
		}
	})
}

// TestMembersBadRequest: 0 or 101 ids, or an invalid id, are refused and
// change nothing.
func TestMembersBadRequest(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		h.board(rank.DefaultBoard("g"))
		h.apply("g", "a", 1, true)
		r := newReader(t)
		h.subscribeSpec(r, Spec{Board: "g", Members: []string{"a"}})
		ids := make([]string, MaxMembers+1)
		for i := range ids {
			ids[i] = fmt.Sprint("m", i)
		}
		if err := h.e.SubscribeSpec(context.Background(), r.o, Spec{Board: "g", Members: ids}); !errors.Is(err, rank.ErrBadRequest) {
			t.Fatalf("101 ids: %v, want bad_request", err)
		}
		if err := h.e.SubscribeSpec(context.Background(), r.o, Spec{Board: "g", Members: []string{"a", "no spaces"}}); !errors.Is(err, rank.ErrInvalidMember) {
			t.Fatalf("an invalid id: %v, want invalid_member", err)
		}
		ls := kindOf[*lists](h.e.boards["g"])
		if len(ls.byKey) != 1 || ls.watching("a") != 1 {
			t.Fatalf("a refused subscribe changed the lists: %v", ls.ids)
		}
	})
}

// TestMembersOvertakeBound (§11, R26): a listed member overtaken by members
// not on the list is shown so within one interval + 50 ms, at every phase
// of the subscriber's frame schedule, as R7 bounds top frames.
func TestMembersOvertakeBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		h.board(rank.DefaultBoard("g"))
		h.apply("g", "me", 1000, true)
		type frame struct {
			at   time.Time
			rank int64
		}
		var mu sync.Mutex
		var frames []frame
		r := newReader(t)
		h.subscribeSpec(r, Spec{Board: "g", Members: []string{"me"}})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() {
			writeLoop(ctx, r.o, func() time.Duration {
				n := r.n
				retry := r.drain()
				if f, ok := r.members["g"]; ok && r.n != n && len(f.Entries) == 1 {
					mu.Lock()
					frames = append(frames, frame{time.Now(), f.Entries[0].Rank})
					mu.Unlock()
				}
				return retry
			})
		})
		h.settle()
		// Change i puts a member not on the list above "me" (rank i+2
		// after it). Pairs as in TestR20R21BoundAfterNotice: the first after
		// a quiet spell, the second 15, 30, … 150 ms later.
		const changes = 20
		done := make([]time.Time, changes)
		for i := range changes {
			if i%2 == 0 {
				time.Sleep(2 * testInterval)
			} else {
				time.Sleep(time.Duration(15*(i/2+1)) * time.Millisecond)
			}
			h.apply("g", fmt.Sprint("x", i), int64(1001+i), true)
			done[i] = time.Now()
		}
		h.settle()
		cancel()
		wg.Wait()

		bound := testInterval + 50*time.Millisecond
		mu.Lock()
		defer mu.Unlock()
		for i, at := range done {
			var shown time.Time
			for _, f := range frames {
				if !f.at.Before(at) && f.rank >= int64(i+2) {
					shown = f.at
					break
				}
			}
			if shown.IsZero() {
				t.Fatalf("change %d (rank %d) never shown", i, i+2)
			}
			if d := shown.Sub(at); d > bound {
				t.Errorf("change %d shown after %s, bound %s", i, d, bound)
			}
		}
		for i := 1; i < len(frames); i++ {
			if d := frames[i].at.Sub(frames[i-1].at); d < testInterval {
				t.Errorf("frames %d and %d %s apart, under the interval", i-1, i, d)
			}
		}
	})
}

// TestMembersOneReadForAll: whatever the number of subscribers and lists,
// a change costs one Ranks read of the union per interval, and one
// encoding per distinct list.
func TestMembersOneReadForAll(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		h.board(rank.DefaultBoard("g"))
		for i := range 200 {
			h.apply("g", fmt.Sprint("m", i), int64(i+1), true)
		}
		const subs = 60
		readers := make([]*reader, subs)
		for i := range readers {
			readers[i] = newReader(t)
			ids := make([]string, 10)
			for k := range ids {
				ids[k] = fmt.Sprint("m", (i%20)*10+k) // 20 distinct lists, 3 subscribers each
			}
			h.subscribeSpec(readers[i], Spec{Board: "g", Members: ids})
		}
		h.settle()
		_, ranks := h.reads()
		enc := h.e.Stats().Encoded
		h.apply("g", "top", 10_000, true) // overtakes every listed member
		h.settle()
		if _, after := h.reads(); after-ranks != 1 {
			t.Fatalf("%d Ranks reads for one change and %d subscribers, want 1", after-ranks, subs)
		}
		if n := h.e.Stats().Encoded - enc; n != 20 {
			t.Fatalf("%d frames encoded for 20 distinct lists", n)
		}
		for i, r := range readers {
			r.drain()
			if f := r.members["g"]; len(f.Entries) != 10 || f.Entries[9].Rank != int64(201-(i%20)*10) {
				t.Fatalf("subscriber %d: %v", i, listed(f))
			}
		}
	})
}

// TestSubscribeMeta (§11): top and view frames carry entries' meta only
// for a subscription that said "meta": true.
func TestSubscribeMeta(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		h.board(rank.DefaultBoard("g"))
		const m meta.Meta = `{"replay":"https://r.example/a"}`
		h.applyMeta("g", "a", 100, m)
		h.applyMeta("g", "b", 90, "")
		plain, withMeta := newReader(t), newReader(t)
		h.subscribeSpec(plain, Spec{Board: "g", Top: 5, Member: "b", Around: 1})
		h.subscribeSpec(withMeta, Spec{Board: "g", Top: 5, Member: "b", Around: 1, Meta: true})
		check := func(when string) {
			t.Helper()
			h.settle()
			plain.drain()
			withMeta.drain()
			if got := plain.top["g"].Entries[0].Meta; got != "" {
				t.Errorf("%s: top frame without meta: true carries %s", when, got)
			}
			if got := plain.view["g"].Around[0].Meta; got != "" {
				t.Errorf("%s: view frame without meta: true carries %s", when, got)
			}
			if got := withMeta.top["g"].Entries[0].Meta; got != m {
				t.Errorf("%s: top frame with meta: true carries %q, want %s", when, got, m)
			}
			if got := withMeta.view["g"].Around[0].Meta; got != m {
				t.Errorf("%s: view frame with meta: true carries %q, want %s", when, got, m)
			}
		}
		check("first frames")
		h.applyMeta("g", "c", 85, "") // enters b's window and the top
		check("after a change")
		if got := withMeta.view["g"].Around; len(got) != 3 || got[2].Member != "c" {
			t.Fatalf("meta view frame %+v", got)
		}
	})
}

// TestMembersEncoding: a members frame put together from entries encoded
// once per read is the exact JSON of its proto.Members, names, meta that
// needs escaping and hot boards' decimals included.
func TestMembersEncoding(t *testing.T) {
	e, err := New(Config{Store: &countingStore{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*listResult{
		{entries: []rank.Entry{}, total: 0, frame: frame{seq: 1}},
		{entries: []rank.Entry{
			{Rank: 1, Member: "a", Score: 120, Name: "<Ann & \"co\">", Avatar: "https://a.example/x.png", Country: "FR", Meta: `{"replay":"https://r.example/a?x=1&y=<2>"}`},
			{Rank: 7, Member: "b", Score: -5},
		}, total: 12, frame: frame{seq: 99}, decimals: 3},
	} {
		got := e.appendMembers("g.1", r, 1234, func(n int) []byte {
			b, _ := json.Marshal(proto.Entry(r.entries[n]))
			return b
		})
		want, _ := json.Marshal(proto.Members{
			Type: proto.TypeMembers, Board: "g.1", Entries: proto.EntriesOf(r.entries),
			Total: r.total, Seq: r.seq, TS: 1234,
		})
		if want = proto.Decimalize(want, r.decimals); string(got) != string(want) {
			t.Errorf("appended\n %s\nencoded\n %s", got, want)
		}
	}
}

// TestMembersChunkedUnion: a union larger than one Ranks call is read in
// calls of listChunk ids, and every list's frame is still the store's.
func TestMembersChunkedUnion(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Refresh: -1}, nil)
		h.board(rank.DefaultBoard("g"))
		const members, per = 1500, 50
		for i := range members {
			h.apply("g", fmt.Sprintf("p%04d", i), int64(i+1), false)
		}
		readers := make([]*reader, members/per)
		lists := make([][]string, len(readers))
		for i := range readers {
			readers[i] = newReader(t)
			for k := range per {
				lists[i] = append(lists[i], fmt.Sprintf("p%04d", i*per+k))
			}
			h.subscribeSpec(readers[i], Spec{Board: "g", Members: lists[i]})
		}
		h.settle()
		_, ranks := h.reads()
		h.apply("g", "lead", 1e6, true)
		h.settle()
		if _, after := h.reads(); after-ranks != int64((members+listChunk-1)/listChunk) {
			t.Fatalf("%d Ranks reads for a union of %d", after-ranks, members)
		}
		for i, r := range readers {
			r.drain()
			rs, err := h.st.Store.Ranks(context.Background(), "g", "", lists[i], 0)
			if err != nil {
				t.Fatal(err)
			}
			got := r.members["g"]
			if got.Total != members+1 || len(got.Entries) != per {
				t.Fatalf("list %d: total %d, %d entries", i, got.Total, len(got.Entries))
			}
			for _, e := range got.Entries {
				k := slices.Index(lists[i], e.Member)
				if mr := rs.Members[k]; e.Rank != mr.Rank || e.Score != mr.Score {
					t.Fatalf("list %d: %+v, store says rank %d score %d", i, e, mr.Rank, mr.Score)
				}
			}
		}
	})
}
