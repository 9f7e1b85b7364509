package live

import (
	"slices"
	"sync"
	"time"
)

// slotKey names one subscription's frame stream on a connection: a board's
// top, view or members frames.
type slotKey struct {
	board string
	kind  slotKind
}

// slotKind is which of a board's frame streams a slot holds, in the order
// Take returns them.
type slotKind uint8

const (
	topSlot slotKind = iota // top frames: the board's or a group's (standings.go)
	viewSlot
	listSlot
	slotKinds = iota
)

// slot is the one-frame holder of a key. A newer frame replaces an
// undelivered one; nothing ever queues behind it.
type slot struct {
	key      slotKey
	gen      uint64    // subscription generation; frames of an older one are ignored
	frame    []byte    // pending frame, nil when none
	seq      int64     // seq of the pending frame
	sentSeq  int64     // seq of the last frame taken
	readyAt  time.Time // when the pending frame arrived (an older one it replaced counts)
	lastSent time.Time // when the last frame taken became eligible (see Take)
	sent     bool      // a frame that counts toward the interval has been taken
	// initial: the subscription is (re)opened and its first frame not yet
	// taken. That frame goes at once and does not count toward the
	// interval (R7, v1.1), so a subscriber falls in phase with the node's
	// reads instead of waiting out an interval from its own subscribe.
	initial bool
}

// Outbox is one connection's latest-wins frame holder: one slot per
// subscription key (a board's top; a board's member view). It holds at most
// one frame per key, releases at most one frame per interval per key, never
// releases a frame whose seq is lower than the last one released for that key,
// and never queues. The engine fills it; the connection's writer goroutine
// waits on Ready and calls Take:
//
//	for {
//		select {
//		case <-ctx.Done(): return
//		case <-o.Ready():
//		case <-retry.C: // a timer armed from Take's retryIn
//		}
//		frames, retryIn := o.Take(time.Now())
//		for _, f := range frames { write(f) } // f is shared: never modify it
//		if retryIn > 0 { retry.Reset(retryIn) }
//	}
//
// All methods are safe for concurrent use. The Outbox's mutex is a leaf lock:
// nothing else is locked while it is held, except by the non-blocking
// DirectWriter.TryAcquire (a TryLock never waits, so it cannot deadlock).
type Outbox struct {
	interval time.Duration
	now      func() time.Time
	ready    chan struct{} // capacity 1: a coalescing "something to take" signal
	wake     func()        // instead of ready (NewOutboxWake)
	direct   DirectWriter  // nil: every frame goes through Ready and Take

	mu sync.Mutex // guards everything below
	// last is the slot offerAt found last (nil: none): a spectator's
	// offers are all for one key, and the map lookup (hashing the board
	// id) was a tenth of the fan-out's CPU at 10,000 spectators once the
	// fan-out wrote frames itself.
	last *slot
	// order is the slots in subscription order, so Take returns top before
	// view. A connection has a handful, so a key is found by searching it
	// (slot): a map of one key was a few hundred bytes per connection.
	order     []*slot
	gen       uint64
	delivered uint64
	coalesced uint64
	// events are frames that must not be coalesced with each other or
	// with the slots' frames (R19: board frames, final top frames). Take
	// returns them first and unthrottled; at most maxEvents wait, the
	// oldest dropped past that (a reader that slow is about to be closed
	// as a slow consumer anyway, R12).
	events [][]byte
}

// maxEvents bounds an Outbox's waiting events.
const maxEvents = 16

// DirectWriter lets the fan-out write a frame itself when the connection's
// writer is idle, instead of waking the writer to Take it: the wake-up
// (a channel send here, the writer's receive, park and reschedule) and the
// writer's pass over its sources cost as much again as the write(2) itself
// at 1,000 spectators. The hub implements it; live does not import hub.
type DirectWriter interface {
	// TryAcquire reports whether the frame may be written now, and if so
	// holds the connection's socket until WriteDirect: the writer is idle
	// (parked; the replies it has queued go first, in the same write), and
	// the frame would be written at once, in order. It is called with the Outbox's mutex held, so it
	// must never block (TryLock-style calls only).
	TryAcquire() bool
	// WriteDirect writes frame (shared: never modified) and releases what
	// TryAcquire took. It is called with no Outbox lock held and must not
	// block on the peer: what the socket does not take at once is left to
	// the writer.
	WriteDirect(frame []byte)
}

// SetDirect makes o hand due frames to w when w's writer is idle (see
// offerAt). Call it before o is subscribed to anything.
func (o *Outbox) SetDirect(w DirectWriter) {
	o.mu.Lock()
	o.direct = w
	o.mu.Unlock()
}

// NewOutboxSignal returns an empty Outbox that signals ready (capacity 1)
// when a frame is due, so that a writer with several sources of work can
// wait on one channel for all of them. interval is the minimum gap between
// two frames of one key (zero: no throttle); now is the clock Take uses
// when given a zero time (nil: time.Now).
func NewOutboxSignal(interval time.Duration, now func() time.Time, ready chan struct{}) *Outbox {
	if now == nil {
		now = time.Now
	}
	return &Outbox{interval: interval, now: now, ready: ready}
}

// NewOutboxWake is NewOutboxSignal calling wake instead of signalling a
// channel, for a writer that is started only when there is work (wake must
// not block; it is called with no lock of the Outbox held). Ready is nil.
func NewOutboxWake(interval time.Duration, now func() time.Time, wake func()) *Outbox {
	o := NewOutboxSignal(interval, now, nil)
	o.wake = wake
	return o
}

// signal tells the writer there is something to take.
func (o *Outbox) signal() {
	if o.wake != nil {
		o.wake()
		return
	}
	select {
	case o.ready <- struct{}{}:
	default:
	}
}

// Ready is signalled (coalescing) whenever a frame is put in a slot that is
// due; a frame for a key still inside its interval is left to the timer armed
// from Take's retryIn. With NewOutboxSignal it is the writer's shared
// channel: only that writer may receive from it, or it steals wake-ups.
func (o *Outbox) Ready() <-chan struct{} { return o.ready }

// Take returns the frames due at now, oldest subscription first, and marks
// them sent. When some key is inside its interval (a frame held back or not),
// retryIn is how long until the earliest of them is due: call Take again then
// (Ready is not signalled for it). The returned slices are shared with other
// connections and must not be modified.
func (o *Outbox) Take(now time.Time) (frames [][]byte, retryIn time.Duration) {
	return o.TakeAppend(nil, now)
}

// TakeAppend is Take appending the frames to dst, so that a writer can
// reuse one slice instead of allocating one per Take (one Take per frame
// per connection).
func (o *Outbox) TakeAppend(dst [][]byte, now time.Time) (frames [][]byte, retryIn time.Duration) {
	frames = dst
	if now.IsZero() {
		now = o.now()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.events) > 0 {
		frames = append(frames, o.events...)
		o.delivered += uint64(len(o.events))
		o.events = nil
	}
	// retryIn covers every key holding a frame that is not due yet: offer
	// signals Ready only for a frame that is due or that fills an empty
	// slot, so the writer's timer is what takes a held frame when it
	// becomes due. An empty key arms nothing: a frame that arrives for it
	// signals Ready itself, and with reads on the board's schedule it is
	// due when it arrives, so a spectator's writer wakes once per frame and
	// never for a timer.
	for _, s := range o.order {
		if s.frame == nil {
			continue
		}
		if s.initial {
			frames = append(frames, s.frame)
			s.sentSeq, s.frame, s.initial = s.seq, nil, false
			o.delivered++
			continue
		}
		if s.sent && o.interval > 0 {
			if wait := s.lastSent.Add(o.interval).Sub(now); wait > 0 {
				if retryIn == 0 || wait < retryIn {
					retryIn = wait
				}
				continue
			}
		}
		frames = append(frames, s.frame)
		// The throttle counts from when the frame became eligible (it
		// arrived, or the previous one's interval ended), not from when the
		// writer got to it: counting from the take would add the writer's
		// wake-up latency to every held frame, round after round, until
		// frames lagged a whole interval behind their reads (measured: frame
		// lag p99 97 ms at 1,000 spectators with a 100 ms interval).
		o.markSent(s, now)
		s.frame = nil
	}
	return frames, retryIn
}

// markSent records s's pending frame (s.seq, arrived at s.readyAt) as
// taken at now: the throttle counts from when it became eligible. Lock
// held.
func (o *Outbox) markSent(s *slot, now time.Time) {
	eligible := s.readyAt
	if s.sent {
		if due := s.lastSent.Add(o.interval); due.After(eligible) {
			eligible = due
		}
	}
	if eligible.IsZero() || eligible.After(now) {
		eligible = now
	}
	s.sentSeq, s.lastSent, s.sent = s.seq, eligible, true
	o.delivered++
}

// Stats reports frames taken and frames replaced before they were taken.
func (o *Outbox) Stats() (delivered, coalesced uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.delivered, o.coalesced
}

// open starts (or restarts) the slot of k and returns its new generation. A
// pending frame of the previous subscription is discarded; the throttle and
// the seq floor carry over, so a re-subscription cannot break either.
func (o *Outbox) open(k slotKey) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gen++
	s := o.slot(k)
	if s == nil {
		s = &slot{key: k}
		o.order = append(o.order, s)
	}
	s.gen, s.frame, s.initial = o.gen, nil, true
	return o.gen
}

// slot is the slot of k, nil when none. Lock held.
func (o *Outbox) slot(k slotKey) *slot {
	for _, s := range o.order {
		if s.key == k {
			return s
		}
	}
	return nil
}

// close forgets the slot of k (pending frame included).
func (o *Outbox) close(k slotKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.slot(k)
	if s == nil {
		return
	}
	if o.last == s {
		o.last = nil
	}
	o.order = slices.DeleteFunc(o.order, func(x *slot) bool { return x == s })
}

// closeBoard forgets every slot of board.
func (o *Outbox) closeBoard(board string) {
	for k := range slotKinds {
		o.close(slotKey{board, slotKind(k)})
	}
}

// floor is the seq of the last frame taken for k (0 when none), so a
// subscriber is never handed a cached frame older than what it already has.
func (o *Outbox) floor(k slotKey) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s := o.slot(k); s != nil {
		return s.sentSeq
	}
	return 0
}

// offerAt puts frame in the slot of k if the slot belongs to subscription
// gen and the frame is not older than what the slot holds or has sent; it
// reports whether the frame was accepted. The frame counts as arrived at at
// (zero: now): the schedule point of the board read that made it
// (schedule.go), never later than now. The throttle then counts a subscriber's interval from the
// board's points rather than from when the fan-out got to this outbox, so
// the next point's frame is due when it arrives.
func (o *Outbox) offerAt(k slotKey, gen uint64, seq int64, frame []byte, at time.Time) bool {
	o.mu.Lock()
	s := o.accepting(k, gen, seq)
	if s == nil {
		o.mu.Unlock()
		return false
	}
	if s.frame != nil {
		if len(s.frame) == len(frame) && len(frame) > 0 && &s.frame[0] == &frame[0] {
			o.mu.Unlock() // the very same frame again
			return true
		}
		o.coalesced++
	}
	now := o.now()
	if at.IsZero() || at.After(now) {
		at = now
	}
	filled := s.frame == nil
	due := !s.sent || o.interval <= 0 || !now.Before(s.lastSent.Add(o.interval))
	if filled && due && !s.initial && o.direct != nil && len(o.events) == 0 && o.alone(s) && o.direct.TryAcquire() {
		// Only when TakeAppend would return this frame alone, at once and
		// with nothing before it (no event, no other slot's frame), can the
		// fan-out write it in the writer's place. An initial frame never
		// goes this way: it must follow its `subscribed`, which the writer
		// writes. TryAcquire is tried last, since it takes the writer.
		// The bookkeeping is TakeAppend's, as if the writer took it at now.
		s.readyAt, s.seq = at, seq
		o.markSent(s, now)
		o.mu.Unlock()
		o.direct.WriteDirect(frame)
		return true
	}
	if filled {
		s.readyAt = at
	}
	s.frame, s.seq = frame, seq
	// A frame that fills an empty slot wakes the writer: when it is due the
	// writer takes it, else Take arms the writer's timer for it. A frame
	// replacing a held one does not: that timer is armed already.
	wake := filled || s.initial || due
	o.mu.Unlock()
	if wake {
		o.signal()
	}
	return true
}

// accepting is the slot of k when it takes a frame of seq for subscription
// gen; nil when the frame is another subscription's, or older than what
// the slot holds or has sent. Lock held.
func (o *Outbox) accepting(k slotKey, gen uint64, seq int64) *slot {
	s := o.last
	if s == nil || s.key != k {
		s = o.slot(k)
		o.last = s
	}
	if s == nil || s.gen != gen || seq < s.sentSeq || (s.frame != nil && seq < s.seq) {
		return nil
	}
	return s
}

// alone reports whether no slot but s holds a frame. Lock held.
func (o *Outbox) alone(s *slot) bool {
	for _, x := range o.order {
		if x != s && x.frame != nil {
			return false
		}
	}
	return true
}

// event queues frame to go before any slot's frame.
func (o *Outbox) event(frame []byte) {
	o.mu.Lock()
	o.push(frame)
	o.mu.Unlock()
	o.signal()
}

// push queues an event, dropping the oldest past maxEvents. Lock held.
func (o *Outbox) push(frame []byte) {
	if len(o.events) >= maxEvents {
		o.events = o.events[1:]
		o.coalesced++
	}
	o.events = append(o.events, frame)
}

// final queues the final top frame of a period or board (R19), dropping
// the top slot's pending frame: the ended period's, older than its final.
func (o *Outbox) final(board string, frame []byte) {
	o.mu.Lock()
	if s := o.slot(slotKey{board, topSlot}); s != nil && s.frame != nil {
		s.frame = nil
		o.coalesced++
	}
	o.push(frame)
	o.mu.Unlock()
	o.signal()
}

// resumeFinals queues a resume's missed final frames (§15), oldest first,
// however many (at most the board's retain).
func (o *Outbox) resumeFinals(frames [][]byte) {
	if len(frames) == 0 {
		return
	}
	o.mu.Lock()
	o.events = append(o.events, frames...)
	o.mu.Unlock()
	o.signal() // a hub Outbox (NewOutboxWake) has no ready channel
}

// target is one subscriber slot a frame goes to.
type target struct {
	o   *Outbox
	gen uint64
}

// subscribers is the set of slots one frame key fans out to. targets builds
// an immutable list once per change of the set, so a fan-out takes it under
// the engine's lock without copying. Guarded by Engine.mu.
type subscribers struct {
	m    map[*Outbox]uint64
	list []target // nil after a change; never modified once built
	owed []owing  // owed the key's next read (subscribers.join)
}

func newSubscribers() *subscribers { return &subscribers{m: make(map[*Outbox]uint64)} }

func (s *subscribers) set(o *Outbox, gen uint64) { s.m[o] = gen; s.list = nil }
func (s *subscribers) del(o *Outbox)             { delete(s.m, o); s.list = nil }
func (s *subscribers) len() int                  { return len(s.m) }

func (s *subscribers) targets() []target {
	if s.list == nil {
		s.list = make([]target, 0, len(s.m))
		for o, gen := range s.m {
			s.list = append(s.list, target{o, gen})
		}
	}
	return s.list
}
