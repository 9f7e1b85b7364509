package redisstore

// Sharded boards, the write side: grouping a lane round's events by shard
// and the follow-up that makes their results global (see shard.go).

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

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

// countPart is one count call of a follow-up: the queries of a lane
// round's events to one other shard of a board, in one period. Equal
// queries are asked once; each answer is added to every result field
// that asked it.
type countPart struct {
	board *cachedBoard
	shard int
	idx   int64
	args  []any          // shard.lua's count pairs
	refs  [][]*int64     // per pair, the fields its answer is added to
	seen  map[string]int // "<score> <member>" -> its pair
}

// ask adds the query (stored score sc, tie member z) whose answer goes
// into *ref.
func (p *countPart) ask(sc, z string, ref *int64) {
	k := sc + " " + z
	if i, ok := p.seen[k]; ok {
		p.refs[i] = append(p.refs[i], ref)
		return
	}
	p.seen[k] = len(p.refs)
	p.args = append(p.args, sc, z)
	p.refs = append(p.refs, []*int64{ref})
}

// shardFollowUp makes the results of calls applied on shards global (see
// the file comment). The events of a board whose acks carry ranks
// (ack_rank global) get them in rankFollowUp; the others, and the
// duplicates of their records, only their seqs, in seqFollowUp. A call
// whose follow-up fails gets the failure: it was applied, and re-sending
// it is safe (R4), as after any unavailable. Lane only.
func (s *Store) shardFollowUp(ctx context.Context, calls []*call) {
	var ranked, unranked []*call
	for _, c := range calls {
		switch {
		case c.shard == nil || c.err != nil:
		case c.r.Rank == 0: // its record says its ranks were not read
			unranked = append(unranked, c)
		case !c.r.Duplicate:
			ranked = append(ranked, c)
		}
	}
	if len(unranked) > 0 {
		s.seqFollowUp(ctx, unranked)
	}
	if len(ranked) > 0 {
		s.rankFollowUp(ctx, ranked)
	}
}

// seqFollowUp gives calls, events applied on shards without their ranks
// read and duplicates of such events, their boards' seqs, in one
// shardseq.lua call per board, all in one pipeline per lane round: the
// events this round applied take consecutive seqs with one entry per
// board and round (their records name the round: roundToken); a
// duplicate finds its first attempt's round, or the field of its own a
// record without a round (one made before round tokens) has. Lane only.
func (s *Store) seqFollowUp(ctx context.Context, calls []*call) {
	// A round's events of one board: the places it applied, and each
	// place's order among them.
	type round struct {
		id    string
		min   int64
		bits  []byte
		entry int
	}
	type board struct {
		seq    string
		keep   int64
		rounds []*round
		others [][]any // the duplicates' and records-without-round entries, in order
		reply  []any
	}
	// Where a call's seq comes from: its board's reply entry, and its
	// place when that entry is a round's.
	type from struct {
		bd    *board
		r     *round
		entry int
		place int64
	}
	var boards []*board
	byBoard := map[string]*board{}
	at := make([]from, len(calls))
	for k, c := range calls {
		bd := byBoard[c.e.Board]
		if bd == nil {
			// A minute's fields outlive every record written in it: a
			// record lives at most two windows and a quarter.
			w := time.Duration(c.board.b.IdempotencyWindow)
			bd = &board{seq: c.board.keys.seq, keep: (2*w + w/4 + time.Minute).Milliseconds()}
			byBoard[c.e.Board] = bd
			boards = append(boards, bd)
		}
		own := !c.found || c.recTok == c.token // applied by this call
		tok := c.token
		if !own {
			tok = c.recTok
		}
		minute, id, place, ok := roundOf(tok)
		switch {
		case ok && own:
			i := slices.IndexFunc(bd.rounds, func(r *round) bool { return r.id == id })
			if i < 0 {
				i = len(bd.rounds)
				bd.rounds = append(bd.rounds, &round{id: id, min: minute})
			}
			r := bd.rounds[i]
			for int64(len(r.bits)) <= place {
				r.bits = append(r.bits, '0')
			}
			r.bits[place] = '1'
			at[k] = from{bd: bd, r: r, place: place}
		case ok:
			at[k] = from{bd: bd, entry: len(bd.others)}
			bd.others = append(bd.others, []any{"d", minute, id, place})
		default:
			at[k] = from{bd: bd, entry: len(bd.others)}
			field := strconv.Itoa(rank.ShardOf(c.e.Member, c.board.b.Shards)) + "." + strconv.FormatInt(c.r.Seq, 10)
			bd.others = append(bd.others, []any{"l", c.r.Seq / 60_000_000, field}) // the tie key is in µs
		}
	}
	seqs := make([]scriptCall, len(boards))
	for i, bd := range boards {
		args := []any{"", s.nowArg(), bd.keep}
		for e, r := range bd.rounds {
			r.entry = e
			args = append(args, "r", r.min, r.id, string(r.bits))
		}
		for _, o := range bd.others {
			args = append(args, o...)
		}
		seqs[i] = scriptCall{keys: []string{bd.seq}, args: args}
	}
	err := s.evalPipe(ctx, s.client.Pipeline(), s.shardSeq, seqs)
	for i, bd := range boards {
		bd.reply, _ = seqs[i].res.Val().([]any)
		if err == nil && len(bd.reply) != len(bd.rounds)+len(bd.others) {
			err = fmt.Errorf("unexpected seqs reply %v", seqs[i].res.Val())
		}
	}
	for k, c := range calls {
		if err != nil {
			c.err = s.fail("apply", c.e.Board, err)
			continue
		}
		f := at[k]
		if f.r == nil {
			c.r.Seq = num(f.bd.reply[len(f.bd.rounds)+f.entry])
			continue
		}
		// The event's order among those its round applied.
		ord := bytes.Count(f.r.bits[:f.place], []byte{'1'})
		switch v := f.bd.reply[f.r.entry].(type) {
		case int64: // the round's base
			c.r.Seq = v + int64(ord) + 1
		case []any: // the round's seqs, one per event (a duplicate came first)
			if ord < len(v) {
				c.r.Seq = num(v[ord])
				continue
			}
			c.err = s.fail("apply", c.e.Board, fmt.Errorf("unexpected seqs reply %v", v))
		default:
			c.err = s.fail("apply", c.e.Board, fmt.Errorf("unexpected seqs reply %v", v))
		}
	}
}

// rankFollowUp makes the results of calls applied on shards of boards
// whose acks carry ranks global in two pipelines per lane round, whatever
// the round's number of events: first one count call per (board, period,
// other shard) holding all the round's queries to that shard, and one
// INCRBY per board; then one rerecord.lua call per bucket hash holding all
// the records written in it. Every record is rewritten: its seq is the
// board's global one, which only the follow-up knows. Lane only.
func (s *Store) rankFollowUp(ctx context.Context, todo []*call) {
	var parts []*countPart
	byKey := map[string]*countPart{}
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
		newSc, newZ := stored(b, c.r.Score), tieArg(b, c.newZ)
		// A member whose entry did not move (a best board's lower score, a
		// zero delta) has its rank before equal to its rank after.
		samePrev := c.r.PrevRank > 0 && c.r.PrevScore == c.r.Score && c.oldZ == c.newZ
		for j := range b.Shards {
			if j == own {
				continue
			}
			k := b.ID + "\x00" + strconv.Itoa(j) + "\x00" + strconv.FormatInt(c.r.Period, 10)
			p := byKey[k]
			if p == nil {
				p = &countPart{board: c.board, shard: j, idx: c.r.Period, seen: map[string]int{}}
				byKey[k] = p
				parts = append(parts, p)
			}
			p.ask(newSc, newZ, &c.r.Rank)
			switch {
			case samePrev:
				p.ask(newSc, newZ, &c.r.PrevRank)
			case c.r.PrevRank > 0:
				p.ask(stored(b, c.r.PrevScore), tieArg(b, c.oldZ), &c.r.PrevRank)
			}
		}
		if seqs[b.ID] == nil {
			order = append(order, b.ID)
			seqs[b.ID] = pipe.IncrBy(ctx, s.key(&b, "seq"), n[b.ID])
		}
	}
	counts := make([]scriptCall, len(parts))
	for i, p := range parts {
		counts[i] = scriptCall{keys: s.shardKeys(p.board.shards[p.shard], p.idx), args: append([]any{p.board.ver, "", 0, 0, 0, "count"}, p.args...)}
	}
	err := s.evalPipe(ctx, pipe, s.shard, counts)
	if err == nil {
		for i, p := range parts {
			a, _ := counts[i].res.Val().([]any)
			if len(a) != len(p.refs) {
				err = fmt.Errorf("unexpected count reply %v", counts[i].res.Val())
				break
			}
			for k, refs := range p.refs {
				for _, ref := range refs {
					*ref += num(a[k])
				}
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
	var rewrites []scriptCall
	inHash := map[string]int{} // bucket hash -> its rewrite
	for _, c := range todo {
		next[c.e.Board]++
		c.r.Seq = next[c.e.Board]
		i, ok := inHash[c.recH]
		if !ok || len(rewrites[i].args) >= 2*maxPerRerecord {
			i = len(rewrites)
			inHash[c.recH] = i
			rewrites = append(rewrites, scriptCall{keys: []string{c.recH}})
		}
		rewrites[i].args = append(rewrites[i].args, c.e.Member+"|"+c.e.ID,
			fmt.Sprintf("%s,%d,%d,%d,%d,%d,%d%s", c.rec, c.r.Score, c.r.Rank, c.r.PrevRank, c.r.PrevScore, c.r.Seq, c.r.Period, recordFields(c.r)))
	}
	if err := s.evalPipe(ctx, s.client.Pipeline(), s.rerecord, rewrites); err != nil {
		// The events stand; a retry of one would answer its shard's
		// result rather than the global one.
		s.log.Warn("redisstore: rewriting sharded idempotency records", "err", err)
	}
}

// maxPerRerecord caps the records of one rerecord.lua call, whose HMGET
// and HSET unpack them (Lua's stack limit).
const maxPerRerecord = 1000

// scriptCall is one EVALSHA of evalPipe and its reply.
type scriptCall struct {
	keys []string
	args []any
	res  *redis.Cmd
}

// evalPipe sends pipe, with sc run once per call of calls added after
// what pipe holds, and returns its first error. When the server had lost
// the script (restart, failover), it loads it and runs the calls that met
// NOSCRIPT again, one by one: none of them had run.
func (s *Store) evalPipe(ctx context.Context, pipe redis.Pipeliner, sc *script, calls []scriptCall) error {
	for i := range calls {
		calls[i].res = pipe.EvalSha(ctx, sc.sha, calls[i].keys, calls[i].args...)
	}
	sent, err := pipe.Exec(ctx)
	if err == nil || !isNoScript(err) {
		return err
	}
	for _, c := range sent {
		if err := c.Err(); err != nil && !isNoScript(err) {
			return err
		}
	}
	loaded := false
	for i := range calls {
		c := &calls[i]
		if !isNoScript(c.res.Err()) {
			continue
		}
		if !loaded {
			if err := sc.load(ctx, s.client); err != nil {
				return err
			}
			loaded = true
		}
		c.res = s.client.EvalSha(ctx, sc.sha, c.keys, c.args...)
		if err := c.res.Err(); err != nil {
			return err
		}
	}
	return nil
}
