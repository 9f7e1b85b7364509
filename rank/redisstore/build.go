package redisstore

// The build of a derived board over its sources' data (derived.go has the
// why of it being exact; rank/lua/build.lua the script). Three things bound
// and order it:
//
//   - Work per call: build.lua counts the Redis calls it makes on members
//     (a cell read, a view write weighing as 6 reads, a name) and stops at
//     buildWork, so a call costs about the same whatever the board: a
//     7-day window (7 views a member) does fewer members a call than a
//     union. Keys that do not
//     exist (a window's future periods, hidden entries where nobody is
//     banned) are checked once a call, not once a member.
//   - A lease: every call takes or renews it, so one builder works at a
//     time; a second PUT, or a node's keeper, waits while the holder's
//     lease runs and takes over once it lapses on the store clock (the
//     holder died). Two builders at once would not be wrong (each call sets
//     its members exact at its step), only the work twice over.
//   - A saved position: the call that finishes a scan page saves the scan's
//     step and cursor with the server's run_id, so a builder taking over
//     goes on from there instead of from the start; after a Redis restart
//     (cursors of another process mean nothing) or a change of plan (the
//     clock crossed a period, the config changed), it starts again.
//
// Who takes over a build whose builder died: the next PUT of the board,
// and the keeper of any node that has the board's config cached as
// building (it read or scored on it), a slice at a time as for hot boards.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

const (
	// buildWork is the work one build.lua call does on members, in reads
	// of a member (a view write counts 6: build.lua's header): a few ms
	// of Redis CPU a call on 1M-member sets, for a 7-day window and for a
	// 3-source union alike (docs/performance.md; the bound is 20 ms).
	buildWork = 1000
	// buildLease is how long a builder's lease lasts without a call
	// renewing it: a builder that died hands over after this.
	buildLease = 3 * time.Second
	// buildPoll is how often a PUT waiting for another builder looks
	// again.
	buildPoll = 50 * time.Millisecond
	// buildScan is the COUNT of each HSCAN/ZSCAN page.
	buildScan = 1000
)

// buildPlan is build.lua's keys and fixed arguments for a derived board at
// the moment it was made, and the source sets to scan, in order.
type buildPlan struct {
	ver   string
	keys  []string
	k, c  int
	order string
	sig   string // views and cells: a saved position of another plan is not resumed
	tail  []any  // view triples, then cell weights
	scans []scanSet
	work  int // build.lua's budget a call: buildWork
	// unlinked: a source does not list the board yet (its PUT died
	// between storing the config and registering it): the builder
	// registers it first, or the build would be exact only until the next
	// event.
	unlinked bool
	// cost is a member's work (build.lua's units) when it has an entry in
	// one period of each source: what the first call's batch is sized by.
	cost int
}

// scanSet is one set whose members the build recomputes: a member hash,
// or the sorted set (and hidden entries) of a tiebreak-shared source.
type scanSet struct {
	key  string
	zset bool
}

// planBuild reads derived board id's config and makes its build plan at
// the store clock.
func (s *Store) planBuild(parent context.Context, id string) (buildPlan, error) {
	ctx, cancel := context.WithTimeout(parent, s.cfg.Timeout)
	defer cancel()
	s.forget(id)
	c, err := s.loadBoard(ctx, id)
	if err != nil {
		return buildPlan{}, err
	}
	b := c.b
	if !b.Derived() {
		return buildPlan{}, fmt.Errorf("build of %s: not a derived board", id)
	}
	now := s.clock.now(ctx, s.client)
	g := b.GroupID()
	srcs := b.Source.Boards()
	weights := b.Source.Weights()
	span := b.Source.Span()
	// Views: the derived board's kept periods and a window's upcoming ones,
	// oldest first; cells: every source period a view sums, by period then
	// source, so each view is a range of cells.
	var views []rank.Period
	if b.Reset == rank.None {
		views = []rank.Period{{}}
	} else {
		first := rank.PeriodAt(b, now)
		for range b.Retained() + 1 {
			first = first.Previous(b)
		}
		views = rank.ViewPeriods(b, first, b.Retained()+2+span)
	}
	cellPeriods := views
	if b.Reset != rank.None {
		first := views[0]
		for range span - 1 {
			first = first.Previous(b)
		}
		cellPeriods = rank.ViewPeriods(b, first, len(views)+span-1)
	}
	p := buildPlan{ver: c.ver, work: buildWork, k: len(views), c: len(cellPeriods) * len(srcs), order: string(b.Order)}
	p.keys = append(p.keys, c.keys.cfg, c.keys.ban, c.keys.n, s.keyIn(g, id, "bl"), s.keyIn(g, id, "bp"))
	for _, v := range views {
		i := strconv.FormatInt(v.Index, 10)
		p.keys = append(p.keys, s.keyIn(g, id, "z:"+i), s.keyIn(g, id, "x:"+i))
	}
	for _, cp := range cellPeriods {
		for _, src := range srcs {
			i := strconv.FormatInt(cp.Index, 10)
			p.keys = append(p.keys, s.keyIn(g, src, "z:"+i), s.keyIn(g, src, "m:"+i), s.keyIn(g, src, "x:"+i))
		}
	}
	for _, src := range srcs {
		p.keys = append(p.keys, s.keyIn(g, src, "n"))
	}
	for vi, v := range views {
		lo, hi := vi+1, vi+1 // a union's view: its own period's cells
		if b.Reset != rank.None && span > 1 {
			lo, hi = vi+1, vi+span
		}
		lo, hi = (lo-1)*len(srcs)+1, hi*len(srcs)
		p.tail = append(p.tail, lo, hi, ms(v.ExpireAt(b.Retained())))
	}
	for range cellPeriods {
		for i := range srcs {
			p.tail = append(p.tail, weights[i])
		}
	}
	p.cost = 2*len(srcs) + 6*span + 1
	// Scan each source's periods that can hold data now (not the future
	// views' periods: their events all come after the registration). SCAN
	// returns every element present from its start to its end; on a
	// first/last board an event replaces a member's sorted-set element
	// (its tie prefix changes), so those are scanned through the member
	// hash, whose fields (the member ids, hidden ones included) stay.
	shared := map[string]bool{}
	for _, src := range srcs {
		sc, err := s.loadBoard(ctx, src)
		if err != nil {
			return buildPlan{}, err
		}
		shared[src] = sc.b.Tiebreak == rank.Shared
		if !slices.ContainsFunc(sc.deps, func(d dep) bool { return d.id == id }) {
			p.unlinked = true
		}
	}
	for _, cp := range cellPeriods {
		if b.Reset != rank.None && cp.Start.After(now) {
			continue
		}
		for _, src := range srcs {
			i := strconv.FormatInt(cp.Index, 10)
			if shared[src] {
				p.scans = append(p.scans, scanSet{s.keyIn(g, src, "z:"+i), true}, scanSet{s.keyIn(g, src, "x:"+i), true})
			} else {
				p.scans = append(p.scans, scanSet{s.keyIn(g, src, "m:"+i), false})
			}
		}
	}
	// The signature names the views and the sets scanned (a source's
	// tiebreak decides which): a saved position means nothing to a plan
	// with other ones.
	h := fnv.New64a()
	for _, sc := range p.scans {
		h.Write([]byte(sc.key))
	}
	p.sig = fmt.Sprintf("%d:%d:%d:%x", views[0].Index, p.k, p.c, h.Sum64())
	return p, nil
}

// buildCall runs one build.lua call of plan p.
func (s *Store) buildCall(parent context.Context, p *buildPlan, op, token, mark string, members []string) ([]any, error) {
	ctx, cancel := context.WithTimeout(parent, s.cfg.Timeout)
	defer cancel()
	args := make([]any, 0, 11+len(p.tail)+len(members))
	args = append(args, p.ver, s.nowArg(), p.k, p.c, p.order, op, token, buildLease.Milliseconds(), p.work, p.sig, mark)
	args = append(args, p.tail...)
	for _, m := range members {
		args = append(args, m)
	}
	v, err := s.derive.run(ctx, s.client, p.keys, args...)
	if err != nil {
		return nil, err
	}
	a, _ := v.([]any)
	if len(a) == 0 {
		return nil, fmt.Errorf("build.lua: unexpected reply %v", v)
	}
	if h := s.buildHook.Load(); h != nil {
		(*h)(token, a)
	}
	return a, nil
}

// buildOutcome is how runBuild ended without an error.
type buildOutcome int

const (
	buildDone   buildOutcome = iota // the board is built (by anyone)
	buildBusy                       // another builder holds the lease
	buildPaused                     // until passed; the position is saved
	buildReplan                     // the config changed: plan again
)

// runBuild works on derived board id's build under token until it is
// done, another builder holds the lease, or until passes (zero: no limit;
// checked between scan pages). done, when not nil, holds the members this
// builder already recomputed (exact since, and maintained): they are not
// sent again.
func (s *Store) runBuild(parent context.Context, id, token string, until time.Time, done map[string]bool) (buildOutcome, error) {
	sig := ""
	linked := false
	for {
		p, err := s.planBuild(parent, id)
		if err != nil {
			return 0, err
		}
		if p.unlinked {
			if linked {
				return 0, fmt.Errorf("build of %s: a source does not list it after registering it", id)
			}
			if err := s.linkBuilding(parent, id); err != nil {
				return 0, err
			}
			linked = true
			continue
		}
		if sig != "" && p.sig != sig && done != nil {
			// The views changed: every member again.
			clear(done)
		}
		sig = p.sig
		out, err := s.buildPass(parent, &p, token, until, done)
		if err != nil {
			return 0, err
		}
		if out != buildReplan {
			return out, nil
		}
	}
}

// linkBuilding registers derived board id with its sources.
func (s *Store) linkBuilding(parent context.Context, id string) error {
	ctx, cancel := context.WithTimeout(parent, s.cfg.Timeout)
	defer cancel()
	c, err := s.loadBoard(ctx, id)
	if err != nil {
		return err
	}
	return s.link(ctx, c.b, "add")
}

// buildPass is runBuild under one plan.
func (s *Store) buildPass(parent context.Context, p *buildPlan, token string, until time.Time, done map[string]bool) (buildOutcome, error) {
	status := func(a []any, err error) (buildOutcome, bool, error) {
		if scriptError(err) == "stale" {
			return buildReplan, true, nil
		}
		if err != nil {
			return 0, true, err
		}
		switch st, _ := a[0].(string); st {
		case "busy":
			return buildBusy, true, nil
		case "done":
			return buildDone, true, nil
		}
		return 0, false, nil
	}
	a, err := s.buildCall(parent, p, "resume", token, "", nil)
	if out, end, err := status(a, err); end {
		return out, err
	}
	if len(a) != 3 {
		return 0, fmt.Errorf("build.lua resume: unexpected reply %v", a)
	}
	step := int(num(a[1]))
	cursor, _ := strconv.ParseUint(fmt.Sprint(a[2]), 10, 64)
	per := max(1, p.work/p.cost)
	var batch []string
	for ; step < len(p.scans); step, cursor = step+1, 0 {
		set := p.scans[step]
		for {
			ctx, cancel := context.WithTimeout(parent, s.cfg.Timeout)
			var page []string
			var next uint64
			if set.zset {
				page, next, err = s.client.ZScan(ctx, set.key, cursor, "", buildScan).Result()
			} else {
				page, next, err = s.client.HScan(ctx, set.key, cursor, "", buildScan).Result()
			}
			cancel()
			if err != nil {
				return 0, err
			}
			batch = batch[:0]
			for j := 0; j < len(page); j += 2 {
				if !done[page[j]] {
					batch = append(batch, page[j])
				}
			}
			// The position after this page, saved by the call that
			// finishes it: a page with nothing new still saves it.
			mark := strconv.Itoa(step) + ":" + strconv.FormatUint(next, 10)
			if next == 0 {
				mark = strconv.Itoa(step+1) + ":0"
			}
			for first := true; first || len(batch) > 0; first = false {
				k := min(per, len(batch))
				m := ""
				if k == len(batch) {
					m = mark
				}
				a, err := s.buildCall(parent, p, "build", token, m, batch[:k])
				if out, end, err := status(a, err); end {
					return out, err
				}
				n := 0
				if len(a) == 2 {
					n = int(num(a[1]))
				}
				if n <= 0 && k > 0 {
					return 0, fmt.Errorf("build.lua: no member done of %d", k)
				}
				// The next batch: what this call managed, and a quarter
				// more (a call that did them all may do more).
				if n == k {
					per = max(per, n+n/4)
				} else {
					per = max(1, n+n/4)
				}
				// Done only once a call did it: a pass that ends in a
				// replan goes on from the saved position, at most a page
				// back, and must send these members again.
				if done != nil {
					for _, m := range batch[:n] {
						done[m] = true
					}
				}
				batch = batch[n:]
			}
			if next == 0 {
				break
			}
			cursor = next
			if !until.IsZero() && time.Now().After(until) {
				return buildPaused, nil
			}
		}
		if !until.IsZero() && time.Now().After(until) && step+1 < len(p.scans) {
			return buildPaused, nil
		}
	}
	a, err = s.buildCall(parent, p, "finish", token, "", nil)
	if out, end, err := status(a, err); end {
		return out, err
	}
	return 0, fmt.Errorf("build.lua finish: unexpected reply %v", a)
}

// buildDerived builds derived board b over its sources' data and returns
// once it is built, by this call or by another builder it waited for.
func (s *Store) buildDerived(parent context.Context, b rank.Board) error {
	token := s.attemptPrefix + "build" + strconv.FormatUint(s.attempts.Add(1), 36)
	s.buildersAdd(b.ID, 1)
	defer s.buildersAdd(b.ID, -1)
	done := map[string]bool{}
	for {
		out, err := s.runBuild(parent, b.ID, token, time.Time{}, done)
		if err != nil || out == buildDone {
			return err
		}
		// Another builder holds the lease: wait for it to finish, or to
		// lapse (it died) and take over.
		t := time.NewTimer(buildPoll)
		select {
		case <-t.C:
		case <-parent.Done():
			t.Stop()
			return parent.Err()
		}
	}
}

// buildersAdd counts the builds this node's PUTs run of board id: the
// keeper leaves those alone.
func (s *Store) buildersAdd(id string, d int) {
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	if s.builders == nil {
		s.builders = map[string]int{}
	}
	s.builders[id] += d
	if s.builders[id] <= 0 {
		delete(s.builders, id)
	}
}

// keepBuilds works, a slice at a time, on the builds of derived boards
// this node has cached as building and no PUT of this node runs: a build
// whose builder died is finished without waiting for the next PUT.
func (s *Store) keepBuilds(ctx context.Context, token string) {
	s.mu.Lock()
	var ids []string
	for id, c := range s.boards {
		if !c.unknown && c.building {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.buildMu.Lock()
		local := s.builders[id] > 0
		s.buildMu.Unlock()
		if local {
			continue
		}
		out, err := s.runBuild(ctx, id, token, time.Now().Add(hotKeeperSlice), nil)
		switch {
		case err != nil:
			if scriptError(err) != "unknown_board" && !errors.Is(err, rank.ErrUnknownBoard) {
				s.log.Warn("redisstore: derived board build", "board", id, "err", err)
			}
			s.forget(id)
		case out == buildDone:
			s.forget(id)
		}
	}
}
