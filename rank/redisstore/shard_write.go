package redisstore

// Sharded boards, the write side: grouping a lane round's events by shard
// and the follow-up that makes their results global (see shard.go).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

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
