package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// runCall sends events as one apply.lua call (as the lane does for a
// board's events of one pipeline) and settles each call's result.
func runCall(t *testing.T, s *Store, events ...rank.Event) []*call {
	t.Helper()
	ctx := t.Context()
	cb, err := s.board(ctx, events[0].Board)
	if err != nil {
		t.Fatal(err)
	}
	calls := make([]*call, len(events))
	for i, e := range events {
		calls[i] = &call{e: e}
		calls[i].setRecord(e, "test-", uint64(time.Now().UnixNano())+uint64(i)) // a token of its own: not this call's write
	}
	now, nowArg := s.now(ctx, cb.b)
	cmds := []cmd{applyCmd(cb, nowArg, s.periodKeys(cb, now), calls)}
	s.lanes[0].exec(ctx, cmds)
	if again := s.settle(ctx, &cmds[0], staleRetries, nil); len(again) > 0 {
		t.Fatalf("the call was refused: %v", cmds[0].res.Err())
	}
	return calls
}

func storedSeq(t *testing.T, s *Store, board string) int64 {
	t.Helper()
	v, err := s.client.Get(t.Context(), s.idKey(board, "seq")).Int64()
	if err != nil {
		t.Fatalf("GET seq: %v", err)
	}
	return v
}

// apply.lua takes the board's seq once per call and writes it once: the
// events of a call still get consecutive seqs in order, an event that
// changes nothing (a duplicate, a refused one) takes none, the stored seq
// is the last one taken, and the next call (one event: the INCR alone)
// goes on from it.
func TestApplyCallSeq(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "cseq"})
	const id = "cseq"
	mustPut(t, s, rank.DefaultBoard(id))
	if r := mustApply(t, s, incr(id, "w", "w", 1)); r.Seq != 1 {
		t.Fatalf("first event's seq = %d, want 1", r.Seq)
	}

	bad := incr(id, "bad", "a|b", 1) // '|' never occurs in a member id: bad_request
	calls := runCall(t, s,
		incr(id, "e1", "m1", 5),
		incr(id, "e2", "m2", 5),
		incr(id, "e1", "m1", 5), // the first event again: a duplicate
		bad,
		incr(id, "e3", "m1", 2),
		incr(id, "e4", "m3", 0), // a new member at 0: still a change
	)
	want := []struct {
		seq       int64
		duplicate bool
		err       error
	}{{2, false, nil}, {3, false, nil}, {2, true, nil}, {0, false, rank.ErrBadRequest}, {4, false, nil}, {5, false, nil}}
	for i, c := range calls {
		w := want[i]
		if w.err != nil {
			if !errors.Is(c.err, w.err) {
				t.Errorf("event %d: err = %v, want %v", i, c.err, w.err)
			}
			continue
		}
		if c.err != nil || c.r.Seq != w.seq || c.r.Duplicate != w.duplicate {
			t.Errorf("event %d: seq %d duplicate %v err %v, want seq %d duplicate %v", i, c.r.Seq, c.r.Duplicate, c.err, w.seq, w.duplicate)
		}
	}
	if calls[4].r.Score != 7 || calls[4].r.PrevScore != 5 || calls[4].r.Rank != 1 {
		t.Errorf("m1's second event = %+v, want score 7 from 5 at rank 1", calls[4].r)
	}
	if got := storedSeq(t, s, id); got != 5 {
		t.Errorf("stored seq after the call = %d, want 5", got)
	}
	if c := runCall(t, s, incr(id, "e5", "m2", 1))[0]; c.err != nil || c.r.Seq != 6 {
		t.Errorf("a one-event call: seq %d, %v; want 6", c.r.Seq, c.err)
	}
	if got := storedSeq(t, s, id); got != 6 {
		t.Errorf("stored seq after a one-event call = %d, want 6", got)
	}
	// A call whose events all change nothing writes no seq.
	if c := runCall(t, s, incr(id, "e5", "m2", 1), bad); c[0].err != nil || !c[0].r.Duplicate || c[0].r.Seq != 6 {
		t.Errorf("duplicate: %+v, %v", c[0].r, c[0].err)
	}
	if got := storedSeq(t, s, id); got != 6 {
		t.Errorf("stored seq after a call of a duplicate = %d, want 6", got)
	}
	// Ties: m4 reaches 7 after m1 did, so it ranks below it.
	if c := runCall(t, s, incr(id, "e6", "m4", 7))[0]; c.err != nil || c.r.Rank != 2 {
		t.Errorf("m4 at 7 after m1 at 7: rank %d, %v; want 2", c.r.Rank, c.err)
	}
}

// On a shard of a sharded board the tie key is the store's time in µs,
// read once per call: the later events of the call go above it one by
// one, so with the clock standing still ties still order by arrival, and
// the shard keeps the last key for the next call.
func TestShardCallTieKeys(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	at := time.UnixMilli(1_900_000_000_000)
	s := newStore(t, srv, Config{Prefix: "ctie", Now: func() time.Time { return at }})
	const id = "ctie"
	b := rank.DefaultBoard(id)
	b.Shards, b.AckRank = 2, rank.AckRankGlobal
	mustPut(t, s, b)
	// Members of one shard, all reaching the same score, in one batch.
	var members []string
	for i := 0; len(members) < 7; i++ {
		if m := "p" + strconv.Itoa(i); rank.ShardOf(m, 2) == 0 {
			members = append(members, m)
		}
	}
	late := members[6]
	members = members[:6]
	var events []rank.Event
	for i, m := range members {
		events = append(events, incr(id, fmt.Sprintf("t%d", i), m, 10))
	}
	for _, r := range submitAll(s, events) {
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.r.Rank != int64(r.i+1) {
			t.Errorf("%s: rank %d, want %d (ties in arrival order)", members[r.i], r.r.Rank, r.i+1)
		}
	}
	last, err := s.client.Get(context.Background(), s.idKey(shardID(id, 2, 0), "seq")).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if min := at.UnixMilli()*1000 + int64(len(members)) - 1; last != min {
		t.Errorf("shard's last tie key = %d, want %d (the clock, then one above it per event)", last, min)
	}
	// The next call goes on above the last key although the clock stands still.
	r := mustApply(t, s, incr(id, "t-next", members[0], 0))
	if r.Rank != 1 {
		t.Errorf("a zero delta moved %s: rank %d", members[0], r.Rank)
	}
	if r := mustApply(t, s, incr(id, "t-late", late, 10)); r.Rank != int64(len(members)+1) {
		t.Errorf("a later member at 10: rank %d, want %d", r.Rank, len(members)+1)
	}
}

// The six arguments of an event go to go-redis as pointers into the call
// (no allocation per argument), and the record's first field is built in
// one allocation with the hash and token as its halves.
func TestCallArgs(t *testing.T) {
	e := rank.Event{Board: "b", ID: "i", Member: "m", Name: "Ann", Op: rank.OpDelta, Amount: 1 << 40, At: time.UnixMilli(1234)}
	c := &call{e: e}
	c.setRecord(e, "pfx-", 12345)
	if want := strconv.FormatUint(e.PayloadHash(), 36); c.hash != want || c.token != "pfx-"+strconv.FormatUint(12345, 36) || c.rec != c.hash+"."+c.token {
		t.Fatalf("setRecord: hash %q token %q rec %q", c.hash, c.token, c.rec)
	}
	args := c.appendArgs(nil)
	got := fmt.Sprint(*args[0].(*string), *args[1].(*string), args[2], *args[3].(*int64), *args[4].(*string), *args[5].(*int64))
	if want := fmt.Sprint("m", "Ann", 1, int64(1<<40), c.rec, int64(1234)); got != want {
		t.Errorf("args %s, want %s", got, want)
	}
	c.e.At = time.Time{}
	if args = c.appendArgs(args[:0]); args[5] != "" {
		t.Errorf("no at: %v, want \"\"", args[5])
	}
	if n := testing.AllocsPerRun(100, func() { args = c.appendArgs(args[:0]) }); n != 0 {
		t.Errorf("appendArgs: %.0f allocations per event, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { c.setRecord(e, "pfx-", 12345) }); n != 1 {
		t.Errorf("setRecord: %.0f allocations, want 1", n)
	}
}

// A source's dependants get their seq moved once per applied event, as
// before, though apply.lua now writes it once per call (one INCRBY).
func TestApplyCallDependantSeq(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "dseq"})
	src := rank.DefaultBoard("dseq-src")
	src.Group = "dseq"
	mustPut(t, s, src)
	u := rank.DefaultBoard("dseq-all")
	u.Group = "dseq"
	u.Source = rank.UnionOf([]string{src.ID}, []int64{2})
	mustPut(t, s, u)
	seqKey := s.keyIn("dseq", u.ID, "seq")
	seqOf := func() int64 {
		v, err := s.client.Get(t.Context(), seqKey).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		return v
	}
	s.Forget(src.ID) // the source's config now names its dependant
	seq0 := seqOf()
	calls := runCall(t, s, incr(src.ID, "d1", "ann", 3), incr(src.ID, "d2", "bob", 4), incr(src.ID, "d1", "ann", 3), incr(src.ID, "d3", "ann", 1))
	for i, c := range calls {
		if c.err != nil {
			t.Fatalf("event %d: %v", i, c.err)
		}
	}
	if got := seqOf(); got != seq0+3 {
		t.Errorf("the union's seq moved by %d for 3 applied events and a duplicate, want 3", got-seq0)
	}
	r, err := s.Ranks(t.Context(), u.ID, "", []string{"ann", "bob"}, 0)
	if err != nil || r.Members[0].Score != 8 || r.Members[1].Score != 8 {
		t.Errorf("the union after the call: %+v, %v; want ann 8 (2×4), bob 8 (2×4)", r, err)
	}
}

// apply.lua formats the first 8 digits of tiebreak first's pad once per
// call and again only when the seq enters another block of 1e8: one call
// whose seqs cross 99,999,999 → 100,000,000 still gives every event the
// pad of its own seq, so equal scores keep the order of reaching them.
func TestApplyPadAcrossSeqBlock(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "pad"})
	const id = "pad"
	for _, tie := range []rank.Tiebreak{rank.First, rank.Last} {
		board := id + "-" + string(tie)
		b := rank.DefaultBoard(board)
		b.Tiebreak = tie
		mustPut(t, s, b)
		if err := s.client.Set(t.Context(), s.idKey(board, "seq"), 99999997, 0).Err(); err != nil {
			t.Fatal(err)
		}
		// a, b, c, d reach 5 with seqs 99999998 .. 100000001.
		calls := runCall(t, s, incr(board, "1", "a", 5), incr(board, "2", "b", 5), incr(board, "3", "c", 5), incr(board, "4", "d", 5))
		for i, c := range calls {
			if c.err != nil || c.r.Seq != 99999998+int64(i) {
				t.Fatalf("%s: event %d: %+v, %v; want seq %d", board, i, c.r, c.err, 99999998+i)
			}
		}
		want := map[rank.Tiebreak][]string{rank.First: {"a", "b", "c", "d"}, rank.Last: {"d", "c", "b", "a"}}[tie]
		pg, err := s.Top(t.Context(), board, "", 0, 10)
		if err != nil || len(pg.Entries) != 4 {
			t.Fatalf("%s: top = %+v, %v", board, pg, err)
		}
		for i, e := range pg.Entries {
			if e.Member != want[i] || e.Rank != int64(i+1) {
				t.Fatalf("%s: top = %+v; want %v in that order", board, pg.Entries, want)
			}
		}
		// The pads themselves: 16 digits of the seq, inverted for first.
		zs, err := s.client.ZRange(t.Context(), s.zkey(s.ref(board), 0), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range []string{"a", "b", "c", "d"} {
			seq := int64(99999998 + i)
			pad := fmt.Sprintf("%016d", seq)
			if tie == rank.First {
				pad = fmt.Sprintf("%016d", int64(9999999999999999)-seq)
			}
			if !slices.Contains(zs, pad+"|"+m) {
				t.Fatalf("%s: sorted set %v lacks %s's member %s|%s", board, zs, m, pad, m)
			}
		}
	}
}

// A hooked board's call runs the hold block's hooks only for the events
// that need them (apply_hold.lua): the contenders are claimed, an id the
// call carries twice after its claim waits for the hook like any re-send,
// the others apply at full speed, and a member held before is still moved
// in the held set by an event of a call that holds nothing else.
func TestApplyCallHookedNeeds(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "chook"})
	b := rank.DefaultBoard("chook")
	b.Hook = rank.Hook{URL: "https://hook.example/validate", Secret: "0123456789abcdef-secret",
		Timeout: rank.Duration(rank.DefaultValidateTimeout), OnError: rank.OnErrorReject, Top: 1}
	mustPut(t, s, b)
	ev := func(id, member string, amount int64) rank.Event {
		return rank.Event{Board: b.ID, ID: id, Member: member, Op: rank.OpDelta, Amount: amount}
	}
	// The first shown: claimed (fewer than one shown), then accepted and flagged.
	first := runCall(t, s, ev("h1", "held", 50))
	var ve *rank.ValidateError
	if !errors.As(first[0].err, &ve) {
		t.Fatalf("the first event: %+v, %v; want a claim", first[0].r, first[0].err)
	}
	flagged := ev("h1", "held", 50)
	flagged.Verdict, flagged.Claim, flagged.Reason = rank.VerdictFlag, ve.Token, "odd"
	if c := runCall(t, s, flagged); c[0].err != nil || !c[0].r.Held {
		t.Fatalf("the flagged event: %+v, %v; want it applied and held", c[0].r, c[0].err)
	}
	// Nothing shown now (the only entry is held): every event is a contender.
	c := runCall(t, s, ev("k1", "kim", 10))
	if !errors.As(c[0].err, &ve) {
		t.Fatalf("a contender on an empty board: %+v, %v; want a claim", c[0].r, c[0].err)
	}
	accept := ev("k1", "kim", 10)
	accept.Verdict, accept.Claim = rank.VerdictAccept, ve.Token
	if c := runCall(t, s, accept); c[0].err != nil {
		t.Fatalf("kim accepted: %v", c[0].err)
	}
	// kim shows 10: a call of a contender, its id again, a non-contender
	// and the held member's next event.
	c = runCall(t, s, ev("x1", "xan", 20), ev("x1", "xan", 20), ev("y1", "yul", 5), ev("h2", "held", -45))
	if !errors.As(c[0].err, &ve) {
		t.Errorf("the contender: %+v, %v; want a claim", c[0].r, c[0].err)
	}
	var pe *rank.PendingError
	if !errors.As(c[1].err, &pe) {
		t.Errorf("the contender's id again in the same call: %+v, %v; want pending", c[1].r, c[1].err)
	}
	if c[2].err != nil || c[2].r.Rank != 2 || c[2].r.Score != 5 {
		t.Errorf("the non-contender: %+v, %v; want applied at rank 2", c[2].r, c[2].err)
	}
	if c[3].err != nil || !c[3].r.Held || c[3].r.Score != 5 {
		t.Errorf("the held member's event: %+v, %v; want applied below the first (no claim), still held, 5", c[3].r, c[3].err)
	}
	n, err := s.client.ZCard(t.Context(), s.idKey(b.ID, "z:0")).Result()
	if err != nil || n != 2 {
		t.Errorf("shown entries: %d, %v; want kim and yul, not the held member", n, err)
	}
}
