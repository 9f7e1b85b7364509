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

// Spec is one subscribe's ask (docs/protocol.md §4, §11).
type Spec struct {
	Board string
	// Top: top frames of the first Top entries; 0: none.
	Top int
	// Member and Around: view frames of Member with Around neighbours; 0:
	// none.
	Member string
	Around int
	// Members: members frames of these ids (1..MaxMembers); nil: none.
	Members []string
	// Meta: top and view frames carry their entries' meta.
	Meta bool
	// Cohort, on a cohort board, makes the top frames that cohort's
	// standings instead of the board's (§12; cohort.go).
	Cohort string
}

// metaTop offsets the topSubs key of a "meta": true top subscription: such
// subscribers get other bytes than the others of the same N, so they are
// another subscriber set, and one map keyed by N keeps the top paths as
// they are. topCount gives back N, topMeta the flag.
const metaTop = 1 << 20

func topKey(n int, meta bool) int {
	if meta && n > 0 {
		return n + metaTop
	}
	return n
}

func topCount(k int) int { return k % metaTop }
func topMeta(k int) bool { return k >= metaTop }

// frameEntries converts entries for a frame, without their meta unless the
// subscription asked for it (§11).
func frameEntries(es []rank.Entry, meta bool) []proto.Entry {
	out := proto.EntriesOf(es)
	if !meta {
		proto.WithoutMeta(out)
	}
	return out
}

// listSlot is the Outbox slot of a board's members frames. A board id
// never holds '#', so it cannot be a top or view slot.
func listSlot(board string) slotKey { return slotKey{board: "#members/" + board} }

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

// memberLists is a board's members subscriptions. Guarded by Engine.mu.
//
// The union is a slice of positions, so that a read's answer is cut into
// frames by index, with no map lookup per listed entry: each list holds
// the positions of its ids, fixed for its life; a position nobody lists
// any more is freed ("") and reused.
type memberLists struct {
	lists map[string]*memberList // by listKey
	ids   []string               // the union by position; "" is a free position
	pos   map[string]int32       // id → position in ids
	refs  []int32                // lists holding each position
	free  []int32                // free positions
	dirty bool                   // the board changed since the lists' last read
}

// watching is how many of the board's lists hold id.
func (ml *memberLists) watching(id string) int {
	if p, ok := ml.pos[id]; ok {
		return int(ml.refs[p])
	}
	return 0
}

// add takes a reference on id's position, giving it one if it has none.
func (ml *memberLists) add(id string) int32 {
	p, ok := ml.pos[id]
	if !ok {
		if n := len(ml.free); n > 0 {
			p, ml.free = ml.free[n-1], ml.free[:n-1]
			ml.ids[p] = id
		} else {
			p = int32(len(ml.ids))
			ml.ids = append(ml.ids, id)
			ml.refs = append(ml.refs, 0)
		}
		ml.pos[id] = p
	}
	ml.refs[p]++
	return p
}

// release drops a reference on position p, freeing it at the last.
func (ml *memberLists) release(p int32) {
	if ml.refs[p]--; ml.refs[p] > 0 {
		return
	}
	delete(ml.pos, ml.ids[p])
	ml.ids[p] = ""
	ml.free = append(ml.free, p)
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
	// unsent: res came from a Subscribe's read and has not been offered to
	// the other watchers yet; the next scheduled read does that.
	unsent bool
}

type listResult struct {
	entries  []rank.Entry // in rank order
	total    int64
	seq      int64
	decimals int
	bytes    []byte
}

// listsJob is the members part of a job: the ids to read (by position; ""
// is skipped) and the lists to cut from them, each with its ids'
// positions.
type listsJob struct {
	ids    []string
	lists  []*memberList
	pos    [][]int32
	prev   []*listResult // each list's res when the job started
	next   []*listResult // set when the read succeeded
	period int64
	seq    int64
}

// listKey is the identity of a list: its sorted ids.
func listKey(ids []string) (string, []string) {
	s := slices.Clone(ids)
	slices.Sort(s)
	s = slices.Compact(s)
	return strings.Join(s, ","), s
}

// markLists marks b's lists for a read. Lock held.
func (e *Engine) markLists(b *board) {
	if len(b.ml.lists) > 0 && !b.ml.dirty {
		b.ml.dirty = true
		e.kick = true
	}
}

// listsProfiles marks b's lists when one of the members whose profile
// changed is listed (R20 makes a rename a change). Lock held.
func (e *Engine) listsProfiles(b *board, changed map[string]struct{}) {
	for m := range changed {
		if b.ml.watching(m) > 0 {
			e.markLists(b)
			return
		}
	}
}

// openList opens (or closes) o's members slot of board for s.
func (e *Engine) openList(o *Outbox, s *sub, board string, on bool) {
	if on {
		s.mlGen = o.open(listSlot(board))
	} else {
		o.close(listSlot(board))
	}
}

// subscribeList registers o's list on b and gives it its first frame: the
// list's current one when it is fresh, else j reads it. Lock held.
func (e *Engine) subscribeList(b *board, o *Outbox, s *sub, ids []string, j *job, out []delivery) []delivery {
	key, sorted := listKey(ids)
	ml := &b.ml
	if ml.lists == nil {
		ml.lists = make(map[string]*memberList)
		ml.pos = make(map[string]int32)
	}
	l := ml.lists[key]
	if l == nil {
		l = &memberList{key: key, ids: sorted, pos: make([]int32, len(sorted)), watchers: newSubscribers()}
		ml.lists[key] = l
		for i, id := range sorted {
			l.pos[i] = ml.add(id)
		}
	}
	l.watchers.set(o, s.mlGen)
	s.ml = l
	if r := l.res; r != nil && !ml.dirty && r.seq >= o.floor(listSlot(b.id)) {
		return append(out, delivery{listSlot(b.id), r.seq, r.bytes, []target{{o, s.mlGen}}, time.Time{}})
	}
	// The list alone, read in the order of its ids.
	own := make([]int32, len(l.ids))
	for i := range own {
		own[i] = int32(i)
	}
	j.ml = &listsJob{ids: l.ids, lists: []*memberList{l}, pos: [][]int32{own}, prev: []*listResult{l.res}}
	return out
}

// ownList is a Subscribe's own first members frame, after j ran: the list's
// newest if it is not older than what o already had, else j's. Lock held.
func (e *Engine) ownList(j *job, o *Outbox, s *sub, out []delivery) []delivery {
	if j.ml == nil || j.ml.next == nil || s.ml == nil {
		return out
	}
	k := listSlot(j.b.id)
	r := s.ml.res
	if r == nil || r.seq < o.floor(k) {
		r = j.ml.next[0]
	}
	return append(out, delivery{k, r.seq, r.bytes, []target{{o, s.mlGen}}, time.Time{}})
}

// dropList removes o from its list on b, and the list when nobody watches
// it any more. Lock held.
func (e *Engine) dropList(b *board, o *Outbox, s *sub) {
	l := s.ml
	if l == nil {
		return
	}
	l.watchers.del(o)
	if l.watchers.len() > 0 {
		return
	}
	l.removed = true
	delete(b.ml.lists, l.key)
	for _, p := range l.pos {
		b.ml.release(p)
	}
	if len(b.ml.lists) == 0 {
		b.ml = memberLists{}
	}
}

// snapshot takes the lists' dirty mark into a job of the whole union, or
// returns nil. Lock held.
func (ml *memberLists) snapshot() *listsJob {
	if !ml.dirty || len(ml.lists) == 0 {
		return nil
	}
	ml.dirty = false
	// A copy: positions freed and reused while the job reads must not
	// change what its lists' positions mean.
	j := &listsJob{ids: slices.Clone(ml.ids)}
	for _, l := range ml.lists {
		j.lists = append(j.lists, l)
		j.pos = append(j.pos, l.pos)
		j.prev = append(j.prev, l.res)
	}
	return j
}

// readLists reads j's ids (in chunks of listChunk) and cuts each list's
// result, encoding those that changed. No lock held. It returns the read's
// error; failed is an earlier failure of the job (the config read) that
// stands for it.
func (e *Engine) readLists(ctx context.Context, j *job, failed error) error {
	lj := j.ml
	if lj == nil {
		return nil
	}
	if failed != nil {
		return failed
	}
	ask := make([]string, 0, len(lj.ids))
	at := make([]int32, 0, len(lj.ids)) // position of each asked id
	for p, id := range lj.ids {
		if id != "" {
			ask = append(ask, id)
			at = append(at, int32(p))
		}
	}
	var hits []rank.Entry // the found members' entries
	var hitPos []int32    // and their positions
	var total int64
	decimals := 0
	for lo := 0; lo < len(ask); lo += listChunk {
		hi := min(lo+listChunk, len(ask))
		r, err := e.readRanks(ctx, j.b.id, j.final.sel, ask[lo:hi], rank.BoardRanks) // whole-board ranks (§11)
		if err != nil {
			return err
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
		if r.Seq >= lj.seq {
			lj.seq, total, lj.period, decimals = r.Seq, r.Total, r.Period, r.Decimals
		}
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
	hitAt := make([]int32, len(lj.ids)) // position → 1 + its place in order; 0: not found
	for k, h := range order {
		hitAt[hitPos[h]] = int32(k) + 1
	}
	// Lists overlap: each entry is encoded once per read, and each frame
	// is those encodings put together.
	enc := make([][]byte, len(hits))
	var idx []int32
	ts := e.now().UnixMilli()
	lj.next = make([]*listResult, len(lj.lists))
	for i := range lj.lists {
		idx = idx[:0]
		for _, p := range lj.pos[i] {
			if k := hitAt[p]; k > 0 {
				idx = append(idx, k-1)
			}
		}
		slices.Sort(idx)
		next := &listResult{entries: make([]rank.Entry, len(idx)), total: total, seq: lj.seq, decimals: decimals}
		for n, k := range idx {
			next.entries[n] = hits[order[k]]
		}
		if p := lj.prev[i]; j.sub || p == nil || !slices.Equal(p.entries, next.entries) {
			next.bytes = e.appendMembers(j.b.id, next, ts, func(n int) []byte {
				k := idx[n]
				if enc[k] == nil {
					enc[k], _ = json.Marshal(proto.Entry(next.entries[n]))
				}
				return enc[k]
			})
		}
		lj.next[i] = next
	}
	return nil
}

// installLists makes j's list results current where they are newer and
// different, and appends their deliveries. A frame is due when a listed
// member's rank, score, name or meta changed: the total alone does not
// make one. Lock held.
func (e *Engine) installLists(b *board, j *job, out []delivery) []delivery {
	lj := j.ml
	if lj == nil {
		return out
	}
	if lj.next == nil {
		e.markLists(b) // the read failed: again next tick
		return out
	}
	b.seenSeq = max(b.seenSeq, lj.seq)
	if b.cfgOK && !j.final.is && lj.period < b.period {
		e.markLists(b) // the store has not rolled over yet: read again
	}
	k := listSlot(b.id)
	for i, l := range lj.lists {
		next := lj.next[i]
		if l.removed {
			continue
		}
		if cur := l.res; cur != nil && (cur.seq > next.seq || slices.Equal(cur.entries, next.entries)) {
			// Nothing newer; a frame a Subscribe installed still goes to
			// the others, now that the schedule has come round.
			if !j.sub && l.unsent {
				l.unsent = false
				out = append(out, delivery{k, cur.seq, cur.bytes, l.watchers.targets(), j.at})
			}
			continue
		}
		if next.bytes == nil {
			next.bytes = e.encodeMembers(b.id, next, e.now().UnixMilli())
		}
		l.res = next
		if j.sub {
			// Off the schedule: see job.sub.
			if l.unsent = !onlyWatcher(l.watchers, j.o); l.unsent {
				e.markLists(b)
			}
			continue
		}
		l.unsent = false
		out = append(out, delivery{k, next.seq, next.bytes, l.watchers.targets(), j.at})
	}
	return out
}

// appendMembers is encodeMembers from its entries' encodings (entry(n)
// is the n-th entry's, made once per read and shared by every list that
// shows it): the same bytes, as TestMembersEncoding checks.
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

// encodeMembers is the exact JSON of a proto.Members frame.
func (e *Engine) encodeMembers(board string, r *listResult, ts int64) []byte {
	e.encoded.Add(1)
	b, _ := json.Marshal(proto.Members{
		Type: proto.TypeMembers, Board: board, Entries: proto.EntriesOf(r.entries),
		Total: r.total, Seq: r.seq, TS: ts,
	})
	return proto.Decimalize(b, r.decimals)
}
