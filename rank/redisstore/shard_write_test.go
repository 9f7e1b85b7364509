package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// A lane round's events on a sharded board cost a fixed number of script
// calls, whatever their number: per shard one apply.lua, one count call
// (the other shards' events' queries, all in one) and one rerecord.lua
// (all its records), and one INCRBY for the board's seq. Each event's ack
// still holds its global rank, which a read right after agrees with, and
// a seq of its own.
func TestShardFollowUpPerRound(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	at := time.UnixMilli(1_900_000_000_000)
	s := newStore(t, srv, Config{Prefix: "fround", Now: func() time.Time { return at }})
	const id, shards, events = "fround", 4, 60
	b := rank.DefaultBoard(id)
	b.Shards, b.AckRank = shards, rank.AckRankGlobal
	mustPut(t, s, b)
	// Every member already on the board, so each event asks two counts
	// (its rank and its rank before) of every other shard.
	for i := range events {
		mustApply(t, s, incr(id, "warm"+strconv.Itoa(i), "m"+strconv.Itoa(i), int64(1000+10*i)))
	}
	evalsha := func() int {
		info, err := s.client.Info(t.Context(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
				n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				return n
			}
		}
		return 0
	}
	before := evalsha()
	bt := newBatch(events)
	for i := range events {
		c := &call{ctx: context.Background(), deadline: time.Now().Add(time.Minute)}
		// The odd ones move, none past another: every rank stays.
		c.e = incr(id, "r"+strconv.Itoa(i), "m"+strconv.Itoa(i), int64(i%2*(1+i%9)))
		c.setRecord(c.e, "test-", uint64(i))
		bt.calls = append(bt.calls, c)
	}
	s.work(s.lanes[0], bt)
	if got, most := evalsha()-before, 3*shards; got > most {
		t.Errorf("%d EVALSHA for a round of %d events on %d shards, want at most %d", got, events, shards, most)
	}
	seqs := map[int64]bool{}
	for _, c := range bt.calls {
		if c.err != nil {
			t.Fatalf("%s: %v", c.e.Member, c.err)
		}
		seqs[c.r.Seq] = true
		r, err := s.Ranks(t.Context(), id, "", []string{c.e.Member}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if m := r.Members[0]; m.Rank != c.r.Rank || m.Score != c.r.Score {
			t.Errorf("%s: ack rank %d score %d, read %d %d", c.e.Member, c.r.Rank, c.r.Score, m.Rank, m.Score)
		}
	}
	if len(seqs) != events {
		t.Errorf("%d distinct seqs for %d events", len(seqs), events)
	}
	for i, c := range bt.calls {
		if want := int64(events - i); c.r.Rank != want || c.r.PrevRank != want {
			t.Errorf("%s: rank %d, before %d; want %d", c.e.Member, c.r.Rank, c.r.PrevRank, want)
		}
	}
	// A duplicate answers the global result (the rewritten record).
	for _, c := range bt.calls[:5] {
		got := mustApply(t, s, c.e)
		if !got.Duplicate || got.Rank != c.r.Rank || got.Seq != c.r.Seq || got.PrevRank != c.r.PrevRank {
			t.Errorf("duplicate of %s: %+v, want %s", c.e.Member, got, fmt.Sprintf("%+v", c.r))
		}
	}
}

// A count call places another shard's member in the sorted set for the
// moment of a ZREVRANK: it answers the entries strictly better, ties by
// member, and leaves the set as it was, with nothing written to the AOF
// (so nothing sent to replicas either).
func TestShardCountLeavesNoTrace(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	s := newStore(t, srv, Config{Prefix: "trace"})
	const id = "trace"
	b := rank.DefaultBoard(id)
	b.Shards = 2
	mustPut(t, s, b)
	var mine []string // members of shard 0
	for i := 0; len(mine) < 5; i++ {
		if m := "t" + strconv.Itoa(i); rank.ShardOf(m, 2) == 0 {
			mine = append(mine, m)
		}
	}
	for i, m := range mine {
		mustApply(t, s, incr(id, "e"+m, m, int64(10*(i%3)))) // 0, 10, 20, 0, 10
	}
	cb, err := s.board(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	sh := cb.shards[0]
	zkey := s.zkey(s.ref(sh.b.ID), 0)
	before, err := s.client.ZRangeWithScores(t.Context(), zkey, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	aof := func() string {
		info, err := s.client.Info(t.Context(), "persistence").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "aof_current_size:"); ok {
				return v
			}
		}
		t.Fatal("no aof_current_size")
		return ""
	}
	size := aof()
	// Another shard's member at 10 reaching it earlier than both members
	// there (a greater tie key), and later (a smaller one); at 20 earlier
	// than the one there; at 5; at 10 on a shared board (no tie key).
	args := []any{cb.ver, "", 0, 0, 0, "count",
		"10", "9999999999999999|x", "10", "0000000000000000|x", "20", "9999999999999999|x", "5", "5555555555555555|x", "10", ""}
	v, err := s.shard.run(t.Context(), s.client, s.shardKeys(sh, 0), args...)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(v); got != "[1 3 0 3 1]" {
		t.Errorf("count = %s, want [1 3 0 3 1]", got)
	}
	after, err := s.client.ZRangeWithScores(t.Context(), zkey, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the shard's set changed: %v, was %v", after, before)
	}
	if got := aof(); got != size {
		t.Errorf("AOF grew from %s to %s bytes on a count call", size, got)
	}
	mustApply(t, s, incr(id, "later", mine[0], 1))
	if aof() == size {
		t.Error("the AOF did not grow on an apply either: the check above proves nothing")
	}
}

// fourShards is a store on a Redis of its own holding board id of four
// shards, and the board as the store caches it.
func fourShards(t *testing.T, id string) (*Store, cachedBoard) {
	t.Helper()
	s := newStore(t, testenv.StartRedis(t), Config{Prefix: id})
	b := rank.DefaultBoard(id)
	b.Shards = 4
	mustPut(t, s, b)
	cb, err := s.board(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s, cb
}

// shardStep applies e on its shard as a lane round does, without the
// round's follow-up: with a round token from bt, or with the Apply's own
// token when bt is nil (a record made before round tokens).
func shardStep(t *testing.T, s *Store, cb cachedBoard, bt *batch, e rank.Event) *call {
	t.Helper()
	ctx := t.Context()
	sh := cb.shards[rank.ShardOf(e.Member, cb.b.Shards)]
	c := &call{e: e}
	c.setRecord(e, s.attemptPrefix, s.attempts.Add(1))
	c.shard, c.board = sh.keys, &cb
	if bt != nil {
		s.roundToken(ctx, bt, c)
	}
	now, nowArg := s.now(ctx, sh.b)
	cmds := []cmd{applyCmd(sh, nowArg, s.periodKeys(sh, now), []*call{c})}
	s.lanes[0].exec(ctx, cmds)
	if again := s.settle(ctx, &cmds[0], staleRetries, nil); len(again) > 0 || c.err != nil || c.r.Rank != 0 {
		t.Fatalf("the shard's step of %s: %+v, %v", e.ID, c.r, c.err)
	}
	return c
}

// TestShardSeqGivenOnce: on a sharded board whose acks carry no ranks, an
// event's seq is given once, by whichever call meets it first, and every
// answer for it carries that seq; the board's seq moves by one per event
// applied. A record without a round: a duplicate (a retry sent to another
// node) answered before the applying round's follow-up. A round's events
// take consecutive seqs from one field; when a duplicate of one of them
// comes first, it takes a field of its own and the round's follow-up
// gives each of its events one; a duplicate after the follow-up finds
// the round's; the follow-up sent again gives the same seqs; an event
// its round did not hear of (its reply lost) gets its seq from its
// duplicate.
func TestShardSeqGivenOnce(t *testing.T) {
	t.Parallel()
	const id = "sonce"
	s, cb := fourShards(t, id)
	ctx := t.Context()
	seqs := func(what string, calls []*call, want ...int64) {
		t.Helper()
		for i, c := range calls {
			if c.err != nil || c.r.Seq != want[i] {
				t.Fatalf("%s, event %d: seq %d, %v; want %d", what, i, c.r.Seq, c.err, want[i])
			}
		}
	}
	dup := func(e rank.Event, want int64) {
		t.Helper()
		if r := mustApply(t, s, e); !r.Duplicate || r.Seq != want || r.Rank != 0 {
			t.Fatalf("the retry of %s: %+v, want a duplicate at seq %d", e.ID, r, want)
		}
	}
	ev := func(n int) rank.Event { return incr(id, fmt.Sprint("e", n), fmt.Sprint("m", n), int64(n+1)) }

	// No round.
	c := shardStep(t, s, cb, nil, ev(0))
	dup(ev(0), 1) // its round's follow-up has not run yet
	s.seqFollowUp(ctx, []*call{c})
	seqs("the follow-up of a record without a round", []*call{c}, 1)

	// A duplicate before its round's follow-up.
	bt := newBatch(8)
	round := []*call{shardStep(t, s, cb, bt, ev(1)), shardStep(t, s, cb, bt, ev(2)), shardStep(t, s, cb, bt, ev(3))}
	dup(ev(2), 2)
	s.seqFollowUp(ctx, round)
	seqs("a round met by a duplicate first", round, 3, 2, 4)
	dup(ev(3), 4)

	// The follow-up first; then a duplicate, and the follow-up again.
	bt = newBatch(8)
	round = []*call{shardStep(t, s, cb, bt, ev(4)), shardStep(t, s, cb, bt, ev(5))}
	s.seqFollowUp(ctx, round)
	seqs("a round", round, 5, 6)
	dup(ev(5), 6)
	dup(ev(4), 5)
	s.seqFollowUp(ctx, round)
	seqs("the round's follow-up again", round, 5, 6)

	// The round did not hear of its second event.
	bt = newBatch(8)
	round = []*call{shardStep(t, s, cb, bt, ev(6)), shardStep(t, s, cb, bt, ev(7))}
	s.seqFollowUp(ctx, round[:1])
	seqs("a round short of an event", round[:1], 7)
	dup(ev(7), 8)
	dup(ev(6), 7)

	if got := storedSeq(t, s, id); got != 8 {
		t.Fatalf("the board's seq = %d after 8 events, want 8", got)
	}
	if r := mustApply(t, s, incr(id, "next", "m9", 1)); r.Duplicate || r.Seq != 9 {
		t.Fatalf("the next event: %+v, want seq 9", r)
	}
}

// TestShardSeqFollowUpOrder: the seq follow-up of events whose records
// name no round (made before round tokens), whose fields keep a seq each. A member's events (one shard's, in
// the order of their tie keys) take seqs in that order even when another
// shard's event of the later minute comes first in the round; an event
// met twice in a round (applied, and a duplicate of it) takes one seq; a
// second follow-up of the same events gives them the seqs they have.
func TestShardSeqFollowUpOrder(t *testing.T) {
	t.Parallel()
	const id = "sorder"
	s, cb := fourShards(t, id)
	ctx := t.Context()
	// Two members on different shards.
	a, m := "a0", ""
	for i := 0; m == ""; i++ {
		if x := fmt.Sprint("m", i); rank.ShardOf(x, 4) != rank.ShardOf(a, 4) {
			m = x
		}
	}
	boundary := (time.Now().UnixMicro()/60_000_000 + 1) * 60_000_000
	at := func(member string, tie int64) *call {
		c := &call{e: incr(id, fmt.Sprint("e", tie), member, 1), board: &cb}
		c.r.Seq = tie
		return c
	}
	round := []*call{
		at(a, boundary+5),  // the later minute, first in the round
		at(m, boundary-10), // m's first event, the earlier minute
		at(a, boundary+5),  // a duplicate of a's event
		at(m, boundary+20), // m's next event, the later minute
	}
	s.seqFollowUp(ctx, round)
	seqs := make([]int64, len(round))
	for i, c := range round {
		if c.err != nil {
			t.Fatalf("event %d: %v", i, c.err)
		}
		seqs[i] = c.r.Seq
	}
	if seqs[1] >= seqs[3] {
		t.Errorf("m's events took seqs %d then %d: out of the order they were applied", seqs[1], seqs[3])
	}
	if seqs[0] != seqs[2] {
		t.Errorf("an event and its duplicate took seqs %d and %d, want one", seqs[0], seqs[2])
	}
	if got := storedSeq(t, s, id); got != 3 {
		t.Errorf("the board's seq = %d after three events, want 3", got)
	}
	again := []*call{at(m, boundary+20), at(a, boundary+5), at(m, boundary-10)}
	s.seqFollowUp(ctx, again)
	for i, want := range []int64{seqs[3], seqs[0], seqs[1]} {
		if again[i].err != nil || again[i].r.Seq != want {
			t.Errorf("met again, event %d: seq %d (%v), want %d", i, again[i].r.Seq, again[i].err, want)
		}
	}
	if got := storedSeq(t, s, id); got != 3 {
		t.Errorf("the board's seq = %d after the events were met again, want 3", got)
	}
}

// A sharded board's events all take one lane, whoever submits them, so a
// round holds all of them and its shard calls are as full as they can be;
// an unsharded board's spread over the lanes by submitter. Each
// submitter's events on the sharded board stay in its order.
func TestShardedBoardOneLane(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "onelane", Lanes: 2, ShardLinger: -1})
	sharded, plain := rank.DefaultBoard("onelane-s"), rank.DefaultBoard("onelane-p")
	sharded.Shards = 4
	mustPut(t, s, sharded)
	mustPut(t, s, plain)
	perLane := func() [2]int64 { return [2]int64{s.lanes[0].calls.Load(), s.lanes[1].calls.Load()} }
	submit := func(board string) [2]int64 {
		before := perLane()
		const submitters, each = 6, 40
		var events []rank.Event
		for i := range each {
			for w := range submitters {
				e := incr(board, fmt.Sprintf("%d-%d", w, i), fmt.Sprintf("m%d", w), 1)
				e.Submitter = uint64(w + 1)
				events = append(events, e)
			}
		}
		for i, r := range submitAll(s, events) {
			if r.err != nil {
				t.Fatalf("%s event %d: %v", board, i, r.err)
			}
			// Submitter w's member reaches i+1 with its i-th event.
			if want := int64(i/submitters + 1); r.r.Score != want {
				t.Fatalf("%s event %d (%s): score %d, want %d: out of its submitter's order", board, i, events[i].ID, r.r.Score, want)
			}
		}
		after := perLane()
		return [2]int64{after[0] - before[0], after[1] - before[1]}
	}
	if got := submit(sharded.ID); got[0] > 0 && got[1] > 0 {
		t.Errorf("a sharded board's events went to both lanes (%v events): its rounds split", got)
	}
	if got := submit(plain.ID); got[0] == 0 || got[1] == 0 {
		t.Errorf("an unsharded board's events of six submitters took one lane only (%v events)", got)
	}
}

// A round holding a sharded board's events waits, up to ShardLinger, for
// enough events to fill the board's shard calls: the events queued while
// the lane waits go in the same pipeline as the first. A round of an
// unsharded board's events does not wait.
func TestShardLingerFillsRound(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "linger", Lanes: 1, ShardLinger: time.Hour})
	const shards = 4
	b := rank.DefaultBoard("linger")
	b.Shards = shards
	mustPut(t, s, b)
	mustPut(t, s, rank.DefaultBoard("linger-plain"))
	ln := s.lanes[0]

	// An unsharded board's event is sent at once (the hour would end the test).
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := rank.ApplyWait(ctx, s, incr("linger-plain", "p", "p", 1)); err != nil {
		t.Fatalf("unsharded event with a lingering lane: %v", err)
	}

	p0 := ln.pipelines.Load()
	want := shards * shardFill
	results := make(chan error, want)
	submit := func(i int) {
		s.Apply(t.Context(), incr(b.ID, fmt.Sprintf("e%d", i), fmt.Sprintf("m%d", i), 1), func(_ rank.Result, err error) { results <- err })
	}
	submit(0)
	// The lane took the first event and waits for more.
	for deadline := time.Now().Add(20 * time.Second); ln.lingered.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the lane's round of one sharded event did not wait for more")
		}
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < want; i++ {
		submit(i)
	}
	for range want {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	if got := ln.pipelines.Load() - p0; got != 1 {
		t.Errorf("%d events of a %d-shard board in %d pipelines, want 1 (the round waits for %d)", want, shards, got, want)
	}
}

// A lingering round is sent when ShardLinger ends, however few its events.
func TestShardLingerEnds(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{Prefix: "lingerend", Lanes: 1, ShardLinger: 20 * time.Millisecond})
	b := rank.DefaultBoard("lingerend")
	b.Shards = 4
	mustPut(t, s, b)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for i := range 3 {
		r, err := rank.ApplyWait(ctx, s, incr(b.ID, fmt.Sprintf("e%d", i), "m", 1))
		if err != nil || r.Score != int64(i+1) {
			t.Fatalf("event %d alone on a lingering lane: %+v, %v", i, r, err)
		}
	}
}
