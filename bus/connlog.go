package bus

import (
	"sync"
	"time"
)

// reconnectLogEvery bounds the "still unreachable" lines while NATS is down:
// nats.go retries every 50ms…ReconnectMax per server, which unthrottled
// would flood the log during an outage.
const reconnectLogEvery = 5 * time.Second

// logLimiter lets the first event of a spell through at once and then at
// most one per interval, counting the events each logged line stands for.
// The zero value is ready; reset starts a new spell.
type logLimiter struct {
	mu      sync.Mutex // guards the fields below
	last    time.Time
	pending int
}

// allow records one event at now and reports whether to log it, and how
// many events (this one included) the line stands for.
func (l *logLimiter) allow(now time.Time, every time.Duration) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending++
	if !l.last.IsZero() && now.Sub(l.last) < every {
		return false, 0
	}
	n := l.pending
	l.last, l.pending = now, 0
	return true, n
}

// reset forgets the spell: the next event is logged at once.
func (l *logLimiter) reset() {
	l.mu.Lock()
	l.last, l.pending = time.Time{}, 0
	l.mu.Unlock()
}
