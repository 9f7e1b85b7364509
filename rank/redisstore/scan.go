package redisstore

// Season data (docs/protocol.md §18): Scan reads a period in chunks for an
// export with shard.lua's scan op, one call per sorted set (the board's,
// or each shard's, and their hidden-entry sets when asked) in one
// pipeline, merged here; NameProfiles names the profiles an import names.

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

// chunkSet is one sorted set a Scan walks and what its call answered.
type chunkSet struct {
	part    *cachedBoard // the board, or one of its shards
	hidden  bool         // the part's hidden-entry set (x) rather than its entries (z)
	before  int64        // its entries at or before the cursor
	better  int64        // its entries of a better score than the cursor's
	entries []shardEntry
	full    bool // it answered the whole limit: more may follow
}

// Scan implements rank.Seasons. The chunk is a merge of what each set
// answered after the cursor, cut at the first set that may have more (its
// last entry read): every entry up to there is in the chunk, in order.
func (s *Store) Scan(ctx context.Context, board string, sel rank.PeriodSel, from rank.Cursor, limit int, hidden bool) (rank.ScanPage, error) {
	if !rank.ValidBoardID(board) {
		return rank.ScanPage{}, fmt.Errorf("redisstore: scan %q: %w", board, rank.ErrInvalidBoard)
	}
	if err := rank.CheckScan(limit); err != nil {
		return rank.ScanPage{}, fmt.Errorf("redisstore: scan %s: %w", board, err)
	}
	cur, started, err := parseScanCursor(from)
	if err != nil {
		return rank.ScanPage{}, fmt.Errorf("redisstore: scan %s: %w", board, err)
	}
	if s.closed.Load() {
		return rank.ScanPage{}, ErrClosed
	}
	var sets []chunkSet
	c, shown, err := s.shardRead(ctx, "scan", board, sel, func(c cachedBoard, idx int64, nowArg string) error {
		if c.b.Hot() {
			now, _ := s.hotNow(ctx)
			if _, err := s.hotSlots(ctx, c, now); err != nil { // the current bucket's view
				return err
			}
		}
		sets = chunkSets(&c, hidden)
		return s.scanRun(ctx, c, idx, nowArg, cur, (limit+len(sets)-1)/len(sets)+scanSlack, sets)
	})
	if err != nil {
		return rank.ScanPage{}, err
	}
	pg := rank.ScanPage{Board: board, Period: shown, Entries: []rank.ScanEntry{}, Decimals: c.b.Decimals()}
	var all []scanned
	var frontier *shardEntry // the first set's last entry that may have more after it
	var base, better int64
	for i := range sets {
		st := &sets[i]
		base += st.before
		better += st.better
		for _, e := range st.entries {
			all = append(all, scanned{e, st.hidden})
		}
		if last := len(st.entries) - 1; st.full && last >= 0 && (frontier == nil || st.entries[last].before(*frontier)) {
			frontier = &st.entries[last]
		}
	}
	sortScanned(all)
	shared := c.b.Tiebreak == rank.Shared
	var rk int64
	more := frontier != nil
	for i, e := range all {
		if len(pg.Entries) == limit || (frontier != nil && frontier.before(e.shardEntry)) {
			more = true
			break
		}
		pos := base + int64(i) + 1
		switch {
		case !shared:
			rk = pos
		case i == 0 && started && strconv.FormatInt(e.score, 10) == cur.score:
			rk = better + 1 // ties with the cursor's entry, before this chunk
		case i == 0 || e.score != all[i-1].score:
			rk = pos
		}
		pg.Entries = append(pg.Entries, rank.ScanEntry{Entry: e.entry(c.b, rk), Hidden: e.hidden})
	}
	if n := len(pg.Entries); more && n > 0 {
		last := all[n-1]
		pg.Next = rank.Cursor(strconv.FormatInt(last.score, 10) + "," + last.z)
	}
	return pg, nil
}

// scanSlack is read beyond each set's share of a chunk, so the sets of a
// sharded board, whose members spread evenly, rarely cut a chunk short.
const scanSlack = 16

// scanned is a merged entry and whether it is hidden.
type scanned struct {
	shardEntry
	hidden bool
}

func sortScanned(a []scanned) {
	slices.SortFunc(a, func(x, y scanned) int { return cmpEntries(x.shardEntry, y.shardEntry) })
}

// chunkSets are the sets a Scan of c walks: its entries (each shard's on a
// sharded board), then the hidden ones when asked.
func chunkSets(c *cachedBoard, hidden bool) []chunkSet {
	parts := []*cachedBoard{c}
	if c.b.Sharded() {
		parts = parts[:0]
		for i := range c.shards {
			parts = append(parts, &c.shards[i])
		}
	}
	var out []chunkSet
	for _, h := range []bool{false, true} {
		if h && !hidden {
			break
		}
		for _, p := range parts {
			out = append(out, chunkSet{part: p, hidden: h})
		}
	}
	return out
}

// scanRun sends one shard.lua scan call per set in one pipeline and fills
// each set's answer.
func (s *Store) scanRun(ctx context.Context, c cachedBoard, idx int64, nowArg string, cur scanCursor, per int, sets []chunkSet) error {
	run := func() ([]*redis.Cmd, error) {
		pipe := s.client.Pipeline()
		cmds := make([]*redis.Cmd, len(sets))
		for i, st := range sets {
			keys := s.shardKeys(*st.part, idx)
			if st.hidden {
				keys[3] = s.xkey(&st.part.b, idx)
			}
			cmds[i] = pipe.EvalSha(ctx, s.shard.sha, keys, c.ver, nowArg, 0, 0, 0, "scan", cur.score, cur.z, per)
		}
		_, err := pipe.Exec(ctx)
		return cmds, err
	}
	cmds, err := s.shard.pipelined(ctx, s.client, run)
	if err != nil {
		return err
	}
	for i, cmd := range cmds {
		a, ok := cmd.Val().([]any)
		if !ok || len(a) < 2 || (len(a)-2)%4 != 0 {
			return fmt.Errorf("unexpected reply %v", cmd.Val())
		}
		es, err := shardEntries(a[2:])
		if err != nil {
			return err
		}
		sets[i].before, sets[i].better, sets[i].entries, sets[i].full = num(a[0]), num(a[1]), es, len(es) == per
	}
	return nil
}

// scanCursor is a Scan cursor: the stored score and sorted-set member of
// the last entry of a chunk, "<score>,<member>" (neither holds a comma).
type scanCursor struct{ score, z string }

func parseScanCursor(c rank.Cursor) (scanCursor, bool, error) {
	if c == "" {
		return scanCursor{}, false, nil
	}
	sc, z, ok := strings.Cut(string(c), ",")
	if _, err := strconv.ParseInt(sc, 10, 64); err != nil || !ok || z == "" {
		return scanCursor{}, false, fmt.Errorf("%w: not a scan cursor of this engine", rank.ErrBadRequest)
	}
	return scanCursor{sc, z}, true, nil
}

// NameProfiles implements rank.Seasons: one HSETNX of the name field per
// member, pipelined (a profile is a hash; the field is set only where it
// is missing, so the check and the write are one command).
func (s *Store) NameProfiles(ctx context.Context, names []rank.MemberName) ([]string, error) {
	for _, mn := range names {
		if !rank.ValidMemberID(mn.Member) {
			return nil, fmt.Errorf("redisstore: name profiles: %w", rank.ErrInvalidMember)
		}
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	var changed []string
	for i := 0; i < len(names); i += maxProfileBatch {
		part := names[i:min(i+maxProfileBatch, len(names))]
		pipe := s.client.Pipeline()
		cmds := make([]*redis.BoolCmd, 0, len(part))
		for _, mn := range part {
			if mn.Name != "" {
				cmds = append(cmds, pipe.HSetNX(ctx, s.profileKey(mn.Member), "n", mn.Name))
			}
		}
		if len(cmds) == 0 {
			continue
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return changed, s.fail("name profiles", "", err)
		}
		k := 0
		for _, mn := range part {
			if mn.Name == "" {
				continue
			}
			if cmds[k].Val() {
				changed = append(changed, mn.Member)
			}
			k++
		}
	}
	return changed, nil
}

// Import marks (rank.ImportMark) live in the board's slot: the hash
// <p>:{b}:imp (import id -> its first mark's store time in unix ms, set
// with HSETNX) and the sorted set <p>:{b}:impl (import id -> line, moved
// with ZADD GT), so two runs of one import marking at once never move a
// mark back, with no script.

// ImportMark implements rank.Seasons.
func (s *Store) ImportMark(ctx context.Context, board, id string) (rank.ImportMark, error) {
	if s.closed.Load() {
		return rank.ImportMark{}, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	c, err := s.board(ctx, board)
	if err != nil {
		return rank.ImportMark{}, s.fail("import mark", board, err)
	}
	pipe := s.client.Pipeline()
	start := pipe.HGet(ctx, s.key(&c.b, "imp"), id)
	line := pipe.ZScore(ctx, s.key(&c.b, "impl"), id)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return rank.ImportMark{}, s.fail("import mark", board, err)
	}
	ms, err1 := start.Int64()
	n, err2 := line.Result()
	if err1 != nil || err2 != nil {
		return rank.ImportMark{}, nil // none (or half written: the start comes first)
	}
	return rank.ImportMark{Start: time.UnixMilli(ms).UTC(), Line: int64(n)}, nil
}

// MarkImport implements rank.Seasons.
func (s *Store) MarkImport(ctx context.Context, board, id string, line int64) error {
	if s.closed.Load() {
		return ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	c, err := s.board(ctx, board)
	if err != nil {
		return s.fail("mark import", board, err)
	}
	now, err := s.Now(ctx)
	if err != nil {
		return err
	}
	starts, lines := s.key(&c.b, "imp"), s.key(&c.b, "impl")
	pipe := s.client.Pipeline()
	pipe.HSetNX(ctx, starts, id, now.UnixMilli())
	pipe.ZAddGT(ctx, lines, redis.Z{Score: float64(line), Member: id})
	pipe.PExpire(ctx, starts, rank.ImportMarkTTL)
	pipe.PExpire(ctx, lines, rank.ImportMarkTTL)
	if _, err := pipe.Exec(ctx); err != nil {
		return s.fail("mark import", board, err)
	}
	return nil
}
