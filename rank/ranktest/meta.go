package ranktest

import (
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/rank"
)

// withMeta is e carrying m.
func withMeta(e rank.Event, m meta.Meta) rank.Event {
	e.Meta = m
	return e
}

// metaOf is member's meta as Top and Ranks read it (they must agree).
func metaOf(t *testing.T, s rank.Store, boardID, member string) meta.Meta {
	t.Helper()
	var fromTop meta.Meta
	for _, e := range all(t, s, boardID, "").Entries {
		if e.Member == member {
			fromTop = e.Meta
		}
	}
	mr := one(t, s, boardID, member, 1)
	var fromRanks meta.Meta
	for _, e := range mr.Around {
		if e.Member == member {
			fromRanks = e.Meta
		}
	}
	if fromTop != fromRanks {
		t.Fatalf("%s on %s: Top reads meta %q, Ranks %q", member, boardID, fromTop, fromRanks)
	}
	return fromTop
}

func wantMeta(t *testing.T, s rank.Store, boardID, member string, want meta.Meta) {
	t.Helper()
	if got := metaOf(t, s, boardID, member); got != want {
		t.Fatalf("%s on %s: meta %q, want %q", member, boardID, got, want)
	}
}

// testMeta: §11 and R26's meta: kept per member with the score it came
// with (best: the event that set the best value; incr, set: the last
// applied event, none when it had none), read by Top and Ranks; a
// duplicate or a refused event changes nothing.
func testMeta(t *testing.T, f Factory) {
	s := f(t, nil)
	g := &ids{}
	const m1, m2, m3 = `{"replay":"https://r.example/1"}`, `{"replay":"https://r.example/2","k":[1, 2]}`, `{"replay":"https://r.example/3"}`

	best := put(t, s, board("rt-meta-best", func(b *rank.Board) { b.Mode = rank.Best }))
	apply(t, s, withMeta(value(best.ID, g.next(), "ann", 100), m1))
	wantMeta(t, s, best.ID, "ann", m1)
	// A worse result and an equal one do not set the best value: its
	// meta stays.
	apply(t, s, withMeta(value(best.ID, g.next(), "ann", 90), m2))
	apply(t, s, withMeta(value(best.ID, g.next(), "ann", 100), m2))
	wantMeta(t, s, best.ID, "ann", m1)
	// A better one does, without meta: none now.
	apply(t, s, value(best.ID, g.next(), "ann", 120))
	wantMeta(t, s, best.ID, "ann", "")
	apply(t, s, withMeta(value(best.ID, g.next(), "ann", 130), m3))
	wantMeta(t, s, best.ID, "ann", m3)
	// Another member's meta is its own.
	apply(t, s, withMeta(value(best.ID, g.next(), "bob", 10), m1))
	wantMeta(t, s, best.ID, "bob", m1)
	wantMeta(t, s, best.ID, "ann", m3)

	incr := put(t, s, board("rt-meta-incr", nil))
	first := withMeta(delta(incr.ID, g.next(), "ann", 5), m1)
	apply(t, s, first)
	// The last applied event's, even one of delta 0.
	apply(t, s, withMeta(delta(incr.ID, g.next(), "ann", 0), m2))
	wantMeta(t, s, incr.ID, "ann", m2)
	// A duplicate of the first event returns its first result and changes
	// nothing; the same id with another meta is another payload.
	if r := apply(t, s, first); !r.Duplicate || r.Score != 5 {
		t.Fatalf("duplicate: %+v", r)
	}
	applyErr(t, s, withMeta(first, m3), rank.ErrIdempotencyConflict)
	wantMeta(t, s, incr.ID, "ann", m2)
	// Refused events change nothing.
	before := snapshot(t, s, incr.ID)
	applyErr(t, s, withMeta(delta(incr.ID, g.next(), "ann", rank.MaxScore), m3), rank.ErrOutOfRange)
	applyErr(t, s, withMeta(delta(incr.ID, g.next(), "ann", 1), `[1]`), rank.ErrBadRequest)
	applyErr(t, s, withMeta(delta(incr.ID, g.next(), "ann", 1), meta.Meta(`{"r":"`+string(make([]byte, meta.Max))+`"}`)), rank.ErrBadRequest)
	if got := snapshot(t, s, incr.ID); got != before {
		t.Fatalf("a refused event changed the board:\n%s\nwant\n%s", got, before)
	}
	wantMeta(t, s, incr.ID, "ann", m2)
	// An applied event without meta leaves none.
	apply(t, s, delta(incr.ID, g.next(), "ann", 1))
	wantMeta(t, s, incr.ID, "ann", "")

	set := put(t, s, board("rt-meta-set", func(b *rank.Board) { b.Mode = rank.Set }))
	apply(t, s, withMeta(value(set.ID, g.next(), "ann", 50), m1))
	apply(t, s, withMeta(value(set.ID, g.next(), "ann", 40), m2))
	wantMeta(t, s, set.ID, "ann", m2)

	// A sharded board keeps each member's meta in its shard: Top (a
	// page merged from every shard) and Ranks (the around window, whose
	// entries come from several shards) carry it as on a plain board.
	sh := put(t, s, board("rt-meta-sharded", func(b *rank.Board) { b.Mode = rank.Best; b.Shards = 4 }))
	shMeta := map[string]meta.Meta{}
	for i, m := range []string{"ann", "bob", "cid", "dan", "eve", "fay", "gus", "hal"} {
		var mt meta.Meta
		if i%3 != 2 {
			mt = meta.Meta(`{"replay":"https://r.example/` + m + `"}`)
		}
		apply(t, s, withMeta(value(sh.ID, g.next(), m, int64(10*(i+1))), mt))
		shMeta[m] = mt
	}
	apply(t, s, withMeta(value(sh.ID, g.next(), "ann", 5), m2)) // worse: ann keeps its meta
	for m, mt := range shMeta {
		wantMeta(t, s, sh.ID, m, mt)
	}
	for _, e := range one(t, s, sh.ID, "dan", 3).Around {
		if e.Meta != shMeta[e.Member] {
			t.Fatalf("sharded around window: %s has meta %q, want %q", e.Member, e.Meta, shMeta[e.Member])
		}
	}

	// A hot board keeps no meta: refused, nothing changes.
	hot := put(t, s, hotBoard("rt-meta-hot", time.Hour, 3, 0.5))
	applyErr(t, s, withMeta(delta(hot.ID, g.next(), "ann", 1), m1), rank.ErrBadRequest)
	if n := all(t, s, hot.ID, "").Total; n != 0 {
		t.Fatalf("hot board: %d entries after a refused event", n)
	}
}
