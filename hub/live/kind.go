package live

import (
	"context"
	"slices"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// Frame kinds. Each watched board holds one kind value per frame kind
// (newBoard lists them): standings (the board's top-N, and a group's, such
// as a cohort's), member views and member lists. A kind owns its
// subscriptions, its current frames and their dirty marks; the board and
// the engine hold only what every kind shares (the config, the change
// stream, the read schedule). The engine's job loop is then the same for
// every kind:
//
//	tick, lock held:    pass := kind.snapshot(j)   (take the kind's dirty marks)
//	runJob, no lock:    pass.read(ctx, j)          (store reads, encode changed frames)
//	runJob, lock held:  out = pass.install(j, out) (make them current, list the deliveries)
//	runJob, no lock:    deliver(out)
//
// and a subscribe validates its Spec and hands it to every kind (join).

// A kind is one frame kind of one board. Engine.mu guards it: every method
// is called with it held.
type kind interface {
	// join registers st's subscriber for this kind's part of sp (nil when
	// sp asks nothing of it): subscribers.join with the key's current
	// frame and its stamp, which answer a resume; a key owed a read is
	// marked, and the board's next read brings its frame.
	join(sp *Spec, st *start) part
	// changed marks what a change (new in the board's stream) may change.
	changed(c rank.Change)
	// markAll marks every frame; seq is the change it stands for (stamp).
	markAll(seq int64)
	// profiles marks the frames that show a member whose profile changed
	// (R20).
	profiles(changed map[string]struct{})
	// dirty reports whether something is marked.
	dirty() bool
	// snapshot takes the dirty marks into j, returning the reads to make
	// (nil: nothing marked).
	snapshot(j *job) pass
	// each calls fn for every subscriber set of the kind.
	each(fn func(*subscribers))
}

// A part is one connection's subscription to one kind's frames.
type part interface {
	// leave ends it. Lock held.
	leave(o *Outbox)
}

// A pass is one kind's share of one job.
type pass interface {
	// read makes the store reads with no lock held and encodes what
	// changed. A pass whose read failed, or was never made (the job's
	// config read failed first), installs nothing and marks itself again.
	read(ctx context.Context, j *job) error
	// install makes what read got current and appends the deliveries.
	// Lock held.
	install(j *job, out []delivery) []delivery
}

// stamp is what this node knows of a key's changes, for resume
// (docs/protocol.md §15). touched is the greatest seq of a change that may
// have changed the key's frames (one with no seq, such as a rename, counts
// as one after every seq seen: board.unseq); read is the seq of the latest
// read that showed the key's current frame.
type stamp struct{ touched, read int64 }

// touch records a change of seq that may have changed the key.
func (s *stamp) touch(seq int64) { s.touched = max(s.touched, seq) }

// unchanged answers resume's question for a key whose current frame has
// seq f, on a board whose change stream has shown every seq up to last:
// is that frame what the key showed at seq n? Not when a change after n
// may have changed the key (nor a rename, which has no seq). Else it is
// when it was read at n; or when it is older, and the latest read showed
// it too with no change of the key between that read and n.
func (s stamp) unchanged(f, n, last int64) bool {
	return f <= n && s.touched <= n && (f == n || (s.touched <= s.read && last >= max(n, s.read)))
}

// frame is an encoded frame and the seq of the read it shows.
type frame struct {
	seq   int64
	bytes []byte
}

func (f *frame) base() *frame { return f }

// held is the frame of a key's current result r; nil before its first read.
func held[R any, P interface {
	*R
	base() *frame
}](r P) *frame {
	if r == nil {
		return nil
	}
	return r.base()
}

// start is one connection joining a board's kinds: where its frames go,
// what it already has, and its first frames so far. Lock held.
type start struct {
	o      *Outbox
	board  string
	last   int64 // the board's change stream has shown every seq up to it
	resume bool  // Spec.Resume
	// reading: the board's job is reading (its marks taken): a key that
	// is not dirty may still be read, and a change after since with it.
	reading bool
	since   int64 // Spec.Since
	opened  [slotKinds]uint64
	out     []delivery
}

// owing is a subscriber owed a key's next read (subscribers.join).
type owing struct {
	target
	// since is a resume's seq: a frame that is not newer is not sent (the
	// client holds what it shows); -1: any frame.
	since int64
}

// join opens st's slot k and adds it to s, the subscribers of a key whose
// current frame is cur (nil: none yet), stamped sp. The subscriber's first
// frame is cur when it may have it; join reports whether it is owed the
// key's next read instead: there is no frame yet, or one older than what
// the connection (or the resuming client) already had. A resume gets
// nothing for a key that did not change after the client's seq, and waits
// for the next read when the key is marked (dirty) and its frame is the
// one the client holds. R33: a key held here costs no read, however stale;
// its dirty mark brings the next read within an interval, and that gives
// every subscriber what changed.
func (s *subscribers) join(st *start, k slotKind, cur *frame, sp stamp, dirty bool) (owed bool) {
	sk := slotKey{st.board, k}
	t := target{st.o, st.o.open(sk)}
	st.opened[k] = t.gen
	s.set(t.o, t.gen)
	since := int64(-1)
	if st.resume {
		since = st.since
	}
	switch {
	case cur == nil || cur.seq < st.o.floor(sk) || cur.seq < since:
		s.owed = append(s.owed, owing{t, since})
		return true
	case !st.resume:
		st.out = append(st.out, delivery{sk, cur.seq, cur.bytes, []target{t}, time.Time{}})
	case sp.unchanged(cur.seq, since, st.last):
		// The resuming client holds it.
	case cur.seq == since && (dirty || st.reading):
		// The client holds this frame, and a change after it marked the
		// key (or a read is in flight): the next read brings what the
		// client lacks, and a read of the key is due (join's caller
		// marks it).
		s.owed = append(s.owed, owing{t, since})
		return true
	default:
		st.out = append(st.out, delivery{sk, cur.seq, cur.bytes, []target{t}, time.Time{}})
	}
	return false
}

// leave removes o and reports whether nobody is left.
func (s *subscribers) leave(o *Outbox) (empty bool) {
	s.del(o)
	s.owed = slices.DeleteFunc(s.owed, func(w owing) bool { return w.o == o })
	return s.len() == 0
}

// settle hands a read's frame next to the key of s, whose current frame is
// cur (nil: none): when next is newer and shows something else (same is
// false) every subscriber gets it, and settle reports true for the caller
// to make it current; else the subscribers owed a read get the newer of the
// two. Either way not a resume whose client holds it already
// (owing.since). fill encodes next when the read did not (it showed what
// the job began with).
func (s *subscribers) settle(out []delivery, k slotKey, at time.Time, cur, next *frame, same bool, fill func()) ([]delivery, bool) {
	installed := cur == nil || (cur.seq <= next.seq && !same)
	var to []target
	switch {
	case installed:
		to = s.targets()
		// Not the resuming subscribers owed a read that hold a frame of
		// next.seq already (their since is not older).
		var held map[*Outbox]bool
		for _, w := range s.owed {
			if w.since >= next.seq {
				if held == nil {
					held = make(map[*Outbox]bool)
				}
				held[w.o] = true
			}
		}
		if held != nil {
			to = slices.DeleteFunc(slices.Clone(to), func(t target) bool { return held[t.o] })
		}
	case cur.seq > next.seq:
		next = cur
		fallthrough
	default:
		for _, w := range s.owed {
			if w.since < next.seq {
				to = append(to, w.target)
			}
		}
	}
	s.owed = nil
	if len(to) == 0 {
		return out, installed
	}
	if next.bytes == nil {
		fill()
	}
	return append(out, delivery{k, next.seq, next.bytes, to, at}), installed
}
