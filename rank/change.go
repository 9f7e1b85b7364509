package rank

import "context"

// Change is the domain event of the event flow: one applied event that
// changed a board (a duplicate changes nothing and has no Change). Engines
// produce it in the atomic step's aftermath; the node hands it to live
// frames and to the bus, which carries it to every other node.
type Change struct {
	Board    string `json:"board"`
	Seq      int64  `json:"seq"`
	Member   string `json:"member"`
	Old      *int64 `json:"old"` // nil: the member was new
	New      int64  `json:"new"`
	Rank     int64  `json:"rank"`
	PrevRank int64  `json:"prev_rank"` // 0 when new
	Period   int64  `json:"period,omitempty"`
	Name     string `json:"name,omitempty"`
	// Cohort is the member's cohort on a cohort board (§12), so live
	// frames can route per cohort: Rank and PrevRank are then within it.
	Cohort string `json:"cohort,omitempty"`
	// Region is the member's region on a region board (§17) and
	// RegionRank its rank there; RegionFrom the region it left in this
	// change (its frames lost the member), "" when it did not move.
	Region     string `json:"region,omitempty"`
	RegionRank int64  `json:"region_rank,omitempty"`
	RegionFrom string `json:"region_from,omitempty"`
	// Hold is why this event held the member (§16), "" when it did not:
	// the applying node tells webhooks (member.held); not carried by the
	// bus.
	Hold string `json:"hold,omitempty"`
}

// ChangeOf is the change that applying e produced with result r; ok is
// false for a duplicate, which changed nothing.
func ChangeOf(e Event, r Result) (c Change, ok bool) {
	if r.Duplicate {
		return Change{}, false
	}
	c = Change{
		Board:      r.Board,
		Seq:        r.Seq,
		Member:     r.Member,
		New:        r.Score,
		Rank:       r.Rank,
		PrevRank:   r.PrevRank,
		Period:     r.Period,
		Name:       e.Name,
		Cohort:     r.Cohort,
		Region:     r.Region,
		RegionRank: r.RegionRank,
		RegionFrom: r.RegionFrom,
		Hold:       r.Hold,
	}
	if r.Had {
		old := r.PrevScore
		c.Old = &old
	}
	return c, true
}

// Done receives the outcome of one submitted event: exactly what applying
// it produced, or why it was not applied (for ErrUnavailable and context
// errors: possibly applied; re-sending the same id is safe, R4). It must
// return promptly and must not call the store: engines run it on their own
// goroutines (the Redis engine's completer, which its lane may wait for).
type Done func(Result, error)

// Sink receives the changes an engine applied, a batch at a time, in the
// order the engine applied them, before the Done callbacks of those events
// run (so an ack never overtakes the frames' news of it). It must not block,
// must not call the store, and must not keep batch after it returns (the
// engine reuses it). The memory engine calls it from the
// submitting goroutine (concurrently for concurrent submitters); the Redis
// engine from one completion goroutine, one batch per pipeline.
type Sink func(batch []Change)

// ApplyWait submits e to s and waits for its outcome: for callers that have
// nothing else to do meanwhile (one REST event, tools, tests).
func ApplyWait(ctx context.Context, s Store, e Event) (Result, error) {
	type outcome struct {
		r   Result
		err error
	}
	ch := make(chan outcome, 1)
	s.Apply(ctx, e, func(r Result, err error) { ch <- outcome{r, err} })
	o := <-ch
	return o.r, o.err
}
