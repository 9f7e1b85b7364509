package client

import (
	"encoding/json"
	"sync"

	"github.com/wsgateway/wsgateway/proto"
)

// Subscription is a board's live frames. Its channels hold only the newest
// frame not yet received (latest wins: a slow reader skips frames, never
// reads a stale one late); they are closed by Unsubscribe and Close.
type Subscription struct {
	board string
	top   chan proto.Top
	view  chan proto.View
	state chan proto.Board
	list  chan proto.Members

	// mu guards the fields below, and orders offers against close.
	mu     sync.Mutex
	opts   SubOpts
	closed bool
	// The stream the subscription follows (§15): the epoch of its last
	// `subscribed`, the greatest seq of a frame since, and whether the last
	// renewal resumed.
	epoch   string
	seq     int64
	resumed bool
}

func newSubscription(board string, o SubOpts) *Subscription {
	return &Subscription{board: board, opts: o, top: make(chan proto.Top, 1), view: make(chan proto.View, 1),
		state: make(chan proto.Board, 1), list: make(chan proto.Members, 1)}
}

// Board is the subscribed board.
func (s *Subscription) Board() string { return s.board }

// Top delivers the board's top frames.
func (s *Subscription) Top() <-chan proto.Top { return s.top }

// View delivers the watched member's view frames.
func (s *Subscription) View() <-chan proto.View { return s.view }

// Opts are the subscription's current options.
func (s *Subscription) Opts() SubOpts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts
}

func (s *Subscription) setOpts(o SubOpts) (old SubOpts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, s.opts = s.opts, o
	return old
}

// req is the subscribe request for the current options.
func (s *Subscription) req(id string) *proto.Request {
	o := s.Opts()
	r := &proto.Request{Type: proto.TypeSubscribe, ID: id, Board: s.board, Member: o.Member, Cohort: o.Cohort, Region: o.Region, Scope: o.Scope}
	switch {
	case o.Top < 0:
		r.Top = new(0)
	case o.Top > 0:
		r.Top = new(o.Top)
	}
	if o.Around > 0 {
		r.Around = new(o.Around)
	}
	o.listReq(r)
	return r
}

// renewal is the request that renews the subscription on a new
// connection: req, resuming from the stream followed so far (§15).
func (s *Subscription) renewal(id string) []byte {
	r := s.req(id)
	s.mu.Lock()
	if s.epoch != "" {
		r.Since = &proto.Since{Epoch: s.epoch, Seq: s.seq}
	}
	s.mu.Unlock()
	b, _ := json.Marshal(r) // a proto.Request always encodes
	return b
}

// subscribed records a `subscribed`: the stream's epoch, and whether it
// resumed the stream followed so far; a fresh stream's seqs start again.
func (s *Subscription) subscribed(epoch string, resumed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !resumed {
		s.seq = 0
	}
	s.epoch, s.resumed = epoch, resumed
}

// Epoch names the board's stream the subscription follows (§15), from its
// last `subscribed`; "" before it.
func (s *Subscription) Epoch() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// Seq is the greatest seq of a frame received since the last fresh
// `subscribed`: where a renewal resumes from.
func (s *Subscription) Seq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// Resumed reports whether the last renewal after a reconnect resumed the
// stream (§15): the gateway then sent only what changed while the client
// was away; otherwise it sent everything afresh.
func (s *Subscription) Resumed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumed
}

// saw records a frame's seq. s.mu held.
func (s *Subscription) saw(seq int64) { s.seq = max(s.seq, seq) }

// offerTop and offerView replace an unread frame with a newer one.
func (s *Subscription) offerTop(t proto.Top) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saw(t.Seq)
	if !s.closed {
		offer(s.top, t)
	}
}

// State holds the newest board frame (R19): the board's state, period and
// schedule. A frame with State "deleted" is the last: the channels close
// after it.
func (s *Subscription) State() <-chan proto.Board { return s.state }

func (s *Subscription) offerBoard(b proto.Board) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		offer(s.state, b)
	}
}

func (s *Subscription) offerView(v proto.View) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saw(v.Seq)
	if !s.closed {
		offer(s.view, v)
	}
}

// offer puts v in the one-slot ch, dropping an unread older value. Offers
// are serialised (Subscription.mu), so the loop ends within two turns.
func offer[T any](ch chan T, v T) {
	for {
		select {
		case ch <- v:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}

func (s *Subscription) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.top)
		close(s.view)
		close(s.state)
		close(s.list)
	}
}
