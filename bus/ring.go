package bus

// ring is a FIFO bounded at max items that drops its oldest item when full.
// It grows by doubling up to max, so an idle bus holds little memory.
// Not safe for concurrent use: Bus.mu guards it.
type ring[T any] struct {
	buf     []T
	head, n int
	max     int
}

func newRing[T any](max int) ring[T] { return ring[T]{max: max} }

// push appends v; when the ring is full it first removes the oldest item and
// returns it with true.
func (r *ring[T]) push(v T) (dropped T, ok bool) {
	if r.n == r.max {
		dropped, ok = r.buf[r.head], true
		r.buf[r.head] = v
		r.head = (r.head + 1) % len(r.buf)
		return dropped, ok
	}
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)%len(r.buf)] = v
	r.n++
	return dropped, false
}

func (r *ring[T]) grow() {
	size := min(max(2*len(r.buf), 64), r.max)
	n := r.n
	buf := r.drainTo(make([]T, 0, size))
	r.buf, r.head, r.n = buf[:size], 0, n
}

// drainTo appends every item, oldest first, to dst and empties the ring.
func (r *ring[T]) drainTo(dst []T) []T {
	first := min(r.n, len(r.buf)-r.head)
	dst = append(dst, r.buf[r.head:r.head+first]...)
	dst = append(dst, r.buf[:r.n-first]...)
	clear(r.buf) // release strings held by old items
	r.head, r.n = 0, 0
	return dst
}
