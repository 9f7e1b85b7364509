package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// retryable reports whether a script failed because the caller's view of
// the config or the clock was stale, after refreshing that view.
func (s *Store) retryable(ctx context.Context, board string, err error, attempt int) bool {
	if attempt >= staleRetries {
		return false
	}
	switch scriptError(err) {
	case "stale":
		s.forget(board)
		return true
	case "clock":
		s.clock.invalidate()
		return true
	case "expired":
		// A ban's until has passed: lift it (moderation.go), then again.
		return s.expireBans(ctx, board) == nil
	case "hot":
		// A hot board's bucket ended: its boundary's steps (hot.go), then again.
		return s.catchUp(ctx, board) == nil
	}
	return false
}

// now reads the store clock once: the time to pick period keys with and the
// script's clock argument ("" = the script reads TIME).
func (s *Store) now(ctx context.Context, b rank.Board) (time.Time, string) {
	if s.cfg.Now != nil {
		t := s.cfg.Now()
		return t, strconv.FormatInt(t.UnixMilli(), 10)
	}
	if b.Reset == rank.None {
		return time.Time{}, "" // no periods: the time is not used
	}
	return s.clock.now(ctx, s.client), ""
}

// Now is the store clock: the injected one, else the estimate of Redis
// TIME (clock.go), resynced every few seconds.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if s.closed.Load() {
		return time.Time{}, ErrClosed
	}
	return s.clock.now(ctx, s.client), nil
}

// Apply implements rank.Store: the event goes to its submitter's lane
// (batcher.go), which sends it in its next pipeline; done is called from
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
	b := s.laneOf(e.Submitter)
	c := b.get()
	c.ctx, c.deadline = ctx, s.monoNow().Add(s.cfg.Timeout)
	c.e, c.fin = e, done
	c.setRecord(e, s.attemptPrefix, s.attempts.Add(1))
	b.submit(c)
}

// monoNow is the local time read from the monotonic clock alone: half
// the cost of a time.Now, which reads the wall clock too. Its wall reading
// drifts from the real one by whatever the wall clock was stepped since New,
// so it is for deadlines and durations (compared with times that carry a
// monotonic reading, as time.Now's do), never for the store clock.
func (s *Store) monoNow() time.Time { return s.epoch.Add(time.Since(s.epoch)) }

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
func (s *Store) work(b *batcher, bt *batch) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	defer func() { clear(bt.memo); bt.memo = bt.memo[:0] }()
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
			attempt++
			continue
		}
		s.log.Debug("redisstore: slot busy (migrating); applying again", "scripts", busy, "pause", pause)
		if !sleepCtx(ctx, pause) {
			continue // the next round fails on ctx
		}
		pause = min(2*pause, maxBusyPause)
	}
	s.shardFollowUp(ctx, bt.calls)
	clear(bt.send)
	bt.send = bt.send[:0]
}

// maxPerScript caps the events of one apply.lua call, so one script stays
// short (Redis runs nothing else meanwhile); a board's further events go
// in the next call of the same pipeline.
const maxPerScript = 64

// group is one board's events in a lane round.
type group struct {
	cb  cachedBoard
	err error // the board could not be resolved: every event gets it
	n   int   // events that passed Check
	off int   // where they start in batch.grouped
}

// build fills bt.cmds with the commands applying bt.send: each board's
// events, in submission order, in as few apply.lua calls as maxPerScript
// allows. A call that cannot be sent (its board is unknown, Redis is down,
// the event fails Check) gets its error here. Lane only.
func (s *Store) build(ctx context.Context, bt *batch) {
	clear(bt.groupOf)
	bt.groups, bt.order = bt.groups[:0], bt.order[:0]
	for _, c := range bt.send {
		// A sharded board's events group by shard (shard.go).
		key := s.shardGroup(ctx, bt, c)
		g, ok := bt.groupOf[key]
		if !ok {
			gr := group{}
			cb, err := s.memoBoard(ctx, bt, c.e.Board)
			switch {
			case err != nil:
				gr.err = err
			case c.shard != nil:
				gr.cb = cb.shards[rank.ShardOf(c.e.Member, cb.b.Shards)]
			default:
				gr.cb = *cb
			}
			g = len(bt.groups)
			bt.groupOf[key] = g
			bt.groups = append(bt.groups, gr)
		}
		gr := &bt.groups[g]
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
		evs := bt.grouped[gr.off : gr.off+gr.n]
		if len(evs) == 0 {
			continue
		}
		now, nowArg := s.now(ctx, gr.cb.b)
		if gr.cb.b.Hot() {
			_, nowArg = s.hotNow(ctx)
			for len(evs) > 0 {
				k := min(len(evs), maxPerScript)
				bt.cmds = append(bt.cmds, s.hotApplyCmd(gr.cb, nowArg, evs[:k:k]))
				bt.cmds[len(bt.cmds)-1].cfg = &gr.cb.b
				evs = evs[k:]
			}
			continue
		}
		pk := s.periodKeys(gr.cb, now)
		for len(evs) > 0 {
			k := min(len(evs), maxPerScript)
			bt.cmds = append(bt.cmds, applyCmd(gr.cb, nowArg, pk, evs[:k:k]))
			bt.cmds[len(bt.cmds)-1].cfg = &gr.cb.b
			evs = evs[k:]
		}
	}
}

// applyCmd is the apply.lua call of calls, events of board c in order
// (see the script's header for the keys and arguments).
func applyCmd(c cachedBoard, nowArg string, pk *periodKeys, calls []*call) cmd {
	k := c.keys
	keys := make([]string, 0, 13+len(calls))
	keys = append(keys, k.cfg, k.seq, k.n, pk.za, pk.ma, pk.zb, pk.mb, pk.zp, pk.mp, pk.cp, pk.ca, pk.cb, k.ban)
	args := make([]any, 0, 20+6*len(calls))
	args = append(args, k.ver, nowArg, pk.args[0], pk.args[1], pk.args[2], pk.args[3], pk.args[4], pk.args[5], pk.args[6],
		k.mode, k.order, k.tiebreak, k.window, pk.pargs[0], pk.pargs[1], pk.pargs[2],
		k.startsAt, k.endsAt, k.grace, k.maxSubs)
	for _, c := range calls {
		keys = append(keys, k.idem+c.e.Member+"|"+c.e.ID)
		args = c.appendArgs(args)
	}
	keys = append(keys, pk.dkeys...) // derived boards (derived.go)
	args = append(args, pk.dargs...)
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
		}
		c.r, c.err = applyResult(c.e, rep, c.hash, c.token, m.cfg)
		c.r.Decimals = m.decimals
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

// Board returns the config events are applied with, from the cache.
func (s *Store) Board(ctx context.Context, id string) (rank.Board, error) {
	if b, ok := s.CachedBoard(id); ok { // only valid ids are cached: a hit needs no check
		return *b, nil
	}
	if !rank.ValidBoardID(id) {
		return rank.Board{}, fmt.Errorf("redisstore: board %q: %w", id, rank.ErrInvalidBoard)
	}
	c, err := s.boardRef(ctx, id)
	if err != nil {
		return rank.Board{}, s.fail("board", id, err)
	}
	return c.b, nil
}

// CachedBoard implements rank.BoardCache: the config Board would return,
// when the cache holds it fresh. It is shared: the caller must not modify
// it.
func (s *Store) CachedBoard(id string) (*rank.Board, bool) {
	if c := s.hit(id); c != nil && !c.unknown {
		return &c.b, true
	}
	return nil, false
}

// Forget drops the cached config of a board changed elsewhere.
func (s *Store) Forget(id string) { s.forget(id) }

// applyResult decodes one event's part of apply.lua's reply (see its
// header): "0" or "1" (duplicate) and the record, or "!" and an error code;
// "board_closed:<reason>" becomes the config's rank.ClosedError (R30).
func applyResult(e rank.Event, rep string, hash, token string, cfg *rank.Board) (rank.Result, error) {
	var r rank.Result
	var err error
	switch {
	case strings.HasPrefix(rep, "!"):
		code := rep[1:]
		if reason, ok := strings.CutPrefix(code, "board_closed:"); ok && cfg != nil {
			return rank.Result{}, fmt.Errorf("redisstore: apply %s: %w", e.Board, cfg.Closed(reason, e.At))
		}
		if sentinel, ok := scriptErrors[code]; ok {
			return rank.Result{}, fmt.Errorf("redisstore: apply %s: %w", e.Board, sentinel)
		}
		return rank.Result{}, fmt.Errorf("redisstore: apply %s: script error %q", e.Board, code)
	case strings.HasPrefix(rep, "0"), strings.HasPrefix(rep, "1"):
		r, err = parseRecord(rep[0] == '1', rep[1:], hash, token)
	default:
		err = fmt.Errorf("unexpected reply %q", rep)
	}
	if err != nil {
		return rank.Result{}, fmt.Errorf("redisstore: apply %s: %w", e.Board, err)
	}
	r.Board, r.Member = e.Board, e.Member
	return r, nil
}

// parseRecord decodes an idempotency record. Its first field is
// "<payload hash>.<attempt token>": another hash is a conflict; the same
// hash with this call's own token is this call's result, not a duplicate.
func parseRecord(dup bool, rec string, hash, token string) (rank.Result, error) {
	// rec is "hash,score,rank,prev_rank,prev_score,seq,period"; cut in place
	// rather than strings.Split, which allocates per event.
	if strings.Count(rec, ",") != 6 {
		return rank.Result{}, fmt.Errorf("unexpected record %q", rec)
	}
	h, rest, _ := strings.Cut(rec, ",")
	h, recToken, _ := strings.Cut(h, ".")
	if h != hash {
		return rank.Result{}, rank.ErrIdempotencyConflict
	}
	var n [6]int64
	for i := range n {
		var f string
		f, rest, _ = strings.Cut(rest, ",")
		x, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return rank.Result{}, fmt.Errorf("unexpected record %q", rec)
		}
		n[i] = x
	}
	return rank.Result{
		Score: n[0], Rank: n[1], PrevRank: n[2], PrevScore: n[3], Seq: n[4], Period: n[5],
		Duplicate: dup && recToken != token,
	}, nil
}

// Top reads entries [offset, offset+limit) of a period (see top.lua).
func (s *Store) Top(ctx context.Context, board string, period rank.PeriodSel, offset, limit int) (rank.Page, error) {
	return s.page(ctx, "top", board, period, offset, limit)
}

// Count is the number of members in the current period.
func (s *Store) Count(ctx context.Context, board string) (int64, error) {
	p, err := s.page(ctx, "count", board, "", 0, 0)
	return p.Total, err
}

func (s *Store) page(ctx context.Context, op, board string, period rank.PeriodSel, offset, limit int) (rank.Page, error) {
	if !rank.ValidBoardID(board) {
		return rank.Page{}, fmt.Errorf("redisstore: %s %q: %w", op, board, rank.ErrInvalidBoard)
	}
	if offset < 0 || limit < 0 {
		return rank.Page{}, fmt.Errorf("redisstore: %s %s: %w: offset and limit must not be negative", op, board, rank.ErrBadRequest)
	}
	if s.sharded(ctx, board) {
		return s.shardPage(ctx, op, board, period, offset, limit)
	}
	c, sl, v, err := s.read(ctx, op, board, period, s.top, false, offset, limit)
	if err != nil {
		return rank.Page{}, err
	}
	a, _ := v.([]any)
	if len(a) < 4 || (len(a)-4)%3 != 0 {
		return rank.Page{}, fmt.Errorf("redisstore: %s %s: unexpected reply %v", op, board, v)
	}
	p := rank.Page{Board: board, Period: sl.pick(num(a[0])), Offset: offset, Total: num(a[1]), Seq: num(a[2]), Decimals: c.b.Decimals()}
	p.Entries, err = entries(a[4:], int64(offset), num(a[3]), c.b)
	if err != nil {
		return rank.Page{}, fmt.Errorf("redisstore: %s %s: %w", op, board, err)
	}
	return p, nil
}

// Ranks reads several members with their neighbours in one snapshot (see
// ranks.lua).
func (s *Store) Ranks(ctx context.Context, board string, period rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	if !rank.ValidBoardID(board) {
		return rank.Ranks{}, fmt.Errorf("redisstore: ranks %q: %w", board, rank.ErrInvalidBoard)
	}
	if around < 0 {
		return rank.Ranks{}, fmt.Errorf("redisstore: ranks %s: %w: around must not be negative", board, rank.ErrBadRequest)
	}
	for _, m := range members {
		if !rank.ValidMemberID(m) {
			return rank.Ranks{}, fmt.Errorf("redisstore: ranks %s: %w", board, rank.ErrInvalidMember)
		}
	}
	if s.sharded(ctx, board) {
		return s.shardRanks(ctx, board, period, members, around)
	}
	extra := make([]any, 0, 1+len(members))
	extra = append(extra, around)
	for _, m := range members {
		extra = append(extra, m)
	}
	c, sl, v, err := s.read(ctx, "ranks", board, period, s.ranks, true, extra...)
	if err != nil {
		return rank.Ranks{}, err
	}
	r, err := parseRanks(v, members, c.b)
	if err != nil {
		return rank.Ranks{}, fmt.Errorf("redisstore: ranks %s: %w", board, err)
	}
	r.Board, r.Period, r.Decimals = board, sl.pick(r.Period), c.b.Decimals()
	return r, nil
}

// read runs a read script (top.lua, ranks.lua) on the period slots of sel,
// again after a stale config or clock. Its keys are the board's cfg, seq
// and names, then each slot's sorted set (and member hash when withMembers);
// its arguments the config version, clock, slot bounds and tiebreak, then
// extra. Errors are wrapped.
func (s *Store) read(ctx context.Context, op, board string, sel rank.PeriodSel, sc *script, withMembers bool, extra ...any) (cachedBoard, slots, any, error) {
	if s.closed.Load() {
		return cachedBoard{}, slots{}, nil, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		c, err := s.board(ctx, board)
		if err != nil {
			return cachedBoard{}, slots{}, nil, s.fail(op, board, err)
		}
		now, nowArg := s.now(ctx, c.b)
		sl, err := slotsFor(c.b, sel, now)
		if err != nil {
			return cachedBoard{}, slots{}, nil, fmt.Errorf("redisstore: %s %s: %w", op, board, err)
		}
		if c.b.Hot() {
			now, nowArg = s.hotNow(ctx)
			if sl, err = s.hotSlots(ctx, c, now); err != nil {
				return cachedBoard{}, slots{}, nil, s.fail(op, board, err)
			}
		}
		var keys []string
		if withMembers {
			keys = []string{c.keys.cfg, c.keys.seq, c.keys.n,
				s.zkey(board, sl.a), s.mkey(board, sl.a), s.zkey(board, sl.b), s.mkey(board, sl.b), c.keys.ban}
		} else {
			keys = []string{c.keys.cfg, c.keys.seq, c.keys.n, s.zkey(board, sl.a), s.zkey(board, sl.b), c.keys.ban}
		}
		args := append([]any{c.ver, nowArg, sl.start, sl.bound, sl.end, string(c.b.Tiebreak)}, extra...)
		v, err := sc.run(ctx, s.client, keys, args...)
		if err != nil {
			if s.retryable(ctx, board, err, attempt) {
				continue
			}
			return cachedBoard{}, slots{}, nil, s.fail(op, board, err)
		}
		return c, sl, v, nil
	}
}

// parseRanks decodes ranks.lua's reply; Period holds the slot number.
func parseRanks(v any, members []string, b rank.Board) (rank.Ranks, error) {
	a, _ := v.([]any)
	bad := fmt.Errorf("unexpected reply %v", v)
	if len(a) < 3 {
		return rank.Ranks{}, bad
	}
	r := rank.Ranks{Period: num(a[0]), Total: num(a[1]), Seq: num(a[2]), Members: make([]rank.MemberRank, len(members))}
	a = a[3:]
	for i, m := range members {
		if len(a) < 5 {
			return rank.Ranks{}, bad
		}
		mr := rank.MemberRank{Member: m}
		found, rk, start, first, n := num(a[0]), num(a[1]), num(a[2]), num(a[3]), int(num(a[4]))
		a = a[5:]
		if found == 1 {
			if n < 0 || len(a) < 3*n {
				return rank.Ranks{}, bad
			}
			es, err := entries(a[:3*n], start, first, b)
			if err != nil {
				return rank.Ranks{}, err
			}
			a = a[3*n:]
			mr.Found, mr.Rank, mr.Around = true, rk, es
			for _, e := range es {
				if e.Member == m {
					mr.Score, mr.Name = e.Score, e.Name
				}
			}
		}
		r.Members[i] = mr
	}
	return r, nil
}

// entries decodes id, stored score, name triples listed from 0-based
// position start, the first of which has rank first.
func entries(a []any, start, first int64, b rank.Board) ([]rank.Entry, error) {
	if len(a) == 0 {
		return []rank.Entry{}, nil
	}
	out := make([]rank.Entry, 0, len(a)/3)
	for i := 0; i+2 < len(a); i += 3 {
		id, _ := a[i].(string)
		raw, _ := a[i+1].(string)
		name, _ := a[i+2].(string)
		sc, err := parseScore(raw)
		if err != nil {
			return nil, err
		}
		if b.Order == rank.Asc {
			sc = -sc
		}
		k := int64(len(out))
		rk := first + k
		if b.Tiebreak == rank.Shared && k > 0 {
			// Equal scores share the rank; a new score's rank is its position.
			if prev := out[k-1]; prev.Score == sc {
				rk = prev.Rank
			} else {
				rk = start + k + 1
			}
		}
		out = append(out, rank.Entry{Rank: rk, Member: id, Score: sc, Name: name})
	}
	return out, nil
}

// parseScore reads a sorted-set score reply. Scores are integers within
// ±(2^53-1), exact in a double; the float path covers a server that
// formats them with an exponent.
func parseScore(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != float64(int64(f)) {
		return 0, errors.Join(fmt.Errorf("bad score %q", s), err)
	}
	return int64(f), nil
}

func num(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}
