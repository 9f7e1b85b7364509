package redisstore

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// TestApplySpec: the apply config carries the core's four settings and a
// token per optional feature a board uses, none for a plain board.
func TestApplySpec(t *testing.T) {
	t.Parallel()
	plain := rank.DefaultBoard("p")
	if got, want := applySpec(plain), "incr desc first 600000"; got != want {
		t.Errorf("plain board: %q, want %q", got, want)
	}
	b := rank.DefaultBoard("f")
	b.Mode, b.Order, b.Tiebreak = rank.Best, rank.Asc, rank.Shared
	b.StartsAt = rank.At(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	b.EndsAt = rank.At(time.Date(2031, 2, 1, 0, 0, 0, 0, time.UTC))
	b.Grace = rank.Duration(time.Minute)
	b.MaxSubmissions, b.History = 5, 10
	want := "best asc shared 600000 starts=1924992000000 ends=1927670400000 grace=60000 limit=5 history=10"
	if got := applySpec(b); got != want {
		t.Errorf("%q, want %q", got, want)
	}
	b.Shards = 4
	if got := shardSpec(b); got != want+" shard norank" {
		t.Errorf("shard: %q", got)
	}
	b.AckRank = rank.AckRankGlobal
	if got := shardSpec(b); got != want+" shard" {
		t.Errorf("shard with ack_rank global: %q", got)
	}
}

// TestSpecOfAnOlderConfig: a config stored without its apply config (by
// a version before it) is completed at its first event, on the board and
// every shard, and the event applied; sh and me are set, since such a
// board may hold raw entries of an earlier tiebreak shared and meta. A
// member's meta written then is dropped by its next event without meta
// (R26), and its raw entry is found.
func TestSpecOfAnOlderConfig(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{})
	ctx := t.Context()
	plain, sharded := rank.DefaultBoard("old-p"), rank.DefaultBoard("old-s")
	sharded.Shards = 3
	for _, b := range []rank.Board{plain, sharded} {
		mustPut(t, s, b)
		c, err := s.loadBoard(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		cfgs := []string{c.keys.cfg}
		for _, sh := range c.shards {
			cfgs = append(cfgs, sh.keys.cfg)
		}
		for _, k := range cfgs {
			if err := s.client.HDel(ctx, k, "a", "sh", "me").Err(); err != nil {
				t.Fatal(err)
			}
		}
		// What the older version left: a raw entry (tiebreak shared
		// once) and meta, on the member's key space.
		m := "ann"
		own := c
		if b.Sharded() {
			own = c.shards[rank.ShardOf(m, b.Shards)]
		}
		if err := s.client.ZAdd(ctx, s.zkey(&own.b, 0), redis.Z{Score: 5, Member: m}).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.client.HSet(ctx, s.metaKey(&own.b, 0), m, `{"r":1}`).Err(); err != nil {
			t.Fatal(err)
		}
		got := mustApply(t, s, incr(b.ID, "e1", m, 2))
		if got.Score != 7 || got.PrevScore != 5 {
			t.Fatalf("%s: %+v, want ann from its raw entry 5 to 7", b.ID, got)
		}
		for _, k := range cfgs {
			v, err := s.client.HMGet(ctx, k, "a", "sh", "me").Result()
			if err != nil || v[0] == nil || !strings.HasPrefix(v[0].(string), "incr desc first 600000") || v[1] != "1" || v[2] != "1" {
				t.Fatalf("%s: %v, %v; want the apply config, sh and me", k, v, err)
			}
		}
		if n, _ := s.client.HExists(ctx, s.metaKey(&own.b, 0), m).Result(); n {
			t.Fatalf("%s: the meta of an earlier event stays after one without meta", b.ID)
		}
		p, err := s.Top(ctx, b.ID, "", 0, 10)
		if err != nil || len(p.Entries) != 1 || p.Entries[0].Score != 7 {
			t.Fatalf("%s: top %+v, %v; want ann alone at 7", b.ID, p, err)
		}
	}
}

// TestPlainBoardCommands: an event on a plain board runs the core step
// alone, no block's command: per call the config, the ban hash's
// existence, the records and the member hash read once, the seq taken
// and written, the member hash and the records written; per event of a
// new member a ZADD and a ZREVRANK (no raw ZSCORE: the board never had
// tiebreak shared), per event of a member on the board a ZSCORE, ZREVRANK
// before and after, ZREM and ZADD.
func TestPlainBoardCommands(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{HotInterval: -1})
	const id = "plain"
	mustPut(t, s, rank.DefaultBoard(id))
	mustApply(t, s, incr(id, "w", "w", 1)) // the config cached, the records' bucket made
	ctx := t.Context()
	events := func(round string) []rank.Event {
		var out []rank.Event
		for i := range 10 {
			e := incr(id, round+strconv.Itoa(i), "m"+strconv.Itoa(i), 5)
			e.Name = ""
			out = append(out, e)
		}
		return out
	}
	perCall := map[string]int64{"exists": 1, "incr": 1, "hset": 2}
	for _, round := range []struct {
		name   string
		events int
		want   map[string]int64
	}{
		{"new", 10, map[string]int64{"hmget": 4, "set": 1, "zadd": 10, "zrevrank": 10}},
		{"again", 10, map[string]int64{"hmget": 4, "set": 1, "zscore": 10, "zrevrank": 20, "zrem": 10, "zadd": 10}},
		// A call of one event reads its member-hash field with HGET, and its
		// INCR is the seq's one write.
		{"one", 1, map[string]int64{"hmget": 3, "hget": 1, "zscore": 1, "zrevrank": 2, "zrem": 1, "zadd": 1}},
	} {
		if err := s.client.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		for _, c := range runCall(t, s, events(round.name)[:round.events]...) {
			if c.err != nil {
				t.Fatal(c.err)
			}
		}
		got := commandCounts(t, s)
		for k, v := range perCall {
			round.want[k] += v
		}
		for k, v := range round.want {
			if got[k] != v {
				t.Errorf("%s: %d %s, want %d", round.name, got[k], k, v)
			}
		}
		for k, v := range got {
			if _, ok := round.want[k]; !ok && !slices.Contains([]string{"evalsha", "time", "ping", "hello", "info", "config|resetstat"}, k) {
				t.Errorf("%s: %d %s, want none", round.name, v, k)
			}
		}
	}
}

// commandCounts is INFO commandstats: command -> calls.
func commandCounts(t *testing.T, s *Store) map[string]int64 {
	t.Helper()
	info, err := s.client.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		out[strings.TrimPrefix(name, "cmdstat_")], _ = strconv.ParseInt(n, 10, 64)
	}
	return out
}
