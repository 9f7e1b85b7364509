package redisstore

// Sharded boards (PROTOCOL.md §9, R24). Shard i of board b is a key space
// of its own, the keys of a board whose hash tag is {b#i} ('#' never occurs
// in a board id): its config version copy, tie clock, names, period sets,
// counts, bans and idempotency records, so apply.lua runs on the member's
// shard unchanged but for its tie key (the store's time in µs, "@t").
// The board's own key space keeps the config, the board's change seq and
// nothing else.
//
// After the atomic step on the member's shard, a pipelined follow-up
// (shardFollowUp) makes the result global: rank and prev_rank add the
// entries strictly better on the other shards (read right after, so events
// on other shards meanwhile may be counted, as R24 allows), the board's seq
// moves by the batch's applied events (INCRBY on the board's key, one per
// board per batch), and the idempotency record is rewritten with that
// result so a duplicate answers it. Reads (shardPage, shardRanks) read the
// board's seq first, then every shard in one pipeline (go-redis splits it
// per master on a cluster), and merge: a seq a read returns covers every
// event whose seq is at most it, as on an unsharded board, because an
// event's seq is taken only after its step.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

// shardID is the key-space id of shard i of board b.
func shardID(board string, i int) string { return board + "#" + strconv.Itoa(i) }

// checkShards refuses a change of shards on an existing board
// (rank.CheckShardsChange).
func checkShards(old *rank.Board, b rank.Board) error {
	if old != nil {
		return rank.CheckShardsChange(*old, b)
	}
	return nil
}

// cachedShards builds the shards' configs and keys of a sharded board.
func (s *Store) cachedShards(b rank.Board, ver string) []cachedBoard {
	if !b.Sharded() {
		return nil
	}
	out := make([]cachedBoard, b.Shards)
	for i := range out {
		sub := b
		sub.ID, sub.Shards, sub.Group = shardID(b.ID, i), 0, "" // a shard's keys are its own slot
		out[i] = s.cachedOne(sub, ver)
		out[i].keys.tiebreak = string(b.Tiebreak) + "@t"
	}
	return out
}

// putShardVersions writes the config version to every shard's cfg hash,
// which apply.lua and shard.lua check. PutBoard calls it before writing the
// board's config: a caller holding the old version meets "stale" and
// re-reads, never a shard without the new version. A board just created
// also notes on each shard that it has no records of the format before
// buckets (ro, rs: rank/lua/prelude.lua), as putboard.lua does for the
// board, so its shards never look for them.
func (s *Store) putShardVersions(ctx context.Context, b rank.Board, ver string, created bool) error {
	if !b.Sharded() {
		return nil
	}
	pipe := s.client.Pipeline()
	for i := range b.Shards {
		if created {
			pipe.HSet(ctx, s.key(shardID(b.ID, i), "cfg"), "v", ver, "ro", "n", "rs", "0")
		} else {
			pipe.HSet(ctx, s.key(shardID(b.ID, i), "cfg"), "v", ver)
		}
	}
	_, err := pipe.Exec(ctx)
	return err
}

// deleteShards removes every shard's keys: the cfg copies first, so every
// later script on a shard finds the board unknown and writes nothing.
func (s *Store) deleteShards(ctx context.Context, b rank.Board) error {
	if !b.Sharded() {
		return nil
	}
	pipe := s.client.Pipeline()
	for i := range b.Shards {
		pipe.Del(ctx, s.key(shardID(b.ID, i), "cfg"))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	for i := range b.Shards {
		if err := s.deleteKeys(ctx, escapeGlob(s.cfg.Prefix)+":{"+escapeGlob(shardID(b.ID, i))+"}:*"); err != nil {
			return err
		}
	}
	return nil
}

// shardGroup marks c as an event of a sharded board (its shard's keys and
// the board) and returns what its events group by in a lane round: the
// shard's key-space id, else the board id. Lane only.
func (s *Store) shardGroup(ctx context.Context, bt *batch, c *call) string {
	c.shard, c.board = nil, nil
	cb, err := s.memoBoard(ctx, bt, c.e.Board)
	if err != nil || !cb.b.Sharded() {
		return c.e.Board
	}
	sh := &cb.shards[rank.ShardOf(c.e.Member, cb.b.Shards)]
	c.shard, c.board = sh.keys, cb // shared, never modified (memoBoard)
	return sh.b.ID
}

// cutMembers takes apply.lua's ";<new member>;<old member>;<record hash>"
// off a shard's reply (a refusal has none).
func (c *call) cutMembers(rep string) string {
	rec, zs, ok := strings.Cut(rep, ";")
	if !ok {
		return rep
	}
	var rest string
	c.newZ, rest, _ = strings.Cut(zs, ";")
	c.oldZ, c.recH, _ = strings.Cut(rest, ";")
	return rec
}

// stored is a score as the sorted sets hold it.
func stored(b rank.Board, score int64) string {
	if b.Order == rank.Asc {
		score = -score
	}
	return strconv.FormatInt(score, 10)
}

// tieArg is the member a count compares ties with: none on a shared board.
func tieArg(b rank.Board, z string) string {
	if b.Tiebreak == rank.Shared {
		return ""
	}
	return z
}

// shardFollowUp makes the results of calls applied on shards global (see
// the file comment). A call whose follow-up fails gets the failure: it was
// applied, and re-sending it is safe (R4), as after any unavailable.
// Lane only.
func (s *Store) shardFollowUp(ctx context.Context, calls []*call) {
	var todo []*call
	for _, c := range calls {
		if c.shard != nil && c.err == nil && !c.r.Duplicate {
			todo = append(todo, c)
		}
	}
	if len(todo) == 0 {
		return
	}
	// One count call per (board, period, other shard), one INCRBY per board.
	type part struct {
		board *cachedBoard
		shard int
		idx   int64
		args  []any
		refs  []*int64 // where each answer is added
	}
	var parts []*part
	byKey := map[string]*part{}
	seqs := map[string]*redis.IntCmd{}
	var order []string
	n := map[string]int64{}
	for _, c := range todo {
		n[c.e.Board]++
	}
	pipe := s.client.Pipeline()
	for _, c := range todo {
		b := c.board.b
		own := rank.ShardOf(c.e.Member, b.Shards)
		for j := range b.Shards {
			if j == own {
				continue
			}
			k := b.ID + "\x00" + strconv.Itoa(j) + "\x00" + strconv.FormatInt(c.r.Period, 10)
			p := byKey[k]
			if p == nil {
				p = &part{board: c.board, shard: j, idx: c.r.Period}
				byKey[k] = p
				parts = append(parts, p)
			}
			p.args = append(p.args, stored(b, c.r.Score), tieArg(b, c.newZ))
			p.refs = append(p.refs, &c.r.Rank)
			if c.r.PrevRank > 0 {
				p.args = append(p.args, stored(b, c.r.PrevScore), tieArg(b, c.oldZ))
				p.refs = append(p.refs, &c.r.PrevRank)
			}
		}
		if seqs[b.ID] == nil {
			order = append(order, b.ID)
			seqs[b.ID] = pipe.IncrBy(ctx, s.key(b.ID, "seq"), n[b.ID])
		}
	}
	cmds := make([]*redis.Cmd, len(parts))
	for i, p := range parts {
		cmds[i] = pipe.EvalSha(ctx, s.shard.sha, s.shardKeys(p.board.shards[p.shard], p.idx), append([]any{p.board.ver, "", 0, 0, 0, "count"}, p.args...)...)
	}
	_, err := pipe.Exec(ctx)
	if err != nil && isNoScript(err) {
		if err = s.shard.load(ctx, s.client); err == nil {
			for i, p := range parts {
				cmds[i] = s.client.EvalSha(ctx, s.shard.sha, s.shardKeys(p.board.shards[p.shard], p.idx), append([]any{p.board.ver, "", 0, 0, 0, "count"}, p.args...)...)
				if err = cmds[i].Err(); err != nil {
					break
				}
			}
		}
	}
	if err == nil {
		for i, p := range parts {
			a, _ := cmds[i].Val().([]any)
			if len(a) != len(p.refs) {
				err = fmt.Errorf("unexpected count reply %v", cmds[i].Val())
				break
			}
			for k, ref := range p.refs {
				*ref += num(a[k])
			}
		}
	}
	if err != nil {
		for _, c := range todo {
			c.err = s.fail("apply", c.e.Board, err)
		}
		return
	}
	next := map[string]int64{}
	for _, id := range order {
		next[id] = seqs[id].Val() - n[id]
	}
	rw := s.client.Pipeline()
	recs := make([]string, len(todo))
	for i, c := range todo {
		next[c.e.Board]++
		c.r.Seq = next[c.e.Board]
		recs[i] = fmt.Sprintf("%s,%d,%d,%d,%d,%d,%d", c.rec, c.r.Score, c.r.Rank, c.r.PrevRank, c.r.PrevScore, c.r.Seq, c.r.Period)
		rw.EvalSha(ctx, s.rerecord.sha, []string{c.recH}, c.e.Member+"|"+c.e.ID, recs[i])
	}
	_, err = rw.Exec(ctx)
	if err != nil && isNoScript(err) {
		// The script was lost (restart, failover): run loads it again.
		for i, c := range todo {
			if _, err = s.rerecord.run(ctx, s.client, []string{c.recH}, c.e.Member+"|"+c.e.ID, recs[i]); err != nil && !errors.Is(err, redis.Nil) {
				break
			}
		}
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		// The events stand; a retry of one would answer its shard's
		// result rather than the global one.
		s.log.Warn("redisstore: rewriting sharded idempotency records", "err", err)
	}
}

// shardKeys are shard.lua's keys for shard sh, period idx.
func (s *Store) shardKeys(sh cachedBoard, idx int64) []string {
	id := sh.b.ID
	return []string{sh.keys.cfg, sh.keys.seq, sh.keys.n, s.zkey(id, idx), s.mkey(id, idx), sh.keys.ban}
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
		seqCmd = s.client.Get(ctx, s.key(c.b.ID, "seq"))
		if err := seqCmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return 0, nil, err
		}
	}
	run := func() ([]*redis.Cmd, error) {
		pipe := s.client.Pipeline()
		if seq && !cluster {
			seqCmd = pipe.Get(ctx, s.key(c.b.ID, "seq"))
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

// shardEntries decodes raw member, score, name triples.
func shardEntries(a []any) ([]shardEntry, error) {
	out := make([]shardEntry, 0, len(a)/3)
	for i := 0; i+2 < len(a); i += 3 {
		z, _ := a[i].(string)
		raw, _ := a[i+1].(string)
		name, _ := a[i+2].(string)
		sc, err := parseScore(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, shardEntry{z: z, score: sc, name: name})
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
	return rank.Entry{Rank: rk, Member: id, Score: sc, Name: e.name}
}

// shardPage is Top and Count of a sharded board: the entries of every
// shard that can be among the first offset+limit (R24 bounds it), merged.
// Each shard is first asked for a share of the window with a margin, and
// asked again for the whole window only when its last entry read ranks
// inside the window (its next ones might too): with members spread by a
// hash, a shard holds far more than twice its share of a page rarely.
//
// Plain commands, not shard.lua: a page reads N shards, and a script
// call's fixed cost times N made a 16-shard top-100 cost 4× an unsharded
// one in Redis time. What the scripts check is checked here instead: the
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
		seqCmd = s.client.Get(ctx, s.key(c.b.ID, "seq"))
	}
	pipe := s.client.Pipeline()
	if !cluster {
		seqCmd = pipe.Get(ctx, s.key(c.b.ID, "seq"))
	}
	cards := make([]*redis.IntCmd, n)
	exps := make([]*redis.StringCmd, n)
	ranges := make([]*redis.ZSliceCmd, n)
	for i, sh := range c.shards {
		z := s.zkey(sh.b.ID, idx)
		cards[i] = pipe.ZCard(ctx, z)
		exps[i] = pipe.HGet(ctx, sh.keys.ban, "|exp")
		if share > 0 {
			ranges[i] = pipe.ZRevRangeWithScores(ctx, z, 0, int64(share-1))
		}
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
					again[i] = pipe.ZRevRangeWithScores(ctx, s.zkey(c.shards[i].b.ID, idx), 0, int64(win-1))
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
	// Names of the page's entries, one HMGET per shard that has some.
	page := all[min(offset, len(all)):min(len(all), win)]
	ids := make([][]string, n)
	for _, e := range page {
		ids[e.shard] = append(ids[e.shard], e.id())
	}
	names := make([]*redis.SliceCmd, n)
	pipe = s.client.Pipeline()
	for i, l := range ids {
		if len(l) > 0 {
			names[i] = pipe.HMGet(ctx, c.shards[i].keys.n, l...)
		}
	}
	if len(page) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return rank.Page{}, false, err
		}
	}
	next := make([]int, n)
	for k, e := range page {
		name, _ := names[e.shard].Val()[next[e.shard]].(string)
		next[e.shard]++
		e.name = name
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
				if len(a) < p+3*(nu+nd) {
					return fmt.Errorf("unexpected win reply %v", a)
				}
				up, err := shardEntries(a[p : p+3*nu])
				if err != nil {
					return err
				}
				down, err := shardEntries(a[p+3*nu : p+3*(nu+nd)])
				if err != nil {
					return err
				}
				pos[i] = p + 3*(nu+nd)
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

// sharded reports whether board is a sharded board (from the cache; an
// unknown board is not, and its read fails as usual).
func (s *Store) sharded(ctx context.Context, board string) bool {
	c, err := s.board(ctx, board)
	return err == nil && c.b.Sharded()
}

// moderated is where ban.lua runs for a member of board c: the board, or
// on a sharded board the member's shard (every shard when member is "",
// an expiry sweep).
func (s *Store) moderated(c cachedBoard, member string) []cachedBoard {
	switch {
	case !c.b.Sharded():
		return []cachedBoard{c}
	case member == "":
		return c.shards
	}
	return []cachedBoard{c.shards[rank.ShardOf(member, c.b.Shards)]}
}

// banHashes reads the board's ban hash, or every shard's, merged: a
// member's record sits on its shard only.
func (s *Store) banHashes(ctx context.Context, board string) (map[string]string, error) {
	c, err := s.board(ctx, board)
	if err != nil {
		return nil, err
	}
	targets := s.moderated(c, "")
	pipe := s.client.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(targets))
	for i, t := range targets {
		cmds[i] = pipe.HGetAll(ctx, t.keys.ban)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	all := map[string]string{}
	for _, cmd := range cmds {
		for k, v := range cmd.Val() {
			if k != "|exp" {
				all[k] = v
			}
		}
	}
	return all, nil
}
