package live

import "time"

// A board's reads follow a fixed schedule: points one interval apart, from
// the point of the read that started it. A dirty board is read at the first
// point it has not been read at, and each frame a read gives its
// subscribers is stamped with that point (delivery.at, Outbox.offerAt): a
// subscriber's throttle then counts from the board's points, so every
// subscriber is due exactly when the next point's frame arrives, whatever
// moment it subscribed at (its first frame does not count, R7 v1.1).
//
// Why it keeps R7's bound: a change made just after the read at point p is
// read at p + interval and offered to subscribers that are due then, so it
// is shown within one interval plus the read's own time. A board read off
// its schedule would hand some subscribers a frame they take at once,
// moving their phase away from the board's points; the next points' frames
// would then wait in their outboxes for up to another interval. So every
// read is on the schedule: a Subscribe reads nothing, it gets the frames
// the board holds, or waits for the next point's (kind.go).
//
// A board read late, more than a twentieth of an interval after its point
// (a quiet board's first change, or a tick held up by a loaded machine),
// starts its schedule over from the moment of that read: every subscriber's
// last frame was stamped at an earlier point, so every one of them is due,
// and no two frames of a connection are stamped less than an interval
// apart. Within that twentieth the read keeps its point, so a board read a
// little late every time does not drift off its schedule.
//
// A busy board is thus read once per interval per node, however many
// changes and subscribers it has.

// readPoint reports the point of a read of b at now, or how long until b
// may be read (wait > 0). Lock held.
func (b *board) readPoint(now time.Time, interval time.Duration) (at time.Time, wait time.Duration) {
	if b.lastPoint.IsZero() {
		return now, 0
	}
	next := b.lastPoint.Add(interval)
	if now.Before(next) {
		return time.Time{}, next.Sub(now)
	}
	if now.Sub(next) <= interval/20 {
		return next, 0
	}
	return now, 0 // late: a new schedule from here
}
