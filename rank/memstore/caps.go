package memstore

import (
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// Caps (docs/protocol.md §18, R39): a member's points counted so far, kept
// under the board's lock, so the check and the count are one step however
// many events race.

// capUsed is member's points counted by the board's cap in period z (nil:
// none yet) or in the UTC day of now. b.mu held for writing.
func (b *board) capUsed(z *zset, member string, now time.Time) int64 {
	if b.cfg.Cap.Per == rank.CapDay {
		if b.capDay != rank.CapDayOf(now) {
			return 0
		}
		return b.capDayMap[member]
	}
	if z == nil {
		return 0
	}
	return z.capped[member]
}

// capUse counts d (when positive) for member in period z or the day of
// now. b.mu held for writing.
func (b *board) capUse(z *zset, member string, d int64, now time.Time) {
	if d <= 0 {
		return
	}
	if b.cfg.Cap.Per == rank.CapDay {
		if day := rank.CapDayOf(now); b.capDay != day || b.capDayMap == nil {
			b.capDay, b.capDayMap = day, map[string]int64{}
		}
		b.capDayMap[member] += d
		return
	}
	if z.capped == nil {
		z.capped = map[string]int64{}
	}
	z.capped[member] += d
}
