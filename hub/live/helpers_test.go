package live

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
)

// countingStore counts the reads the engine makes on the real memory store,
// and can be made to fail them.
type countingStore struct {
	rank.Store
	tops, ranks atomic.Int64
	rankIDs     atomic.Int64 // members asked of Ranks, in all
	fail        atomic.Bool
	// gate, when set, holds a Ranks call after it read the store, until the
	// gate's release channel is closed; topGate a Top call.
	gate, topGate atomic.Pointer[gate]
}

type gate struct {
	held    chan struct{} // closed when a read is held
	release chan struct{}
	before  bool // held before it reads (topGate)
}

func (g *gate) hold() {
	close(g.held)
	<-g.release
}

func (c *countingStore) Top(ctx context.Context, board string, p rank.PeriodSel, offset, limit int) (rank.Page, error) {
	c.tops.Add(1)
	if c.fail.Load() {
		return rank.Page{}, rank.ErrUnavailable
	}
	g := c.topGate.Swap(nil)
	if g != nil && g.before {
		g.hold()
	}
	pg, err := c.Store.Top(ctx, board, p, offset, limit)
	if g != nil && !g.before {
		g.hold()
	}
	return pg, err
}

func (c *countingStore) Ranks(ctx context.Context, board string, p rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	c.ranks.Add(1)
	c.rankIDs.Add(int64(len(members)))
	if c.fail.Load() {
		return rank.Ranks{}, rank.ErrUnavailable
	}
	r, err := c.Store.Ranks(ctx, board, p, members, around)
	if g := c.gate.Swap(nil); g != nil {
		g.hold()
	}
	return r, err
}

// clockGate holds the nth read of the store's clock made with a context
// that carries it (holdClock), before it reads, until release is closed.
type clockGate struct {
	gate
	n atomic.Int32
}

type clockGateKey struct{}

// holdClock is ctx carrying a gate for its nth read of the store's clock:
// an engine call made with it stops there.
func holdClock(ctx context.Context, n int32) (context.Context, *clockGate) {
	g := &clockGate{gate: gate{held: make(chan struct{}), release: make(chan struct{})}}
	g.n.Store(n)
	return context.WithValue(ctx, clockGateKey{}, g), g
}

func (c *countingStore) Now(ctx context.Context) (time.Time, error) {
	if g, ok := ctx.Value(clockGateKey{}).(*clockGate); ok && g.n.Add(-1) == 0 {
		g.hold()
	}
	return c.Store.Now(ctx)
}

const testInterval = 100 * time.Millisecond

// harness is an Engine over a real memory store, run inside a synctest
// bubble so that waiting for a tick is exact.
type harness struct {
	t     *testing.T
	st    *countingStore
	e     *Engine
	ids   int
	clock func() time.Time
}

type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// newHarness must be called inside synctest.Test. cfg.Store, Interval, Now
// and Logger are filled in.
func newHarness(t *testing.T, cfg Config, clock func() time.Time) *harness {
	t.Helper()
	if clock == nil {
		clock = time.Now
	}
	ms, err := memstore.New(rank.Hooks{}, memstore.Config{Now: clock, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	h := &harness{t: t, st: &countingStore{Store: ms}, clock: clock}
	cfg.Store = h.st
	cfg.Interval = testInterval
	cfg.Now = clock
	cfg.Logger = slog.New(slog.NewTextHandler(testLogWriter{t}, nil))
	h.e, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); h.e.Run(t.Context()) }()
	t.Cleanup(func() { <-done })
	return h
}

func (h *harness) board(b rank.Board) {
	h.t.Helper()
	if _, err := h.st.PutBoard(context.Background(), b); err != nil {
		h.t.Fatal(err)
	}
}

// apply applies a delta (or value) and, when report is set, tells the engine.
func (h *harness) apply(board, member string, amount int64, report bool) rank.Result {
	h.t.Helper()
	h.ids++
	b, err := h.st.GetBoard(context.Background(), board)
	if err != nil {
		h.t.Fatal(err)
	}
	op := rank.OpDelta
	if b.Mode != rank.Incr {
		op = rank.OpValue
	}
	r, err := rank.ApplyWait(context.Background(), h.st, rank.Event{Board: board, ID: "e" + strconv.Itoa(h.ids), Member: member, Op: op, Amount: amount})
	if err != nil {
		h.t.Fatal(err)
	}
	if report {
		h.e.Changed([]rank.Change{changeOf(r)})
	}
	return r
}

func changeOf(r rank.Result) rank.Change {
	c := rank.Change{Board: r.Board, Seq: r.Seq, Member: r.Member, New: r.Score, Rank: r.Rank, PrevRank: r.PrevRank, Period: r.Period}
	if r.PrevRank > 0 {
		old := r.PrevScore
		c.Old = &old
	}
	return c
}

// settle lets the engine react: enough fake time for a grace period, a read
// and the throttle, then every goroutine idle.
func (h *harness) settle() {
	time.Sleep(3 * testInterval)
	synctest.Wait()
}

func (h *harness) reads() (top, ranks int64) { return h.st.tops.Load(), h.st.ranks.Load() }

// reader is a connection's writer side: it takes frames and keeps the latest
// per board, checking the seq never decreases.
type reader struct {
	t    *testing.T
	o    *Outbox
	top  map[string]proto.Top
	view map[string]proto.View
	// members is the latest members frame per board (§11).
	members map[string]proto.Members
	raw     map[string][]byte // latest raw frame per "top/board" and "view/board"
	n       int
	// boards and finals are every board frame and final top frame, in
	// order, per board (R19).
	boards map[string][]proto.Board
	finals map[string][]proto.Top
	// all is every frame taken, in order.
	all [][]byte
	mu  sync.Mutex // drain's, for an eager reader's writer
}

func newReader(t *testing.T) *reader {
	return &reader{t: t, o: NewOutbox(testInterval, nil), top: map[string]proto.Top{}, view: map[string]proto.View{}, members: map[string]proto.Members{}, raw: map[string][]byte{},
		boards: map[string][]proto.Board{}, finals: map[string][]proto.Top{}}
}

// newEagerReader is a reader whose writer takes each frame as soon as it
// is due, on the goroutine that offers it (a wake Outbox): no frame it
// would write is replaced in its slot before. Read its fields under mu.
func newEagerReader(t *testing.T) *reader {
	r := newReader(t)
	r.o = NewOutboxWake(testInterval, nil, func() { r.drain() })
	return r
}

// drain takes the frames due now; it may run on a goroutine of its own.
func (r *reader) drain() (retryIn time.Duration) {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	fs, retryIn := r.o.Take(time.Now())
	r.all = append(r.all, fs...)
	for _, f := range fs {
		r.n++
		var head struct{ Type, Board string }
		if err := json.Unmarshal(f, &head); err != nil {
			r.t.Errorf("frame %s: %v", f, err)
			continue
		}
		r.raw[head.Type+"/"+head.Board] = f
		switch head.Type {
		case proto.TypeBoard:
			var m proto.Board
			mustStrict(r.t, f, &m)
			r.boards[m.Board] = append(r.boards[m.Board], m)
		case proto.TypeTop:
			var m proto.Top
			mustStrict(r.t, f, &m)
			if len(r.boards[m.Board]) == 0 {
				r.t.Errorf("top frame of %s before its board frame (R19)", m.Board)
			}
			if m.Final {
				r.finals[m.Board] = append(r.finals[m.Board], m)
			}
			if p, ok := r.top[m.Board]; ok && m.Seq < p.Seq {
				r.t.Errorf("top seq of %s went down: %d after %d", m.Board, m.Seq, p.Seq)
			}
			r.top[m.Board] = m
		case proto.TypeView:
			var m proto.View
			mustStrict(r.t, f, &m)
			if len(r.boards[m.Board]) == 0 {
				r.t.Errorf("view frame of %s before its board frame (R19)", m.Board)
			}
			if p, ok := r.view[m.Board]; ok && m.Seq < p.Seq {
				r.t.Errorf("view seq of %s went down: %d after %d", m.Board, m.Seq, p.Seq)
			}
			r.view[m.Board] = m
		case proto.TypeMembers:
			var m proto.Members
			mustStrict(r.t, f, &m)
			if p, ok := r.members[m.Board]; ok && m.Seq < p.Seq {
				r.t.Errorf("members seq of %s went down: %d after %d", m.Board, m.Seq, p.Seq)
			}
			r.members[m.Board] = m
		default:
			r.t.Errorf("unexpected frame %s", f)
		}
	}
	return retryIn
}

// writeLoop is a connection's writer loop as the hub runs it (see Outbox):
// whenever Ready fires, or the timer armed from the last retryIn, take calls
// Take, handles the frames and returns retryIn. It returns when ctx is done.
func writeLoop(ctx context.Context, o *Outbox, take func() (retryIn time.Duration)) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.Ready():
		case <-timer.C:
		}
		if retry := take(); retry > 0 {
			timer.Reset(retry)
		}
	}
}

func mustStrict(t *testing.T, f []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(f, v); err != nil {
		t.Errorf("frame %s: %v", f, err)
	}
	back, _ := json.Marshal(v)
	if string(back) != string(f) {
		t.Errorf("frame is not the exact JSON of its message:\n got %s\nwant %s", f, back)
	}
}

// topMatches compares the reader's latest top frame with the store's top n.
func topMatches(st rank.Store, r *reader, board string, n int) error {
	p, err := st.Top(context.Background(), board, "", 0, n)
	if err != nil {
		return err
	}
	got, ok := r.top[board]
	switch {
	case !ok:
		return fmt.Errorf("no top frame for %s", board)
	case got.Total != p.Total || !slices.Equal(got.Entries, proto.EntriesOf(p.Entries)):
		return fmt.Errorf("top frame %s (seq %d) = %v total %d; store (seq %d) has %v total %d",
			board, got.Seq, got.Entries, got.Total, p.Seq, proto.EntriesOf(p.Entries), p.Total)
	}
	return nil
}

// viewMatches compares the reader's latest view frame with the store.
func viewMatches(st rank.Store, r *reader, board, member string, around int) error {
	rs, err := st.Ranks(context.Background(), board, "", []string{member}, around)
	if err != nil {
		return err
	}
	m := rs.Members[0]
	got, ok := r.view[board]
	if !ok {
		return fmt.Errorf("no view frame for %s", board)
	}
	want := proto.View{Type: proto.TypeView, Board: board, Member: member, Around: proto.EntriesOf(m.Around), Seq: got.Seq, TS: got.TS}
	if m.Found {
		want.Rank, want.Score = &m.Rank, &m.Score
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if string(a) != string(b) {
		return fmt.Errorf("view frame\n got %s\nwant %s (store seq %d)", a, b, rs.Seq)
	}
	return nil
}

// check reports every mismatch of a reader's latest frames with the store.
func (h *harness) check(r *reader, board string, top int, member string, around int) {
	h.t.Helper()
	r.drain()
	if top > 0 {
		if err := topMatches(h.st.Store, r, board, top); err != nil {
			h.t.Error(err)
		}
	}
	if around > 0 {
		if err := viewMatches(h.st.Store, r, board, member, around); err != nil {
			h.t.Error(err)
		}
	}
}

func (h *harness) subscribe(r *reader, board string, top int, member string, around int) {
	h.t.Helper()
	if err := h.e.Subscribe(context.Background(), r.o, board, top, member, around); err != nil {
		h.t.Fatal(err)
	}
	firstFrames(r.o)
}

// firstFrames waits until o holds a first frame in every slot it opened:
// a frame the engine did not hold comes from the board's next read.
func firstFrames(o *Outbox) {
	for synctest.Wait(); o.awaiting(); synctest.Wait() {
		time.Sleep(testInterval / 20)
	}
}

// Test-only helpers of the Outbox.

// NewOutbox returns an empty Outbox. interval is the minimum gap between two
// frames of one key (zero: no throttle); now is the clock Take uses when
// given a zero time (nil: time.Now).
func NewOutbox(interval time.Duration, now func() time.Time) *Outbox {
	return NewOutboxSignal(interval, now, make(chan struct{}, 1))
}

// offer puts frame in the slot of k if the slot belongs to subscription gen
// and the frame is not older than what the slot holds or has sent. It
// reports whether the frame was accepted. The frame counts as arrived now.
func (o *Outbox) offer(k slotKey, gen uint64, seq int64, frame []byte) bool {
	return o.offerAt(k, gen, seq, frame, time.Time{})
}

// pending is the number of slots holding a frame (for tests).
func (o *Outbox) pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, s := range o.order {
		if s.frame != nil {
			n++
		}
	}
	return n
}

// awaiting reports whether a slot waits for its first frame.
func (o *Outbox) awaiting() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.order {
		if s.initial && s.frame == nil {
			return true
		}
	}
	return false
}

// keys is the number of open slots (for tests).
func (o *Outbox) keys() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.order)
}

// kindOf is b's first kind of type K (the whole board's standings, for
// *standings).
func kindOf[K kind](b *board) K {
	for _, k := range b.kinds {
		if x, ok := k.(K); ok {
			return x
		}
	}
	var zero K
	return zero
}

// Stats are the engine's counters and subscriptions, for the tests.
type Stats struct {
	Reads    uint64 // store calls made (Top, Ranks, Board)
	Errors   uint64 // store calls that failed
	Encoded  uint64 // frames encoded
	Boards   int    // boards with at least one subscription on this node
	Views    int    // distinct (board, member, around) views
	TopSubs  int    // top subscriptions
	Watchers int    // view subscriptions
}

func (e *Engine) Stats() Stats {
	s := Stats{Reads: e.reads.Load(), Errors: e.errs.Load(), Encoded: e.encoded.Load()}
	e.mu.Lock()
	defer e.mu.Unlock()
	s.Boards = len(e.boards)
	for _, b := range e.boards {
		for _, k := range b.kinds {
			if st, ok := k.(*standings); ok {
				st.each(func(subs *subscribers) { s.TopSubs += subs.len() })
			}
		}
		vs := kindOf[*views](b)
		s.Views += len(vs.byKey)
		vs.each(func(subs *subscribers) { s.Watchers += subs.len() })
	}
	return s
}

// Subscribe is SubscribeSpec with top frames of the first top entries (0:
// none) and view frames of member with around neighbours (0: none): the
// tests' shorthand.
func (e *Engine) Subscribe(ctx context.Context, o *Outbox, board string, top int, member string, around int) error {
	return e.SubscribeSpec(ctx, o, Spec{Board: board, Top: top, Member: member, Around: around})
}
