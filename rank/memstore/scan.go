package memstore

// Season data (docs/protocol.md §18): Scan reads a period in chunks for an
// export, NameProfiles names the profiles an import names.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// Scan implements rank.Seasons: one chunk under the board's read lock, from
// the position of the cursor's key (the entry there, if still there, is
// the previous chunk's last).
func (s *Store) Scan(ctx context.Context, id string, sel rank.PeriodSel, from rank.Cursor, limit int, hidden bool) (rank.ScanPage, error) {
	if err := rank.CheckScan(limit); err != nil {
		return rank.ScanPage{}, fmt.Errorf("memstore: scan %s: %w", id, err)
	}
	at, started, err := parseCursor(from)
	if err != nil {
		return rank.ScanPage{}, fmt.Errorf("memstore: scan %s: %w", id, err)
	}
	b, err := s.lookup(ctx, id)
	if err != nil {
		return rank.ScanPage{}, fmt.Errorf("memstore: scan %s: %w", id, err)
	}
	now := s.rlock(b)
	defer b.mu.RUnlock()
	if b.deleted {
		return rank.ScanPage{}, fmt.Errorf("memstore: scan %s: %w", id, rank.ErrUnknownBoard)
	}
	idx, err := sel.Resolve(b.cfg, now)
	if err != nil {
		return rank.ScanPage{}, fmt.Errorf("memstore: scan %s: %w", id, err)
	}
	pg := rank.ScanPage{Board: id, Period: idx, Entries: []rank.ScanEntry{}, Decimals: b.cfg.Decimals()}
	z := b.readable(idx, now)
	if z == nil || !b.cfg.Retains(idx, now) {
		return pg, nil
	}
	// The tree from the first key after the cursor's, merged with the
	// hidden entries after it (few: they are sorted here).
	start := 1
	if started {
		start = z.tr.before(&at, nil) + 1
		if n := z.members[at.m]; n != nil && n.key == at {
			start++
		}
	}
	var hid []*node
	if hidden {
		for _, n := range z.hidden {
			if !started || at.less(&n.key) {
				hid = append(hid, n)
			}
		}
		slices.SortFunc(hid, func(x, y *node) int {
			if x.key.less(&y.key) {
				return -1
			}
			return 1
		})
	}
	c := z.tr.at(start)
	h := 0
	shared := b.cfg.Tiebreak == rank.Shared
	var prev *node
	var pos, rk int64
	for len(pg.Entries) < limit && (c.ok() || h < len(hid)) {
		var n *node
		isHidden := false
		if h < len(hid) && (!c.ok() || hid[h].key.less(&c.node().key)) {
			n, isHidden = hid[h], true
			h++
		} else {
			n = c.node()
			c.next()
		}
		switch {
		case prev == nil:
			// The first entry's place: every entry before it, the hidden
			// ones too when they are listed.
			pos = 1 + int64(z.tr.before(&n.key, nil)) + int64(hiddenBefore(z, &n.key, hidden))
			rk = pos
			if shared {
				rk = 1 + int64(z.tr.countLess(n.s)) + int64(hiddenLess(z, n.s, hidden))
			}
		default:
			pos++
			if !shared || n.s != prev.s {
				rk = pos
			}
		}
		pg.Entries = append(pg.Entries, rank.ScanEntry{
			Entry:  rank.Entry{Rank: rk, Member: n.m, Score: n.score, Name: b.names[n.m], Meta: z.meta[n.m]},
			Hidden: isHidden,
		})
		prev = n
	}
	if prev != nil && (c.ok() || h < len(hid)) {
		pg.Next = cursorOf(prev.key)
	}
	return pg, nil
}

// hiddenBefore is the hidden entries of z whose key is below k, when
// they are listed (else 0).
func hiddenBefore(z *zset, k *key, listed bool) int {
	if !listed {
		return 0
	}
	n := 0
	for _, h := range z.hidden {
		if h.key.less(k) {
			n++
		}
	}
	return n
}

// hiddenLess is the hidden entries of z with a better score than oriented
// score s, when they are listed (else 0).
func hiddenLess(z *zset, s int64, listed bool) int {
	if !listed {
		return 0
	}
	n := 0
	for _, h := range z.hidden {
		if h.s < s {
			n++
		}
	}
	return n
}

// cursorOf is a key as a Scan cursor: "<s>,<t>,<member>" (no member id
// holds a comma).
func cursorOf(k key) rank.Cursor {
	return rank.Cursor(strconv.FormatInt(k.s, 10) + "," + strconv.FormatInt(k.t, 10) + "," + k.m)
}

// parseCursor reads cursorOf's form back; started is false for "".
func parseCursor(c rank.Cursor) (k key, started bool, err error) {
	if c == "" {
		return key{}, false, nil
	}
	bad := fmt.Errorf("%w: not a scan cursor of this engine", rank.ErrBadRequest)
	parts := strings.SplitN(string(c), ",", 3)
	if len(parts) != 3 || !rank.ValidMemberID(parts[2]) {
		return key{}, false, bad
	}
	s, err1 := strconv.ParseInt(parts[0], 10, 64)
	t, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return key{}, false, bad
	}
	return key{s: s, t: t, m: parts[2]}, true, nil
}

// NameProfiles implements rank.Seasons under the profiles' lock: the check
// for a name and the write are one step.
func (s *Store) NameProfiles(ctx context.Context, names []rank.MemberName) ([]string, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: name profiles: %w", err)
	}
	for _, mn := range names {
		if !rank.ValidMemberID(mn.Member) {
			return nil, fmt.Errorf("memstore: name profiles: %w", rank.ErrInvalidMember)
		}
	}
	t := &s.profiles
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[string]rank.Profile)
	}
	var changed []string
	for _, mn := range names {
		p := t.m[mn.Member]
		if p.Name != "" || mn.Name == "" {
			continue
		}
		p.Name = mn.Name
		t.m[mn.Member] = p
		changed = append(changed, mn.Member)
	}
	slices.SortFunc(changed, cmp.Compare)
	return slices.Compact(changed), nil
}

// ImportMark implements rank.Seasons.
func (s *Store) ImportMark(ctx context.Context, id, imp string) (rank.ImportMark, error) {
	b, err := s.lookup(ctx, id)
	if err != nil {
		return rank.ImportMark{}, fmt.Errorf("memstore: import mark %s: %w", id, err)
	}
	now := s.now()
	b.mu.RLock()
	defer b.mu.RUnlock()
	m, ok := b.imports[imp]
	if !ok || !now.Before(m.until) {
		return rank.ImportMark{}, nil
	}
	return m.ImportMark, nil
}

// MarkImport implements rank.Seasons.
func (s *Store) MarkImport(ctx context.Context, id, imp string, line int64) error {
	b, err := s.lookup(ctx, id)
	if err != nil {
		return fmt.Errorf("memstore: mark import %s: %w", id, err)
	}
	now := s.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.deleted {
		return fmt.Errorf("memstore: mark import %s: %w", id, rank.ErrUnknownBoard)
	}
	if b.imports == nil {
		b.imports = map[string]importMark{}
	}
	for k, m := range b.imports { // few: one per import id within the TTL
		if !now.Before(m.until) {
			delete(b.imports, k)
		}
	}
	m, ok := b.imports[imp]
	if !ok {
		m.Start = now
	}
	m.Line = max(m.Line, line)
	m.until = now.Add(rank.ImportMarkTTL)
	b.imports[imp] = m
	return nil
}

// importMark is a mark as a board keeps it, with its expiry.
type importMark struct {
	rank.ImportMark
	until time.Time
}
