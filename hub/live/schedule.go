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
// would then wait in their outboxes for up to another interval (measured
// last: 191–198 ms against a 150 ms bound with reads of a busy board every
// 1.00–1.05 intervals, when reads followed the changes). So the only reads
// off the schedule are a Subscribe's own, whose frames go to that
// subscriber alone (job.sub).
//
// A board idle for a whole point (nothing dirty) starts over: its next
// change is read at once and that read's moment is the new first point.
// Stamping a frame with a point that is already past is safe: every
// subscriber's last frame was stamped at the previous point or earlier.
//
// A busy board is thus read once per interval per node, however many
// changes and subscribers it has.

// readPoint reports the point at which b may be read at now (ok: wait is
// zero), or how long until it may be. Lock held.
func (b *board) readPoint(now time.Time, interval time.Duration) (at time.Time, wait time.Duration) {
	if b.lastPoint.IsZero() || now.Sub(b.lastPoint) >= 2*interval {
		return now, 0 // idle: read at once, a new schedule from here
	}
	next := b.lastPoint.Add(interval)
	if now.Before(next) {
		return time.Time{}, next.Sub(now)
	}
	return next, 0
}
