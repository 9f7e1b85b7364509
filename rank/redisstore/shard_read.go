package redisstore

// Sharded boards, the read side: a page or ranks read from every shard in
// one pipeline and merged (see shard.go).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/rank"
)

// shardKeys are shard.lua's keys for shard sh, period idx.
func (s *Store) shardKeys(sh cachedBoard, idx int64) []string {
	b := &sh.b
	return []string{sh.keys.cfg, sh.keys.seq, sh.keys.n, s.zkey(b, idx), s.mkey(b, idx), sh.keys.ban, s.metaKey(b, idx)}
}

// shardPeriod is the period index a read of a sharded board reads (one
// for every shard, picked by the store clock estimate rather than by each
// shard's script) and the index the page reports.
func shardPeriod(b rank.Board, sel rank.PeriodSel, now time.Time) (read, shown int64, err error) {
	sl, err := slotsFor(b, sel, now)
	if err != nil {
		return 0, 0, err
	}
	slot := int64(1)
	if sl.bound > 0 && ms(now) >= sl.bound {
		slot = 2
	}
	read = sl.a
	if slot == 2 {
		read = sl.b
	}
	return read, sl.pick(slot), nil
}

// shardRun runs one shard.lua op on the shards of c listed in which (nil:
// every shard; args after the op, per shard) in one pipeline, and returns
// the replies in that order. With seq it first reads the board's seq:
// in the same pipeline on one Redis, which runs it in order, and in a
// round trip of its own on a cluster, whose pipeline runs per master
// concurrently. Either way the seq is read before any shard.
func (s *Store) shardRun(ctx context.Context, c cachedBoard, idx int64, nowArg string, op string, which []int, seq bool, args func(i int) []any) (int64, [][]any, error) {
	if which == nil {
		which = make([]int, len(c.shards))
		for i := range which {
			which[i] = i
		}
	}
	_, cluster := s.client.(*redis.ClusterClient)
	var seqCmd *redis.StringCmd
	if seq && cluster {
		seqCmd = s.client.Get(ctx, s.key(&c.b, "seq"))
		if err := seqCmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return 0, nil, err
		}
	}
	run := func() ([]*redis.Cmd, error) {
		pipe := s.client.Pipeline()
		if seq && !cluster {
			seqCmd = pipe.Get(ctx, s.key(&c.b, "seq"))
		}
		cmds := make([]*redis.Cmd, len(which))
		for k, i := range which {
			cmds[k] = pipe.EvalSha(ctx, s.shard.sha, s.shardKeys(c.shards[i], idx), append([]any{c.ver, nowArg, 0, 0, 0, op}, args(i)...)...)
		}
		_, err := pipe.Exec(ctx)
		if errors.Is(err, redis.Nil) {
			err = nil // the seq of a board without events yet
		}
		return cmds, err
	}
	cmds, err := run()
	if err != nil && isNoScript(err) {
		if err = s.shard.load(ctx, s.client); err == nil {
			cmds, err = run()
		}
	}
	if err != nil {
		return 0, nil, err
	}
	var n int64
	if seqCmd != nil {
		n, _ = seqCmd.Int64() // redis.Nil: no event yet, 0
	}
	out := make([][]any, len(cmds))
	for i, cmd := range cmds {
		a, ok := cmd.Val().([]any)
		if !ok {
			return 0, nil, fmt.Errorf("unexpected reply %v", cmd.Val())
		}
		out[i] = a
	}
	return n, out, nil
}

// shardRead resolves the board and period and runs op, again after a
// stale config, a ban expiry or a clock refresh.
func (s *Store) shardRead(ctx context.Context, op, board string, sel rank.PeriodSel, f func(c cachedBoard, idx int64, nowArg string) error) (cachedBoard, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		c, err := s.board(ctx, board)
		if err != nil {
			return cachedBoard{}, 0, s.fail(op, board, err)
		}
		now, nowArg := s.now(ctx, c.b)
		idx, shown, err := shardPeriod(c.b, sel, now)
		if err != nil {
			return cachedBoard{}, 0, fmt.Errorf("redisstore: %s %s: %w", op, board, err)
		}
		if err := f(c, idx, nowArg); err != nil {
			if s.retryable(ctx, board, err, attempt) {
				continue
			}
			return cachedBoard{}, 0, s.fail(op, board, err)
		}
		return c, shown, nil
	}
}

// shardEntry is one entry a shard returned, before the merge.
type shardEntry struct {
	z     string // the sorted-set member: tie key and member id
	score int64  // as stored
	name  string
	meta  meta.Meta
	shard int
}

// id is the member id: z without its tie prefix.
func (e shardEntry) id() string {
	if len(e.z) > 17 && e.z[16] == '|' {
		return e.z[17:]
	}
	return e.z
}

// before reports whether x ranks ahead of y: a higher stored score, then
// the greater sorted-set member (Redis's REV order of ties).
func (x shardEntry) before(y shardEntry) bool {
	if x.score != y.score {
		return x.score > y.score
	}
	return x.z > y.z
}

// shardEntries decodes raw member, score, name, meta quadruples.
func shardEntries(a []any) ([]shardEntry, error) {
	out := make([]shardEntry, 0, len(a)/4)
	for i := 0; i+3 < len(a); i += 4 {
		z, _ := a[i].(string)
		raw, _ := a[i+1].(string)
		name, _ := a[i+2].(string)
		mt, _ := a[i+3].(string)
		sc, err := parseScore(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, shardEntry{z: z, score: sc, name: name, meta: meta.Meta(mt)})
	}
	return out, nil
}

// merge sorts the entries of every shard into rank order.
func merge(lists ...[]shardEntry) []shardEntry {
	var all []shardEntry
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.SortFunc(all, cmpEntries)
	return all
}

func cmpEntries(x, y shardEntry) int {
	switch {
	case x.before(y):
		return -1
	case y.before(x):
		return 1
	}
	return 0
}

// entry is e as a ranked entry (member id without its tie prefix).
func (e shardEntry) entry(b rank.Board, rk int64) rank.Entry {
	id := e.id()
	sc := e.score
	if b.Order == rank.Asc {
		sc = -sc
	}
	return rank.Entry{Rank: rk, Member: id, Score: sc, Name: e.name, Meta: e.meta}
}

// shardPage is Top and Count of a sharded board: the entries of every
// shard that can be among the first offset+limit (R24 bounds it), merged.
// Each shard is first asked for a share of the window with a margin, and
// asked again for the whole window only when its last entry read ranks
// inside the window (its next ones might too): with members spread by a
// hash, a shard holds far more than twice its share of a page rarely.
//
// Plain commands, not shard.lua: a page reads N shards, and a script
// call's fixed cost would be paid N times. What the scripts check is checked here instead: the
// config version through the engine's config cache (a version changes
// nothing a page reads but the order and tiebreak, which the cache gives),
// and ban expiry from each shard's '|exp' field against the store clock.
func (s *Store) shardPage(ctx context.Context, op, board string, sel rank.PeriodSel, offset, limit int) (rank.Page, error) {
	if s.closed.Load() {
		return rank.Page{}, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		c, err := s.board(ctx, board)
		if err != nil {
			return rank.Page{}, s.fail(op, board, err)
		}
		if err := c.b.CheckWindow(offset, limit); err != nil {
			return rank.Page{}, fmt.Errorf("redisstore: %s %s: %w", op, board, err)
		}
		now, _ := s.now(ctx, c.b)
		if now.IsZero() {
			now = s.clock.now(ctx, s.client)
		}
		idx, shown, err := shardPeriod(c.b, sel, now)
		if err != nil {
			return rank.Page{}, fmt.Errorf("redisstore: %s %s: %w", op, board, err)
		}
		p, due, err := s.shardPageOnce(ctx, c, idx, now, offset, limit)
		if err == nil && due && attempt < staleRetries {
			// A ban's until has passed: lift it first (R21), then read.
			if err = s.expireBans(ctx, board); err == nil {
				continue
			}
		}
		if err != nil {
			return rank.Page{}, s.fail(op, board, err)
		}
		p.Board, p.Period = board, shown
		return p, nil
	}
}

// shardPageOnce reads one page of period idx of sharded board c; due
// reports a ban whose until has passed (nothing is read then).
func (s *Store) shardPageOnce(ctx context.Context, c cachedBoard, idx int64, now time.Time, offset, limit int) (rank.Page, bool, error) {
	win := offset + limit
	if limit == 0 {
		win = 0
	}
	n := len(c.shards)
	share := min(win, 2*((win+n-1)/n)+4)
	_, cluster := s.client.(*redis.ClusterClient)
	var seqCmd *redis.StringCmd
	if cluster {
		// Before any shard (see shardRun).
		seqCmd = s.client.Get(ctx, s.key(&c.b, "seq"))
	}
	pipe := s.client.Pipeline()
	if !cluster {
		seqCmd = pipe.Get(ctx, s.key(&c.b, "seq"))
	}
	cards := make([]*redis.IntCmd, n)
	exps := make([]*redis.StringCmd, n)
	ranges := make([]*redis.ZSliceCmd, n)
	hasMeta := make([]*redis.IntCmd, n)
	for i, sh := range c.shards {
		z := s.zkey(&sh.b, idx)
		cards[i] = pipe.ZCard(ctx, z)
		exps[i] = pipe.HGet(ctx, sh.keys.ban, "|exp")
		if share > 0 {
			ranges[i] = pipe.ZRevRangeWithScores(ctx, z, 0, int64(share-1))
		}
		// After the range (the same node runs a pipeline's commands in
		// order): a shard without meta then held none for what it gave.
		hasMeta[i] = pipe.Exists(ctx, s.metaKey(&sh.b, idx))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return rank.Page{}, false, err
	}
	if err := seqCmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
		return rank.Page{}, false, err
	}
	seq, _ := seqCmd.Int64()
	p := rank.Page{Offset: offset, Seq: seq, Entries: []rank.Entry{}}
	for i := range c.shards {
		if e, err := exps[i].Int64(); err == nil && now.UnixMilli() >= e {
			return rank.Page{}, true, nil
		}
		p.Total += cards[i].Val()
	}
	if share == 0 {
		return p, false, nil
	}
	lists := make([][]shardEntry, n)
	for i := range c.shards {
		lists[i] = zEntries(ranges[i].Val(), i)
	}
	all := merge(lists...)
	if share < win {
		// A shard cut short whose last entry is inside the window must
		// give the whole window.
		pipe := s.client.Pipeline()
		again := map[int]*redis.ZSliceCmd{}
		for i, l := range lists {
			if int64(len(l)) < cards[i].Val() && len(l) > 0 {
				if pos, _ := slices.BinarySearchFunc(all, l[len(l)-1], cmpEntries); pos < win-1 {
					again[i] = pipe.ZRevRangeWithScores(ctx, s.zkey(&c.shards[i].b, idx), 0, int64(win-1))
					hasMeta[i] = pipe.Exists(ctx, s.metaKey(&c.shards[i].b, idx))
				}
			}
		}
		if len(again) > 0 {
			if _, err := pipe.Exec(ctx); err != nil {
				return rank.Page{}, false, err
			}
			for i, cmd := range again {
				lists[i] = zEntries(cmd.Val(), i)
			}
			all = merge(lists...)
		}
	}
	// Names of the page's entries, one HMGET per shard that has some; on a
	// shard that kept meta at the range read, shard.lua's meta op instead,
	// which reads names and meta in one step and gives an entry's meta
	// only if the entry still has the score the page shows (R26).
	page := all[min(offset, len(all)):min(len(all), win)]
	ids := make([][]string, n)
	pairs := make([][]any, n)
	for _, e := range page {
		ids[e.shard] = append(ids[e.shard], e.id())
		pairs[e.shard] = append(pairs[e.shard], strconv.FormatInt(e.score, 10), e.z)
	}
	run := func() ([]*redis.SliceCmd, []*redis.Cmd, error) {
		names := make([]*redis.SliceCmd, n)
		metas := make([]*redis.Cmd, n)
		pipe := s.client.Pipeline()
		for i, l := range ids {
			switch {
			case len(l) == 0:
			case hasMeta[i].Val() > 0:
				metas[i] = pipe.EvalSha(ctx, s.shard.sha, s.shardKeys(c.shards[i], idx), append([]any{c.ver, "", 0, 0, 0, "meta"}, pairs[i]...)...)
			default:
				names[i] = pipe.HMGet(ctx, c.shards[i].keys.n, l...)
			}
		}
		if len(page) == 0 {
			return names, metas, nil
		}
		_, err := pipe.Exec(ctx)
		if errors.Is(err, redis.Nil) {
			err = nil
		}
		return names, metas, err
	}
	names, metas, err := run()
	if err != nil && isNoScript(err) {
		if err = s.shard.load(ctx, s.client); err == nil {
			names, metas, err = run()
		}
	}
	if err != nil {
		return rank.Page{}, false, err
	}
	next := make([]int, n)
	for k, e := range page {
		j := next[e.shard]
		next[e.shard]++
		if names[e.shard] != nil {
			e.name, _ = names[e.shard].Val()[j].(string)
		} else {
			a, _ := metas[e.shard].Val().([]any)
			if len(a) < 2*(j+1) {
				return rank.Page{}, false, fmt.Errorf("unexpected meta reply %v", a)
			}
			e.name, _ = a[2*j].(string)
			mt, _ := a[2*j+1].(string)
			e.meta = meta.Meta(mt)
		}
		p.Entries = append(p.Entries, e.entry(c.b, sharedRank(c.b, all, offset+k)))
	}
	return p, false, nil
}

// zEntries are a ZREVRANGE WITHSCORES reply's entries of shard i.
func zEntries(zs []redis.Z, i int) []shardEntry {
	out := make([]shardEntry, len(zs))
	for k, z := range zs {
		m, _ := z.Member.(string)
		out[k] = shardEntry{z: m, score: int64(z.Score), shard: i}
	}
	return out
}

// sharedRank is the rank of all[k], a prefix of the merged board: its
// position, or on a shared board 1 + the entries of a better score (all
// in the prefix, before it).
func sharedRank(b rank.Board, all []shardEntry, k int) int64 {
	if b.Tiebreak != rank.Shared {
		return int64(k + 1)
	}
	for k > 0 && all[k-1].score == all[k].score {
		k--
	}
	return int64(k + 1)
}

// shardRanks is Ranks of a sharded board: each member's entry from its
// shard, then every shard's count of entries ahead of it and its
// neighbours there, merged; on a shared board the window's first rank
// takes one more count of every shard.
func (s *Store) shardRanks(ctx context.Context, board string, sel rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	out := rank.Ranks{Board: board}
	_, shown, err := s.shardRead(ctx, "ranks", board, sel, func(c cachedBoard, idx int64, nowArg string) error {
		out.Members = make([]rank.MemberRank, len(members))
		out.Total = 0
		n := c.b.Shards
		// Round 1: totals and the members' entries.
		seq, found, err := s.shardRun(ctx, c, idx, nowArg, "find", nil, true, func(i int) []any {
			var a []any
			for _, m := range members {
				if rank.ShardOf(m, n) == i {
					a = append(a, m)
				}
			}
			return a
		})
		if err != nil {
			return err
		}
		out.Seq = seq
		type hit struct{ sc, z string }
		hits := make([]*hit, len(members))
		next := make([]int, n)
		for i, a := range found {
			if len(a) < 1 {
				return fmt.Errorf("unexpected find reply %v", a)
			}
			out.Total += num(a[0])
			found[i] = a[1:]
		}
		for k, m := range members {
			i := rank.ShardOf(m, n)
			a := found[i]
			j := next[i]
			next[i]++
			if len(a) < 3*(j+1) {
				return fmt.Errorf("unexpected find reply %v", a)
			}
			out.Members[k] = rank.MemberRank{Member: m}
			if num(a[3*j]) == 1 {
				sc, _ := a[3*j+1].(string)
				z, _ := a[3*j+2].(string)
				hits[k] = &hit{sc, z}
			}
		}
		// Round 2: counts ahead and neighbours on every shard.
		var pairs []any
		for _, h := range hits {
			if h != nil {
				pairs = append(pairs, h.sc, h.z)
			}
		}
		if len(pairs) == 0 {
			return nil
		}
		_, wins, err := s.shardRun(ctx, c, idx, nowArg, "win", nil, false, func(int) []any { return append([]any{around}, pairs...) })
		if err != nil {
			return err
		}
		pos := make([]int, n) // read position in each shard's reply
		type win struct {
			ahead, aheadScore int64
			start             int64
			above, below      []shardEntry
		}
		ws := make([]*win, len(members))
		for k, h := range hits {
			if h == nil {
				continue
			}
			w := &win{}
			var ups, downs [][]shardEntry
			for i, a := range wins {
				p := pos[i]
				if len(a) < p+4 {
					return fmt.Errorf("unexpected win reply %v", a)
				}
				w.ahead += num(a[p])
				w.aheadScore += num(a[p+1])
				nu, nd := int(num(a[p+2])), int(num(a[p+3]))
				p += 4
				if len(a) < p+4*(nu+nd) {
					return fmt.Errorf("unexpected win reply %v", a)
				}
				up, err := shardEntries(a[p : p+4*nu])
				if err != nil {
					return err
				}
				down, err := shardEntries(a[p+4*nu : p+4*(nu+nd)])
				if err != nil {
					return err
				}
				pos[i] = p + 4*(nu+nd)
				ups, downs = append(ups, up), append(downs, down)
			}
			above, below := merge(ups...), merge(downs...)
			w.above = above[max(0, len(above)-around):]
			w.below = below[:min(len(below), around+1)]
			w.start = w.ahead - int64(len(w.above))
			ws[k] = w
		}
		// Round 3 (shared): the rank of each window's first score.
		firsts := make([]int64, len(members))
		if c.b.Tiebreak == rank.Shared {
			var q []any
			for _, w := range ws {
				if w != nil {
					q = append(q, strconv.FormatInt(append(w.above, w.below...)[0].score, 10), "")
				}
			}
			_, counts, err := s.shardRun(ctx, c, idx, nowArg, "count", nil, false, func(int) []any { return q })
			if err != nil {
				return err
			}
			j := 0
			for k, w := range ws {
				if w == nil {
					continue
				}
				firsts[k] = 1
				for _, a := range counts {
					if len(a) <= j {
						return fmt.Errorf("unexpected count reply %v", a)
					}
					firsts[k] += num(a[j])
				}
				j++
			}
		}
		for k, w := range ws {
			if w == nil {
				continue
			}
			window := append(append([]shardEntry{}, w.above...), w.below...)
			mr := rank.MemberRank{Member: members[k], Found: true, Rank: w.ahead + 1, Around: make([]rank.Entry, 0, len(window))}
			if c.b.Tiebreak == rank.Shared {
				mr.Rank = w.aheadScore + 1
			}
			for i, e := range window {
				rk := w.start + int64(i) + 1
				if c.b.Tiebreak == rank.Shared {
					switch {
					case i == 0:
						rk = firsts[k]
					case window[i-1].score == e.score:
						rk = mr.Around[i-1].Rank
					}
				}
				en := e.entry(c.b, rk)
				mr.Around = append(mr.Around, en)
				if en.Member == members[k] {
					mr.Score, mr.Name = en.Score, en.Name
				}
			}
			out.Members[k] = mr
		}
		return nil
	})
	if err != nil {
		return rank.Ranks{}, err
	}
	out.Period = shown
	return out, nil
}
