package redisstore

import (
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// apply.lua defers an event's hash writes (names, the member hash) and its
// record to the end of the call, under pcall (its function run). These
// tests break a key's type so that a redis.call fails part way through a
// call, and check that no applied event is left without its record: a
// retry of any event the call applied is a duplicate with the first
// result, never a second application.

// named is incr with the display name "Player <member>".
func named(board, id, member string, d int64) rank.Event {
	e := incr(board, id, member, d)
	e.Name = "Player " + member
	return e
}

// The names hash is of the wrong type: its batched HSET fails after every
// event of the call was applied, and the records are still written.
func TestDeferredNamesFail(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "dnf"})
	const id = "dnf"
	mustPut(t, s, rank.DefaultBoard(id))
	ctx := t.Context()
	if err := s.client.Set(ctx, s.idKey(id, "n"), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	events := []rank.Event{named(id, "e1", "a", 5), named(id, "e2", "b", 7), named(id, "e3", "a", 1)}
	for i, c := range runCall(t, s, events...) {
		if c.err == nil {
			t.Fatalf("event %d: no error, want the names hash's WRONGTYPE", i)
		}
	}
	// Every event was applied once: a to 6, b to 7, each retry a duplicate.
	if err := s.client.Del(ctx, s.idKey(id, "n")).Err(); err != nil {
		t.Fatal(err)
	}
	for i, e := range events {
		r := mustApply(t, s, e)
		if !r.Duplicate {
			t.Fatalf("retry of event %d: %+v, want a duplicate (its record was lost)", i, r)
		}
	}
	// The member hash was written too: a's next event moves its one entry
	// (a lost member hash would leave a second one behind).
	mustApply(t, s, incr(id, "e4", "a", 2))
	pg, err := s.Top(ctx, id, "", 0, 10)
	if err != nil || len(pg.Entries) != 2 || pg.Entries[0].Member != "a" || pg.Entries[0].Score != 8 ||
		pg.Entries[1].Member != "b" || pg.Entries[1].Score != 7 {
		t.Fatalf("top = %+v, %v; want a 8, b 7", pg, err)
	}
	if got := storedSeq(t, s, id); got != 4 {
		t.Fatalf("stored seq = %d, want 4 (the seq is written even when the names are not)", got)
	}
}

// An event part way through a call fails (a late event within grace whose
// period's sorted set is of the wrong type): the events before it keep
// their writes and records, it and the events after it keep none, and
// each applies once when sent again.
func TestDeferredEventFails(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	hour := time.Date(2031, 3, 1, 10, 0, 0, 0, time.UTC)
	now := hour.Add(time.Minute)
	s := newStore(t, srv, Config{Prefix: "def", Now: func() time.Time { return now }})
	const id = "def"
	b := hourly(id)
	b.Grace = rank.Duration(5 * time.Minute)
	mustPut(t, s, b)
	ctx := t.Context()
	prevPeriod := rank.PeriodAt(b, hour.Add(-time.Minute)).Index
	pz := s.zkey(s.ref(id), prevPeriod)
	if err := s.client.Set(ctx, pz, "not a sorted set", 0).Err(); err != nil {
		t.Fatal(err)
	}
	late := incr(id, "e2", "b", 4)
	late.At = hour.Add(-30 * time.Second)
	events := []rank.Event{incr(id, "e1", "a", 5), late, incr(id, "e3", "c", 9)}
	calls := runCall(t, s, events...)
	for i, c := range calls {
		if c.err == nil {
			t.Fatalf("event %d: no error, want the late event's WRONGTYPE", i)
		}
	}
	first, err := s.Top(ctx, id, "", 0, 10)
	if err != nil || len(first.Entries) != 1 || first.Entries[0].Member != "a" || first.Entries[0].Score != 5 {
		t.Fatalf("current period after the failed call = %+v, %v; want a alone at 5", first, err)
	}
	if r := mustApply(t, s, events[0]); !r.Duplicate || r.Score != 5 || r.Seq != 1 {
		t.Fatalf("retry of the event before the failure: %+v, want a duplicate of score 5, seq 1", r)
	}
	if err := s.client.Del(ctx, pz).Err(); err != nil {
		t.Fatal(err)
	}
	if r := mustApply(t, s, late); r.Duplicate || r.Score != 4 || r.Period != prevPeriod {
		t.Fatalf("the failed event sent again: %+v, want it applied in period %d at 4", r, prevPeriod)
	}
	if r := mustApply(t, s, events[2]); r.Duplicate || r.Score != 9 {
		t.Fatalf("the event after the failure sent again: %+v, want it applied at 9", r)
	}
}

// hot.lua defers its names the same way: a call of named events on a hot
// board stores each name once the call ends, and when the names hash
// cannot be written, the events' records still are.
func TestDeferredHotNames(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	at := hotStart()
	s := newStore(t, srv, Config{Prefix: "dhn", Now: func() time.Time { return at }, HotInterval: -1})
	ctx := t.Context()
	mustPut(t, s, hotTestBoard("hn"))
	for i, c := range runCall(t, s, named("hn", "e1", "a", 5), named("hn", "e2", "b", 7), named("hn", "e3", "a", 1)) {
		if c.err != nil {
			t.Fatalf("event %d: %v", i, c.err)
		}
	}
	if names, err := s.client.HGetAll(ctx, s.idKey("hn", "n")).Result(); err != nil || len(names) != 2 ||
		names["a"] != "Player a" || names["b"] != "Player b" {
		t.Fatalf("names = %v, %v; want a and b named", names, err)
	}

	mustPut(t, s, hotTestBoard("hb"))
	if err := s.client.Set(ctx, s.idKey("hb", "n"), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	events := []rank.Event{named("hb", "e1", "a", 5), named("hb", "e2", "a", 2)}
	for i, c := range runCall(t, s, events...) {
		if c.err == nil {
			t.Fatalf("event %d: no error, want the names hash's WRONGTYPE", i)
		}
	}
	if err := s.client.Del(ctx, s.idKey("hb", "n")).Err(); err != nil {
		t.Fatal(err)
	}
	for i, e := range events {
		if r := mustApply(t, s, e); !r.Duplicate {
			t.Fatalf("retry of event %d: %+v, want a duplicate (its record was lost)", i, r)
		}
	}
	pg, err := s.Top(ctx, "hb", "", 0, 10)
	if err != nil || len(pg.Entries) != 1 || pg.Entries[0].Score != 7 {
		t.Fatalf("top = %+v, %v; want a alone at 7", pg, err)
	}
}
