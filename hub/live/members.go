package live

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// Member lists (docs/protocol.md §11): `members` frames of a list of ids.
//
// Lists are many small views of one board. Per board the engine keeps the
// union of the ids its lists watch; when the board changed in an interval,
// the board's scheduled read asks the store for the whole union at once
// (one Ranks call per listChunk ids: one snapshot each), then cuts every
// list's frame from that answer. Subscribers with the same ids share one
// list, so one encoding. Store reads grow with boards × ticks and the
// size of the union, never with the number of subscribers.

// MaxMembers bounds the ids of one members subscription.
const MaxMembers = proto.MaxMembers

// listChunk is the most ids one Ranks call of the union asks for: a larger
// union is read in several calls, so no single store call grows without
// bound.
const listChunk = 1000

// Bounds of the member lists (Config.ListBudget, Config.MaxListIDs).
const (
	DefaultListBudget = 2 * listChunk
	DefaultMaxListIDs = 2 * MaxMembers
	// maxListPeriods is how many intervals apart a node's lists may come to
	// be read before it refuses ids no list holds yet: the node's union is
	// at most ListBudget × maxListPeriods ids.
	maxListPeriods = 10
	// listRetry is the retry_after of a list refused for the node's bound.
	listRetry = 5 * time.Second
)

// BusyError refuses a subscription this node cannot take now: its member
// lists are at their bound. The same subscribe may pass after RetryAfter,
// once other lists are gone.
type BusyError struct {
	RetryAfter time.Duration
	msg        string
}

func (e *BusyError) Error() string { return e.msg }

// Code is the contract's code of the refusal.
func (e *BusyError) Code() string { return proto.CodeRateLimited }

// frameEntries converts entries for a frame, without their meta unless the
// subscription asked for it (§11).
func frameEntries(es []rank.Entry, meta bool) []proto.Entry {
	out := proto.EntriesOf(es)
	if !meta {
		proto.WithoutMeta(out)
	}
	return out
}

// checkMembers validates a members subscription's ids.
func checkMembers(board string, ids []string) error {
	if len(ids) > MaxMembers {
		return fmt.Errorf("live: subscribe %s: %w: members: %d ids, at most %d", board, rank.ErrBadRequest, len(ids), MaxMembers)
	}
	for _, id := range ids {
		if !rank.ValidMemberID(id) {
			return fmt.Errorf("live: subscribe %s: members: %w", board, rank.ErrInvalidMember)
		}
	}
	return nil
}

// lists is a board's members subscriptions. Guarded by Engine.mu.
//
// The union is a slice of positions, so that a read's answer is cut into
// frames by index, with no map lookup per listed entry: each list holds
// the positions of its ids, fixed for its life; a position nobody lists
// any more is freed ("") and reused.
type lists struct {
	b      *board
	byKey  map[string]*memberList // by listKey
	ids    []string               // the union by position; "" is a free position
	pos    map[string]int32       // id → position in ids
	refs   []int32                // lists holding each position
	free   []int32                // free positions
	marked bool                   // the board changed since the lists' last read
	stamp                         // every list's
	// owners counts, per member (Spec.Owner), the subscriptions of its
	// that list each id: a member's distinct ids are bounded.
	owners map[string]map[string]int32
}

func newLists(b *board) *lists { return &lists{b: b} }

// admit refuses a members subscription that would take its member past
// MaxListIDs distinct ids on the board, or the node's lists past what
// they may read (BusyError). old is the part it replaces.
func (ls *lists) admit(sp *Spec, old part) error {
	if len(sp.Members) == 0 {
		return nil
	}
	_, ids := listKey(sp.Members)
	e := ls.b.e
	if have := ls.owners[sp.Owner]; sp.Owner != "" && e.cfg.MaxListIDs > 0 {
		n := len(have) + countMissing(ids, have)
		if p, ok := old.(*listPart); ok && p.owner == sp.Owner {
			for _, id := range p.l.ids {
				if _, keep := slices.BinarySearch(ids, id); have[id] == 1 && !keep {
					n-- // only the replaced subscription lists it
				}
			}
		}
		if n > e.cfg.MaxListIDs {
			return fmt.Errorf("live: subscribe %s: %w: members: this member's lists would hold %d distinct ids on the board, at most %d (on one node)",
				ls.b.id, rank.ErrBadRequest, n, e.cfg.MaxListIDs)
		}
	}
	if e.cfg.ListBudget > 0 {
		if fresh := countMissing(ids, ls.pos); fresh > 0 && e.listIDs+fresh > e.cfg.ListBudget*maxListPeriods {
			return fmt.Errorf("live: subscribe %s: %w", ls.b.id, &BusyError{listRetry,
				fmt.Sprintf("members: this node's lists are at their bound of %d ids; retry later", e.cfg.ListBudget*maxListPeriods)})
		}
	}
	return nil
}

// countMissing is how many of ids m lacks.
func countMissing[V any](ids []string, m map[string]V) int {
	n := 0
	for _, id := range ids {
		if _, ok := m[id]; !ok {
			n++
		}
	}
	return n
}

// own counts (d = 1) or uncounts (d = -1) ids as listed by owner.
func (ls *lists) own(owner string, ids []string, d int32) {
	if owner == "" {
		return
	}
	have := ls.owners[owner]
	if have == nil {
		if ls.owners == nil {
			ls.owners = make(map[string]map[string]int32)
		}
		have = make(map[string]int32, len(ids))
		ls.owners[owner] = have
	}
	for _, id := range ids {
		if have[id] += d; have[id] <= 0 {
			delete(have, id)
		}
	}
	if len(have) == 0 {
		delete(ls.owners, owner)
	}
}

// watching is how many of the board's lists hold id.
func (ls *lists) watching(id string) int {
	if p, ok := ls.pos[id]; ok {
		return int(ls.refs[p])
	}
	return 0
}

// add takes a reference on id's position, giving it one if it has none.
func (ls *lists) add(id string) int32 {
	p, ok := ls.pos[id]
	if !ok {
		if n := len(ls.free); n > 0 {
			p, ls.free = ls.free[n-1], ls.free[:n-1]
			ls.ids[p] = id
		} else {
			p = int32(len(ls.ids))
			ls.ids = append(ls.ids, id)
			ls.refs = append(ls.refs, 0)
		}
		ls.pos[id] = p
		ls.b.e.listIDs++
	}
	ls.refs[p]++
	return p
}

// release drops a reference on position p, freeing it at the last.
func (ls *lists) release(p int32) {
	if ls.refs[p]--; ls.refs[p] > 0 {
		return
	}
	delete(ls.pos, ls.ids[p])
	ls.ids[p] = ""
	ls.free = append(ls.free, p)
	ls.b.e.listIDs--
}

// memberList is one distinct list of ids, watched by one or more
// connections.
type memberList struct {
	key      string
	ids      []string // sorted, no repeats
	pos      []int32  // each id's position in the board's union
	watchers *subscribers
	removed  bool
	res      *listResult // nil until the first read; replaced, never mutated
}

type listResult struct {
	frame
	entries  []rank.Entry // in rank order
	total    int64
	decimals int
}

// listKey is the identity of a list: its sorted ids.
func listKey(ids []string) (string, []string) {
	s := slices.Clone(ids)
	slices.Sort(s)
	s = slices.Compact(s)
	return strings.Join(s, ","), s
}

type listPart struct {
	ls    *lists
	l     *memberList
	owner string
}

func (ls *lists) join(sp *Spec, st *start) part {
	if len(sp.Members) == 0 {
		return nil
	}
	key, sorted := listKey(sp.Members)
	if ls.byKey == nil {
		ls.byKey = make(map[string]*memberList)
		ls.pos = make(map[string]int32)
	}
	l := ls.byKey[key]
	if l == nil {
		l = &memberList{key: key, ids: sorted, pos: make([]int32, len(sorted)), watchers: newSubscribers()}
		ls.byKey[key] = l
		for i, id := range sorted {
			l.pos[i] = ls.add(id)
		}
	}
	if l.watchers.join(st, listSlot, held(l.res), ls.stamp, ls.marked) {
		ls.mark(0)
	}
	ls.own(sp.Owner, l.ids, 1)
	return &listPart{ls, l, sp.Owner}
}

// leave removes o from its list, and the list when nobody watches it any
// more.
func (p *listPart) leave(o *Outbox) {
	ls, l := p.ls, p.l
	ls.own(p.owner, l.ids, -1)
	if !l.watchers.leave(o) {
		return
	}
	l.removed = true
	delete(ls.byKey, l.key)
	for _, p := range l.pos {
		ls.release(p)
	}
	if len(ls.byKey) == 0 {
		*ls = lists{b: ls.b, stamp: ls.stamp}
	}
}

// mark marks the lists for a read; seq is the change behind it (stamp).
func (ls *lists) mark(seq int64) {
	ls.touch(seq)
	if len(ls.byKey) > 0 && !ls.marked {
		ls.marked = true
		ls.b.kick()
	}
}

// changed marks the lists: any change may move a listed member's rank (an
// unlisted member can overtake a listed one).
func (ls *lists) changed(c rank.Change) { ls.mark(c.Seq) }
func (ls *lists) markAll(seq int64)     { ls.mark(seq) }
func (ls *lists) dirty() bool           { return ls.marked }

// profiles marks the lists when one of the members whose profile changed is
// listed (R20 makes a rename a change).
func (ls *lists) profiles(changed map[string]struct{}) {
	for m := range changed {
		if ls.watching(m) > 0 {
			ls.mark(ls.b.unseq())
			return
		}
	}
}

func (ls *lists) each(fn func(*subscribers)) {
	for _, l := range ls.byKey {
		fn(l.watchers)
	}
}

// listPass is the members part of a job: the ids to read (by position; ""
// is skipped) and the lists to cut from them, each with its ids'
// positions.
type listPass struct {
	ls     *lists
	ids    []string
	lists  []*memberList
	pos    [][]int32
	prev   []*listResult // each list's res when the job started
	next   []*listResult // set when the read succeeded
	period int64
	seq    int64
	ts     int64
}

// snapshot takes the lists' dirty mark into a read of the whole union,
// paid from the node's list credit (Config.ListBudget): while the credit
// is spent, the lists stay marked for a later point.
func (ls *lists) snapshot(*job) pass {
	e := ls.b.e
	if !ls.marked || len(ls.byKey) == 0 || (e.cfg.ListBudget > 0 && e.listCredit <= 0) {
		return nil
	}
	ls.marked = false
	if e.cfg.ListBudget > 0 {
		e.listCredit -= len(ls.pos)
	}
	// A copy: positions freed and reused while the job reads must not
	// change what its lists' positions mean.
	p := &listPass{ls: ls, ids: slices.Clone(ls.ids)}
	for _, l := range ls.byKey {
		p.lists = append(p.lists, l)
		p.pos = append(p.pos, l.pos)
		p.prev = append(p.prev, l.res)
	}
	return p
}

// read reads the union (in chunks of listChunk) and cuts each list's
// result, encoding those that changed.
func (p *listPass) read(ctx context.Context, j *job) error {
	e := j.e
	hits, hitPos, total, decimals, err := p.readUnion(ctx, j)
	if err != nil {
		return err
	}
	e.decorate(ctx, hits)
	// Hits in rank order (shared ranks: by id), so each list's entries
	// are in rank order when its hit indices are.
	order := make([]int32, len(hits))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int {
		return cmp.Or(cmp.Compare(hits[x].Rank, hits[y].Rank), strings.Compare(hits[x].Member, hits[y].Member))
	})
	hitAt := make([]int32, len(p.ids)) // position → 1 + its place in order; 0: not found
	for k, h := range order {
		hitAt[hitPos[h]] = int32(k) + 1
	}
	// Lists overlap: each entry is encoded once per read, and each frame
	// is those encodings put together.
	enc := make([][]byte, len(hits))
	var idx []int32
	p.ts = e.now().UnixMilli()
	next := make([]*listResult, len(p.lists))
	for i := range p.lists {
		idx = idx[:0]
		for _, q := range p.pos[i] {
			if k := hitAt[q]; k > 0 {
				idx = append(idx, k-1)
			}
		}
		slices.Sort(idx)
		r := &listResult{frame: frame{seq: p.seq}, entries: make([]rank.Entry, len(idx)), total: total, decimals: decimals}
		for n, k := range idx {
			r.entries[n] = hits[order[k]]
		}
		if prev := p.prev[i]; prev == nil || !slices.Equal(prev.entries, r.entries) {
			r.bytes = e.appendMembers(j.b.id, r, p.ts, func(n int) []byte {
				k := idx[n]
				if enc[k] == nil {
					enc[k], _ = json.Marshal(proto.Entry(r.entries[n]))
				}
				return enc[k]
			})
		}
		next[i] = r
	}
	p.next = next
	return nil
}

// readUnion reads the union's ids, whole-board ranks (§11), and returns
// the found members' entries with their positions.
func (p *listPass) readUnion(ctx context.Context, j *job) (hits []rank.Entry, hitPos []int32, total int64, decimals int, err error) {
	ask := make([]string, 0, len(p.ids))
	at := make([]int32, 0, len(p.ids)) // position of each asked id
	for q, id := range p.ids {
		if id != "" {
			ask = append(ask, id)
			at = append(at, int32(q))
		}
	}
	for lo := 0; lo < len(ask); lo += listChunk {
		hi := min(lo+listChunk, len(ask))
		r, err := j.e.readRanks(ctx, j.b.id, j.final.sel, ask[lo:hi], rank.BoardRanks)
		if err != nil {
			return nil, nil, 0, 0, err
		}
		for i, mr := range r.Members {
			if !mr.Found {
				continue
			}
			// With around 0 a found member's Around is its own entry,
			// meta included.
			for _, x := range mr.Around {
				if x.Member == mr.Member {
					hits = append(hits, x)
					hitPos = append(hitPos, at[lo+i])
				}
			}
		}
		if r.Seq >= p.seq {
			p.seq, total, p.period, decimals = r.Seq, r.Total, r.Period, r.Decimals
		}
	}
	return hits, hitPos, total, decimals, nil
}

// install makes the pass's list results current where they are newer and
// different, and appends their deliveries. A frame is due when a listed
// member's rank, score, name or meta changed: the total alone does not
// make one.
func (p *listPass) install(j *job, out []delivery) []delivery {
	ls, b := p.ls, j.b
	if p.next == nil {
		ls.mark(0) // the read failed: again next tick
		return out
	}
	if j.stale(&ls.stamp, p.seq, p.period) {
		ls.mark(0)
	}
	k := slotKey{b.id, listSlot}
	for i, l := range p.lists {
		next := p.next[i]
		if l.removed {
			continue
		}
		var ok bool
		out, ok = l.watchers.settle(out, k, j.at, held(l.res), &next.frame,
			l.res != nil && slices.Equal(l.res.entries, next.entries), func() {
				next.bytes = j.e.appendMembers(b.id, next, p.ts, func(n int) []byte { x, _ := json.Marshal(proto.Entry(next.entries[n])); return x })
			})
		if ok {
			l.res = next
		}
	}
	return out
}

// appendMembers is the exact JSON of a proto.Members frame, from its
// entries' encodings (entry(n) is the n-th entry's, made once per read and
// shared by every list that shows it), as TestMembersEncoding checks.
func (e *Engine) appendMembers(board string, r *listResult, ts int64, entry func(n int) []byte) []byte {
	e.encoded.Add(1)
	boardJSON, _ := json.Marshal(board)
	out := make([]byte, 0, 96+len(boardJSON)+len(r.entries)*96)
	out = append(out, `{"type":"members","board":`...)
	out = append(out, boardJSON...)
	out = append(out, `,"entries":[`...)
	for n := range r.entries {
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, entry(n)...)
	}
	out = append(out, `],"total":`...)
	out = strconv.AppendInt(out, r.total, 10)
	out = append(out, `,"seq":`...)
	out = strconv.AppendInt(out, r.seq, 10)
	out = append(out, `,"ts":`...)
	out = strconv.AppendInt(out, ts, 10)
	out = append(out, '}')
	return proto.Decimalize(out, r.decimals)
}
