package redisstore

// Apply's way: an event goes to its submitter's lane (lane.go), which
// groups a round's events by board (build), sends one apply.lua or hot.lua
// call per board (or shard) and round, of at most maxPerScript events, and
// reads each event's outcome
// from the reply (settle); the completer (completer.go) then runs the
// Done callbacks.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// Apply implements rank.Store: the event goes to its submitter's lane
// (lane.go), which sends it in its next pipeline; done is called from
// the lane's completer.
func (s *Store) Apply(ctx context.Context, e rank.Event, done rank.Done) {
	if !rank.ValidBoardID(e.Board) {
		done(rank.Result{}, fmt.Errorf("redisstore: apply %q: %w", e.Board, rank.ErrInvalidBoard))
		return
	}
	if s.closed.Load() {
		done(rank.Result{}, failClosed(e.Board))
		return
	}
	b, shards, err := s.laneOf(ctx, e.Board, e.Submitter)
	if err != nil {
		done(rank.Result{}, err)
		return
	}
	c := b.get()
	c.shards = shards
	c.ctx, c.deadline = ctx, s.monoNow().Add(s.cfg.Timeout)
	c.e, c.fin = e, done
	c.setRecord(e, s.attemptPrefix, s.attempts.Add(1))
	b.submit(c)
}

func failClosed(board string) error { return fmt.Errorf("redisstore: apply %s: %w", board, ErrClosed) }

func failCtx(board string, err error) error {
	return fmt.Errorf("redisstore: apply %s: %w", board, err)
}

// work is the lane's Redis work for one batch: it sets every call's
// outcome. A call whose caller is gone or whose deadline passed is not
// sent, so not applied. The others go out in one pipeline; those a script
// refused as stale (another node changed the config) or clock (a period
// boundary passed) changed nothing, so they are rebuilt from a fresh
// config and clock and sent again, all together in one pipeline per
// round, before the lane takes its next batch: order holds. So are those
// refused because their slot is being migrated (cluster.go), after a
// pause. Called by lane b only: b and bt are its own.
func (s *Store) work(b *lane, bt *batch) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	defer func() { clear(bt.memo); bt.memo = bt.memo[:0] }()
	bt.round, bt.roundN = "", 0
	now := time.Now()
	bt.send = bt.send[:0]
	for _, c := range bt.calls {
		err := c.ctx.Err()
		if err == nil && now.After(c.deadline) {
			err = context.DeadlineExceeded
		}
		if err != nil {
			c.err = s.fail("apply", c.e.Board, err) // not sent, so not applied
			continue
		}
		bt.send = append(bt.send, c)
	}
	busyUntil := now.Add(s.cfg.Timeout / busyShare)
	pause := busyPause
	for attempt := 0; len(bt.send) > 0; {
		s.build(ctx, bt)
		b.down.skip(bt) // a dead master's slots are answered without a send (cluster.go)
		b.exec(ctx, bt.cmds)
		bt.send = bt.send[:0]
		busy := 0
		for i := range bt.cmds {
			// A slot being migrated (cluster.go): the script ran nowhere,
			// so its calls go again, in order, after a pause.
			if m := &bt.cmds[i]; isBusy(m.res.Err()) && time.Now().Before(busyUntil) {
				bt.send = append(bt.send, m.calls...)
				busy++
				continue
			}
			b.down.note(&bt.cmds[i])
			bt.send = s.settle(ctx, &bt.cmds[i], attempt, bt.send)
		}
		clear(bt.cmds)
		if len(bt.send) > 0 {
			clear(bt.memo) // a refreshed config is read again
			bt.memo = bt.memo[:0]
		}
		if busy == 0 {
			if len(bt.send) > 0 {
				attempt++
			}
			// A board's events past maxPerScript go in the next round,
			// after this round's retries: order holds.
			bt.send = append(bt.send, bt.later...)
			clear(bt.later)
			bt.later = bt.later[:0]
			continue
		}
		s.log.Debug("redisstore: slot busy (migrating); applying again", "scripts", busy, "pause", pause)
		if !sleepCtx(ctx, pause) {
			continue // the next round fails on ctx
		}
		pause = min(2*pause, maxBusyPause)
	}
	s.shardFollowUp(ctx, bt.calls)
	b.wait.confirmEarlier(ctx, b.client, bt.calls)
	clear(bt.send)
	bt.send = bt.send[:0]
}

// maxPerScript caps the events of one apply.lua call, so one script stays
// short (Redis runs nothing else meanwhile). A board's further events go
// in the next round, not in a second call of the same pipeline: when the
// server has lost the script, another client may load it between two
// calls of one pipeline, so the first could meet NOSCRIPT (and be sent
// again) after the second was applied, out of order.
const maxPerScript = 128

// group is one board's events in a lane round.
type group struct {
	cb  cachedBoard
	seq string // the board's seq key (the shard's board's, on a shard)
	err error  // the board could not be resolved: every event gets it
	n   int    // events that passed Check
	off int    // where they start in batch.grouped
	// An import into a past period (rank.Event.Into, §18) is a group of
	// its own: that period takes slot P, and each event's at is
	// "r<ms>" (apply.lua: at that time, outside R17).
	into      rank.Period
	restoreAt string
}

// build fills bt.cmds with the commands applying bt.send: each board's
// events, in submission order, in one apply.lua call of at most
// maxPerScript (the rest to bt.later, for the next round). A call that cannot be sent (its board is unknown, Redis is down,
// the event fails Check) gets its error here. Lane only.
func (s *Store) build(ctx context.Context, bt *batch) {
	clear(bt.groupOf)
	bt.groups, bt.order = bt.groups[:0], bt.order[:0]
	for _, c := range bt.send {
		// A sharded board's events group by shard (shard.go).
		key := s.shardGroup(ctx, bt, c)
		if c.shard != nil {
			s.roundToken(ctx, bt, c)
		}
		if c.e.Into != 0 {
			key += "\x00" + strconv.FormatInt(c.e.Into, 10)
		}
		g, ok := bt.groupOf[key]
		if !ok {
			gr := group{}
			cb, err := s.memoBoard(ctx, bt, c.e.Board)
			switch {
			case err != nil:
				gr.err = err
			case c.shard != nil:
				gr.cb, gr.seq = cb.shards[rank.ShardOf(c.e.Member, cb.b.Shards)], cb.keys.seq
			default:
				gr.cb, gr.seq = *cb, cb.keys.seq
			}
			if gr.err == nil && c.e.Into != 0 {
				gr.into, gr.restoreAt, gr.err = s.restoreOf(ctx, cb.b, c.e.Into)
			}
			g = len(bt.groups)
			bt.groupOf[key] = g
			bt.groups = append(bt.groups, gr)
		}
		gr := &bt.groups[g]
		if gr.err == nil && gr.n == maxPerScript {
			bt.later = append(bt.later, c) // the next round's (work)
			bt.order = append(bt.order, -1)
			continue
		}
		err := gr.err
		if err == nil {
			if cerr := c.e.Check(gr.cb.b); cerr != nil {
				err = fmt.Errorf("redisstore: apply %s: %w", c.e.Board, cerr)
			}
		}
		if err != nil { // already wrapped
			c.err = err
			g = -1
		} else {
			gr.n++
			c.seq, c.restoreAt = gr.seq, gr.restoreAt
		}
		bt.order = append(bt.order, g)
	}
	// Place each board's events together, keeping their order.
	off := 0
	for g := range bt.groups {
		bt.groups[g].off = off
		off += bt.groups[g].n
	}
	bt.grouped = slices.Grow(bt.grouped[:0], off)[:off]
	next := bt.next[:0]
	for g := range bt.groups {
		next = append(next, bt.groups[g].off)
	}
	for i, c := range bt.send {
		if g := bt.order[i]; g >= 0 {
			bt.grouped[next[g]] = c
			next[g]++
		}
	}
	bt.next = next
	bt.cmds = bt.cmds[:0]
	for g := range bt.groups {
		gr := &bt.groups[g]
		evs := bt.grouped[gr.off : gr.off+gr.n : gr.off+gr.n]
		if len(evs) == 0 {
			continue
		}
		now, nowArg := s.now(ctx, gr.cb.b)
		switch {
		case gr.cb.b.Hot():
			_, nowArg = s.hotNow(ctx)
			bt.cmds = append(bt.cmds, s.hotApplyCmd(gr.cb, nowArg, evs))
		case gr.restoreAt != "":
			bt.cmds = append(bt.cmds, applyCmd(gr.cb, nowArg, s.restoreKeys(gr.cb, now, gr.into), evs))
		default:
			bt.cmds = append(bt.cmds, applyCmd(gr.cb, nowArg, s.periodKeys(gr.cb, now), evs))
		}
		bt.cmds[len(bt.cmds)-1].cfg = &gr.cb.b
	}
}

// applyCmd is the apply.lua call of calls, events of board c in order
// (see the script's header for the keys and arguments).
func applyCmd(c cachedBoard, nowArg string, pk *periodKeys, calls []*call) cmd {
	k := c.keys
	keys := make([]string, 0, 11+len(pk.dkeys))
	keys = append(keys, k.cfg, k.seq, k.n, pk.za, pk.ma, pk.zb, pk.mb, pk.zp, pk.mp, k.ban, k.guard)
	args := make([]any, 0, 12+8*len(calls)+len(pk.dargs))
	args = append(args, k.ver, nowArg, pk.args[0], pk.args[1], pk.args[2], pk.args[3], pk.args[4], pk.args[5], pk.args[6],
		pk.pargs[0], pk.pargs[1], pk.pargs[2])
	for _, c := range calls {
		// The meta goes as a pointer into the call, as appendArgs's do.
		args = append(c.appendArgs(args), (*string)(&c.e.Meta))
	}
	keys = append(keys, pk.dkeys...) // derived boards (derived.go)
	// The blocks' per-event arguments go before DA and DK: the events'
	// verdicts (§16, apply_hold.lua), then their regions (§17, RG, the
	// last: apply_region.lua).
	d := pk.dargs
	da, _ := d[len(d)-2].(int)
	args = append(args, d[:len(d)-2]...)
	if c.b.Holds() {
		for _, c := range calls {
			args = append(args, verdictArg(&c.e))
		}
		da += len(calls)
	}
	if c.b.Regions {
		args = append(args, regionsArg(calls)) // region.go
		da++
	}
	args = append(args, da, d[len(d)-1])
	return cmd{calls: calls, keys: keys, args: args}
}

// settle sets the outcome of a command's calls from its reply, or appends
// them to again when the script refused them as stale or clock and
// another attempt is allowed (after refreshing the config or the clock).
// A refusal is of the whole call, so a refused event and every later one
// of its board come back together, in order.
func (s *Store) settle(ctx context.Context, m *cmd, attempt int, again []*call) []*call {
	board := m.calls[0].e.Board
	v, err := m.res.Result()
	if err != nil {
		if s.retryable(ctx, board, err, attempt) {
			return append(again, m.calls...)
		}
		err = s.fail("apply", board, err)
		for _, c := range m.calls {
			c.err = err
		}
		return again
	}
	// apply.lua and hot.lua join their replies with "\n" (one string, cut
	// here without allocating).
	joined, ok := v.(string)
	if !ok || strings.Count(joined, "\n") != len(m.calls)-1 {
		err := fmt.Errorf("redisstore: apply %s: unexpected reply %v", board, v)
		for _, c := range m.calls {
			c.err = err
		}
		return again
	}
	for _, c := range m.calls {
		var rep string
		rep, joined, _ = strings.Cut(joined, "\n")
		if c.shard != nil {
			rep = c.cutMembers(rep)
			c.recTok = recordToken(rep)
		}
		c.r, c.err = applyResult(c.e, rep, c.hash, c.token, m.cfg)
		c.r.Decimals = m.decimals
		c.found = strings.HasPrefix(rep, "1")
		if c.err == nil && m.unsynced != nil {
			c.err, c.unsynced = fmt.Errorf("redisstore: apply %s: %w", board, m.unsynced), true
		}
	}
	return again
}

// memoBoard is s.boardRef, read once per lane round (bt's). It is asked for every
// event (shardGroup), so it returns the entry itself: a copy is about 1 KB.
// The entry is shared: read it, never modify it.
func (s *Store) memoBoard(ctx context.Context, bt *batch, id string) (*cachedBoard, error) {
	for i := range bt.memo {
		if m := &bt.memo[i]; m.id == id {
			return m.c, nil
		}
	}
	c, err := s.boardRef(ctx, id)
	if err != nil {
		return nil, s.fail("apply", id, err)
	}
	if len(bt.memo) < 64 {
		bt.memo = append(bt.memo, boardMemo{id, c})
	}
	return c, nil
}

type boardMemo struct {
	id string
	c  *cachedBoard
}

// applyResult decodes one event's part of apply.lua's reply (see its
// header): "0" or "1" (duplicate) and the record, or "!" and an error code;
// "board_closed:<reason>" becomes the config's rank.ClosedError (R30).
func applyResult(e rank.Event, rep string, hash, token string, cfg *rank.Board) (rank.Result, error) {
	var r rank.Result
	var err error
	switch {
	case strings.HasPrefix(rep, "!"):
		code := rep[1:]
		if herr, ok := holdResult(code); ok {
			return rank.Result{}, fmt.Errorf("redisstore: apply %s: %w", e.Board, herr) // §16 (integrity.go)
		}
		if reason, ok := strings.CutPrefix(code, "board_closed:"); ok && cfg != nil {
			return rank.Result{}, fmt.Errorf("redisstore: apply %s: %w", e.Board, cfg.Closed(reason, e.At))
		}
		if sentinel, ok := scriptErrors[code]; ok {
			return rank.Result{}, fmt.Errorf("redisstore: apply %s: %w", e.Board, sentinel)
		}
		return rank.Result{}, fmt.Errorf("redisstore: apply %s: script error %q", e.Board, code)
	case strings.HasPrefix(rep, "0"), strings.HasPrefix(rep, "1"):
		var fields, hold, from string
		rep, hold, _ = strings.Cut(rep, "\t") // why the event held its member (§16)
		if cfg != nil && cfg.Regions {
			rep, from, _ = strings.Cut(rep, ";") // the region left (region.go)
		}
		r, fields, err = parseRecord(rep[0] == '1', rep[1:], hash, token)
		r.Hold, r.Held = hold, hasField(fields, "h")
		switch {
		case err != nil || cfg == nil:
		case cfg.Regions: // a region board has no cohorts
			if g := blockField(fields, "g"); g != "" { // apply_region.lua's
				err = regionOfRecord(&r, g, from)
			}
		default:
			if cohort := blockField(fields, ""); cohort != "" {
				r.Cohort, r.Tier, err = cohortName(*cfg, cohort)
			}
		}
		if applied := blockField(fields, "a"); err == nil && applied != "" { // apply_cap.lua: the part of the delta applied
			r.Capped = true
			if r.Applied, err = strconv.ParseInt(applied, 10, 64); err != nil {
				err = fmt.Errorf("unexpected record %q", rep)
			}
		}
	default:
		err = fmt.Errorf("unexpected reply %q", rep)
	}
	if err != nil {
		return rank.Result{}, fmt.Errorf("redisstore: apply %s: %w", e.Board, err)
	}
	r.Board, r.Member = e.Board, e.Member
	return r, nil
}

// recordToken is the attempt token of the record in reply rep ("0" or "1"
// and the record, "<hash>.<token>,…"), "" for a refusal.
func recordToken(rep string) string {
	if rep == "" || (rep[0] != '0' && rep[0] != '1') {
		return ""
	}
	first, _, _ := strings.Cut(rep[1:], ",")
	_, tok, _ := strings.Cut(first, ".")
	return tok
}

// parseRecord decodes an idempotency record. Its first field is
// "<payload hash>.<attempt token>": another hash is a conflict; the same
// hash with this call's own token is this call's result, not a duplicate.
// The fields apply.lua's blocks add after the seventh (a cohort board's
// cohort, "<tier>.<n>", see blockField; "h" when the member was held after
// the event, §16, see hasField) are returned apart, as they are.
func parseRecord(dup bool, rec string, hash, token string) (rank.Result, string, error) {
	// rec is "hash,score,rank,prev_rank,prev_score,seq,period[,field...]";
	// cut in place rather than strings.Split, which allocates per event.
	if strings.Count(rec, ",") < 6 {
		return rank.Result{}, "", fmt.Errorf("unexpected record %q", rec)
	}
	h, rest, _ := strings.Cut(rec, ",")
	h, recToken, _ := strings.Cut(h, ".")
	if h != hash {
		return rank.Result{}, "", rank.ErrIdempotencyConflict
	}
	var n [6]int64
	for i := range n {
		var f string
		f, rest, _ = strings.Cut(rest, ",") // after the period: the blocks' fields
		x, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return rank.Result{}, "", fmt.Errorf("unexpected record %q", rec)
		}
		n[i] = x
	}
	r := rank.Result{
		Score: n[0], Rank: n[1], PrevRank: n[2], PrevScore: n[3], Seq: n[4], Period: n[5],
		Had: n[2] > 0, Duplicate: dup && recToken != token,
	}
	if r.Rank == 0 { // not read: prev_rank -1 says the member had an entry
		r.Had, r.PrevRank = n[2] == -1, 0
	}
	return r, rest, nil
}

// blockField is the record field of apply.lua's block tagged tag (its
// first letter) among fields, the record's fields after the seventh joined
// by ","; tag "" is the cohort's, the one field that starts with a digit.
// "" when there is none.
func blockField(fields, tag string) string {
	for fields != "" {
		var f string
		f, fields, _ = strings.Cut(fields, ",")
		switch {
		case f == "":
		case tag == "" && f[0] >= '0' && f[0] <= '9':
			return f
		case tag != "" && strings.HasPrefix(f, tag):
			return f[len(tag):]
		}
	}
	return ""
}

// recordFields are the blocks' fields of r's record (apply.lua's header)
// that a rewrite of it keeps: a sharded board has no cohort.
func recordFields(r rank.Result) string {
	if r.Capped {
		return ",a" + strconv.FormatInt(r.Applied, 10)
	}
	return ""
}

// hasField reports whether fields (as blockField takes them) hold the
// field f itself.
func hasField(fields, f string) bool {
	for fields != "" {
		var x string
		x, fields, _ = strings.Cut(fields, ",")
		if x == f {
			return true
		}
	}
	return false
}
