package live

import (
	"context"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// maxDecorateWait bounds how long a frame's read waits for profiles that
// are not cached (Decorator.Decorate); what is not known by then is shown
// with the stored name, and the late profiles come back through
// ProfilesChanged, which re-sends the frames that show them.
const maxDecorateWait = 20 * time.Millisecond

// decorate gives entries their profile fields, waiting at most half an
// interval (maxDecorateWait at most): a frame never waits on profiles
// longer than its read schedule allows. No lock held.
func (e *Engine) decorate(parent context.Context, lists ...[]rank.Entry) {
	if e.cfg.Decorator == nil {
		return
	}
	ctx, cancel := context.WithTimeout(parent, min(e.cfg.Interval/2, maxDecorateWait))
	defer cancel()
	e.cfg.Decorator.Decorate(ctx, lists...)
}

// decorateRanks decorates the around entries of every member in one call.
func (e *Engine) decorateRanks(ctx context.Context, ms []rank.MemberRank) {
	if e.cfg.Decorator == nil || len(ms) == 0 {
		return
	}
	lists := make([][]rank.Entry, len(ms))
	for i := range ms {
		lists[i] = ms[i].Around
	}
	e.decorate(ctx, lists...)
}

// ProfilesChanged says the profiles of members changed (here or on another
// node) or became known late: every top and view frame that shows one of
// them is marked dirty, to be re-read, re-decorated and re-sent within the
// usual interval (R20 makes a profile change a change under R7/R8). Frames
// that do not show them are left alone, so a rename costs a store read
// only for the boards where it is visible. A board with reads in flight
// may be decorating with the old profile: its jobs re-read when they end.
// Cost: O(entries of the frames this node holds), no store call.
func (e *Engine) ProfilesChanged(members []string) {
	if len(members) == 0 {
		return
	}
	set := make(map[string]struct{}, len(members))
	for _, m := range members {
		set[m] = struct{}{}
	}
	e.mu.Lock()
	for _, b := range e.boards {
		if b.reading {
			b.profStale = true
		}
		for _, k := range b.kinds {
			k.profiles(set)
		}
	}
	e.unlock()
}
