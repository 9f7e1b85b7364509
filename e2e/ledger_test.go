package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// event is one score event of a load: a positive delta, so that an event
// applied twice (or lost) always shows in the member's final score.
type event struct {
	ID     string `json:"id"`
	Member string `json:"member"`
	Delta  int64  `json:"delta"` // the JSON of a REST scores array element
}

// ledger records what the gateway acknowledged, and every outcome the
// client could not know (a timeout, a lost connection, `unavailable`),
// each then retried with the same id until acknowledged.
type ledger struct {
	mu      sync.Mutex // guards everything below
	sent    map[string]event
	acks    map[string][]proto.Ack // every ack per id, first first
	ackAt   map[string]time.Time   // when each id was first acknowledged
	unknown map[string]bool        // ids with at least one unknown outcome
	codes   map[string]int         // error codes answered, for the report
	lastAck time.Time              // time of the last first-ack (the last change)
	dups    int                    // acks with duplicate:true
	retries int                    // attempts after the first
}

func newLedger() *ledger {
	return &ledger{sent: map[string]event{}, acks: map[string][]proto.Ack{}, ackAt: map[string]time.Time{}, unknown: map[string]bool{}, codes: map[string]int{}}
}

func (l *ledger) record(e event, a proto.Ack) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.acks[e.ID]) == 0 {
		l.lastAck = time.Now()
		l.ackAt[e.ID] = l.lastAck
	}
	l.acks[e.ID] = append(l.acks[e.ID], a)
	if a.Duplicate {
		l.dups++
	}
}

func (l *ledger) note(id, code string, unknown bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.codes[code]++
	if unknown {
		l.unknown[id] = true
	}
}

// stats is a one-line summary for the test log and the docs.
func (l *ledger) stats() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var codes []string
	for c, n := range l.codes {
		codes = append(codes, fmt.Sprintf("%s=%d", c, n))
	}
	sort.Strings(codes)
	// A first ack that says duplicate for an id the client sent once: the
	// gateway's Redis client re-sent the script itself (go-redis retries a
	// pipeline after a timeout) and the idempotency record answered.
	inner := 0
	for id, as := range l.acks {
		if as[0].Duplicate && !l.unknown[id] {
			inner++
		}
	}
	return fmt.Sprintf("sent=%d acked=%d unknown-outcome=%d duplicate-acks=%d (on a first send: %d) retries=%d errors[%s]",
		len(l.sent), len(l.acks), len(l.unknown), l.dups, inner, l.retries, strings.Join(codes, " "))
}

// firstAckAfter is how long after t0 the first event was acknowledged
// (the recovery time after a fault is healed at t0); -1 if none was.
func (l *ledger) firstAckAfter(t0 time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	best := time.Duration(-1)
	for _, at := range l.ackAt {
		if d := at.Sub(t0); d >= 0 && (best < 0 || d < best) {
			best = d
		}
	}
	return best
}

// attemptTimeout bounds one Score call; past it the outcome is unknown
// and the event is sent again with the same id.
const attemptTimeout = 4 * time.Second

// send sends e until it is acknowledged or ctx ends, retrying whatever
// leaves the outcome unknown or asks for a retry. Any other error (a
// conflict, a forbidden…) is returned: it would be a bug.
func (l *ledger) send(ctx context.Context, cl *client.Client, board string, e event) error {
	l.mu.Lock()
	l.sent[e.ID] = e
	l.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			l.mu.Lock()
			l.retries++
			l.mu.Unlock()
		}
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		ack, err := cl.Score(actx, client.ScoreReq{Board: board, Member: e.Member, Delta: client.Int(e.Delta), ID: e.ID})
		cancel()
		if err == nil {
			if ack.ID != e.ID || ack.Member != e.Member || ack.Board != board {
				return fmt.Errorf("ack %+v does not answer %+v", ack, e)
			}
			l.record(e, ack)
			return nil
		}
		if ctx.Err() != nil {
			l.note(e.ID, "cancelled", true)
			return ctx.Err()
		}
		var ce *client.Error
		switch {
		case errors.As(err, &ce) && (ce.Code == proto.CodeUnavailable || ce.Code == proto.CodeRateLimited):
			// unavailable may come from a store call that timed out after
			// Redis got the script: its outcome is unknown.
			l.note(e.ID, ce.Code, ce.Code == proto.CodeUnavailable)
			wait := min(max(ce.RetryAfter, 10*time.Millisecond), 300*time.Millisecond)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
		case errors.As(err, &ce):
			l.note(e.ID, ce.Code, false)
			return fmt.Errorf("event %+v: %w", e, err)
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, client.ErrConnLost):
			l.note(e.ID, "timeout", true)
		default:
			l.note(e.ID, "other", true)
			return fmt.Errorf("event %+v: %w", e, err)
		}
	}
}

// expected is each member's sum of distinct acknowledged deltas.
func (l *ledger) expected() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	sum := map[string]int64{}
	for id := range l.acks {
		e := l.sent[id]
		sum[e.Member] += e.Delta
	}
	return sum
}

// checkAcks checks the acks themselves: every ack of one id tells the same
// result (the first one; a repeat says duplicate), and no two applied
// events share a board seq.
func (l *ledger) checkAcks() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var bad []string
	seqs := map[int64]string{}
	for id, as := range l.acks {
		first := as[0]
		for _, a := range as[1:] {
			if !a.Duplicate || a.Seq != first.Seq || a.Score != first.Score {
				bad = append(bad, fmt.Sprintf("id %s answered %+v then %+v: applied twice?", id, first, a))
			}
		}
		if other, ok := seqs[first.Seq]; ok && !first.Duplicate {
			bad = append(bad, fmt.Sprintf("ids %s and %s both applied with seq %d", other, id, first.Seq))
		}
		if !first.Duplicate {
			seqs[first.Seq] = id
		}
	}
	for id := range l.sent {
		if len(l.acks[id]) == 0 {
			bad = append(bad, "event "+id+" was never acknowledged")
		}
	}
	return bad
}

// load drives score events through a set of clients at a bounded rate.
type load struct {
	l       *ledger
	board   string
	members []string
	lim     *rate.Limiter
	max     int64 // events in all
	n       atomic.Int64
	errs    chan error // capacity 1: the first unexpected error
	wg      sync.WaitGroup
	cancel  context.CancelFunc
	stop    chan struct{}
	stopped sync.Once
}

// startLoad runs `workers` senders on each client until Stop or until max
// events were sent, at most perSec events per second in all. Each worker
// sends one event at a time (so a connection pipelines up to `workers`).
func startLoad(l *ledger, clients []*client.Client, board string, members []string, workers int, perSec float64, max int64) *load {
	ctx, cancel := context.WithCancel(context.Background())
	ld := &load{l: l, board: board, members: members, lim: rate.NewLimiter(rate.Limit(perSec), 16),
		max: max, errs: make(chan error, 1), cancel: cancel, stop: make(chan struct{})}
	for ci, cl := range clients {
		for w := 0; w < workers; w++ {
			ld.wg.Add(1)
			go ld.run(ctx, cl, fmt.Sprintf("c%dw%d", ci, w))
		}
	}
	return ld
}

func (ld *load) run(ctx context.Context, cl *client.Client, prefix string) {
	defer ld.wg.Done()
	for i := 0; ; i++ {
		select {
		case <-ld.stop:
			return
		default:
		}
		if err := ld.lim.Wait(ctx); err != nil {
			return
		}
		n := ld.n.Add(1)
		if n > ld.max {
			return
		}
		e := event{ID: fmt.Sprintf("%s-%d", prefix, i), Member: ld.members[int(n)%len(ld.members)], Delta: 1 + n%9}
		if err := ld.l.send(ctx, cl, ld.board, e); err != nil {
			if ctx.Err() == nil {
				select {
				case ld.errs <- err:
				default:
				}
			}
			return
		}
	}
}

// Sent is how many events were started.
func (ld *load) Sent() int64 { return min(ld.n.Load(), ld.max) }

// waitSent waits until at least n events were started.
func (ld *load) waitSent(t testing.TB, n int64) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, fmt.Sprintf("%d events sent", n), func() error {
		if err := ld.err(); err != nil {
			t.Fatal(err)
		}
		if ld.Sent() >= n {
			return nil
		}
		return fmt.Errorf("%d sent", ld.Sent())
	})
}

func (ld *load) err() error {
	select {
	case err := <-ld.errs:
		return err
	default:
		return nil
	}
}

// Finish stops starting events and waits (up to d) until every started
// event is acknowledged; it fails the test on an unexpected error.
func (ld *load) Finish(t testing.TB, d time.Duration) {
	t.Helper()
	ld.stopped.Do(func() { close(ld.stop) })
	done := make(chan struct{})
	go func() { ld.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		ld.cancel()
		<-done
		t.Errorf("e2e: events still unacknowledged %s after the load stopped: %s", d, ld.l.stats())
	}
	ld.cancel()
	if err := ld.err(); err != nil {
		t.Fatalf("e2e: load: %v", err)
	}
}

// dialer opens clients for one test and closes them at its end.
type dialer struct {
	t testing.TB
}

// dial connects to urls[0] (then the others, also on reconnect) with a
// reconnecting client.
func (d dialer) dial(tok string, urls []string, o *client.Options) *client.Client {
	d.t.Helper()
	var opts client.Options
	if o != nil {
		opts = *o
	}
	opts.URLs = urls[1:]
	opts.Reconnect = true
	if opts.MinBackoff == 0 {
		opts.MinBackoff, opts.MaxBackoff = 50*time.Millisecond, 500*time.Millisecond
	}
	if opts.PingInterval == 0 {
		opts.PingInterval = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, urls[0], tok, &opts)
	if err != nil {
		d.t.Fatalf("e2e: dial %s: %v", urls[0], err)
	}
	d.t.Cleanup(func() { cl.Close() })
	return cl
}

// serverClients dials n server-role clients (any member, no rate limit),
// client i starting at urls[i%len(urls)] and falling back to the others.
func serverClients(t testing.TB, n int, urls ...string) []*client.Client {
	t.Helper()
	tok := token(t, auth.Claims{Sub: "loadgen", Role: auth.Server})
	out := make([]*client.Client, n)
	for i := range out {
		rot := append(slices.Clone(urls[i%len(urls):]), urls[:i%len(urls)]...)
		out[i] = dialer{t}.dial(tok, rot, nil)
	}
	return out
}

func memberIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("m%03d", i)
	}
	return out
}

// watcher holds the newest top and view frames one node sent to a spectator.
type watcher struct {
	node   string
	member string // whose view
	mu     sync.Mutex
	top    *proto.Top
	view   *proto.View
	seqs   []int64 // top seqs, to check they never decrease (R7)
}

// watch subscribes a spectator on g to board's top (the board's default N)
// and to member's view with `around` neighbours.
func watch(t testing.TB, g *gateway, board, member string) *watcher {
	t.Helper()
	w := &watcher{node: g.opts.Node, member: member}
	tok := token(t, auth.Claims{Sub: "watch-" + g.opts.Node, Role: auth.Spectator})
	cl := dialer{t}.dial(tok, []string{g.URL()}, &client.Options{
		OnTop: func(f proto.Top) {
			w.mu.Lock()
			w.top = &f
			if len(w.seqs) < 100000 {
				w.seqs = append(w.seqs, f.Seq)
			}
			w.mu.Unlock()
		},
		OnView: func(f proto.View) {
			w.mu.Lock()
			w.view = &f
			w.mu.Unlock()
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cl.Subscribe(ctx, board, client.SubOpts{Around: 2, Member: member}); err != nil {
		t.Fatalf("e2e: subscribe on %s: %v", g.opts.Node, err)
	}
	return w
}

// matches reports how the watcher's newest frames differ from the truth
// (the board's entries in rank order); nil when they agree.
func (w *watcher) matches(truth []proto.Entry, total int64, topN int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.top == nil {
		return fmt.Errorf("node %s: no top frame yet", w.node)
	}
	want := truth[:min(topN, len(truth))]
	if w.top.Total != total || !sameEntries(w.top.Entries, want) {
		return fmt.Errorf("node %s: top seq %d total %d %v, store has total %d %v", w.node, w.top.Seq, w.top.Total, w.top.Entries, total, want)
	}
	if !slices.IsSorted(w.seqs) {
		return fmt.Errorf("node %s: top seqs decreased: %v", w.node, w.seqs)
	}
	if w.member == "" {
		return nil
	}
	if w.view == nil {
		return fmt.Errorf("node %s: no view frame yet", w.node)
	}
	for _, e := range truth {
		if e.Member == w.member {
			if w.view.Rank == nil || w.view.Score == nil || *w.view.Rank != e.Rank || *w.view.Score != e.Score {
				return fmt.Errorf("node %s: view of %s says rank %v score %v, store has %d/%d", w.node, w.member, deref(w.view.Rank), deref(w.view.Score), e.Rank, e.Score)
			}
			return nil
		}
	}
	return fmt.Errorf("node %s: watched member %s is not on the board", w.node, w.member)
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func sameEntries(a, b []proto.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Member != b[i].Member || a[i].Score != b[i].Score || a[i].Rank != b[i].Rank {
			return false
		}
	}
	return true
}

// verifyOpts tune one ledger check.
type verifyOpts struct {
	// Converge is the bound on frames matching the store, counted from the
	// last applied event (default 1s, the bound).
	Converge time.Duration
	TopN     int // the board's top (default 10)
}

// verify is the ledger check that ends every fault test: final scores equal
// the sums of distinct acknowledged events; no id applied twice (acks agree,
// re-sends are duplicates with the first result); ranks agree with scores
// on every node; every watcher's frames converge to the store within
// o.Converge of the last applied event. nodes are the gateways still up.
func verify(t testing.TB, l *ledger, board string, nodes []*gateway, watchers []*watcher, resend *client.Client, o verifyOpts) {
	t.Helper()
	if o.Converge == 0 {
		o.Converge = time.Second
	}
	if o.TopN == 0 {
		o.TopN = 10
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tok := adminToken(t)

	// 1. Frames converge (first, while the bound from the last change runs).
	l.mu.Lock()
	last := l.lastAck
	l.mu.Unlock()
	truth, total, err := readBoard(ctx, nodes[0], tok, board)
	if err != nil {
		t.Fatal(err)
	}
	deadline := last.Add(o.Converge)
	for len(watchers) > 0 {
		var errs []error
		for _, w := range watchers {
			if err := w.matches(truth, total, o.TopN); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 {
			t.Logf("frames on %d nodes matched the store %s after the last applied event", len(watchers), time.Since(last).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("e2e: frames did not converge within %s of the last applied event: %v", o.Converge, errors.Join(errs...))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}

	// 2. Scores equal the ledger; ranks agree with scores.
	want := l.expected()
	if int(total) != len(truth) {
		t.Errorf("e2e: top says total %d but lists %d entries", total, len(truth))
	}
	if len(truth) != len(want) {
		t.Errorf("e2e: board has %d members, the ledger %d", len(truth), len(want))
	}
	for i, e := range truth {
		if e.Rank != int64(i+1) {
			t.Errorf("e2e: entry %d has rank %d", i, e.Rank)
		}
		if i > 0 && e.Score > truth[i-1].Score {
			t.Errorf("e2e: %s (%d) ranks below %s (%d) on a desc board", e.Member, e.Score, truth[i-1].Member, truth[i-1].Score)
		}
		if w, ok := want[e.Member]; !ok || w != e.Score {
			t.Errorf("e2e: member %s has score %d, the sum of its acknowledged events is %d (known %v)", e.Member, e.Score, w, ok)
		}
	}
	for _, bad := range l.checkAcks() {
		t.Error("e2e: " + bad)
	}

	// 3. Per-member reads on every node agree with the page.
	for _, g := range nodes {
		for _, e := range truth {
			var m memberBody
			u := fmt.Sprintf("%s/api/v1/boards/%s/members/%s?around=0", g.HTTP(), board, e.Member)
			st, b, err := rest(ctx, "GET", u, tok, nil, &m)
			if err != nil || st != 200 {
				t.Fatalf("e2e: GET %s: %d %s %v", u, st, b, err)
			}
			if m.Rank == nil || m.Score == nil || *m.Rank != e.Rank || *m.Score != e.Score {
				t.Errorf("e2e: node %s says %s is %v/%v, the page says %d/%d", g.opts.Node, e.Member, deref(m.Rank), deref(m.Score), e.Rank, e.Score)
			}
		}
	}

	// 4. Re-sending acknowledged ids applies nothing.
	if resend != nil {
		l.mu.Lock()
		var ids []string
		for id := range l.acks {
			ids = append(ids, id)
		}
		l.mu.Unlock()
		sort.Strings(ids)
		step := max(len(ids)/100, 1)
		for i := 0; i < len(ids); i += step {
			l.mu.Lock()
			e, first := l.sent[ids[i]], l.acks[ids[i]][0]
			l.mu.Unlock()
			actx, acancel := context.WithTimeout(ctx, 10*time.Second)
			a, err := resend.Score(actx, client.ScoreReq{Board: board, Member: e.Member, Delta: client.Int(e.Delta), ID: e.ID})
			acancel()
			if err != nil {
				t.Errorf("e2e: re-send %s: %v", e.ID, err)
				continue
			}
			if !a.Duplicate || a.Seq != first.Seq || a.Score != first.Score || a.Rank != first.Rank {
				t.Errorf("e2e: re-send of %s answered %+v, the first ack was %+v", e.ID, a, first)
			}
		}
		after, _, err := readBoard(ctx, nodes[0], tok, board)
		if err != nil {
			t.Fatal(err)
		}
		if !sameEntries(after, truth) {
			t.Errorf("e2e: re-sending acknowledged ids changed the board")
		}
	}
	t.Logf("ledger: %s; %d members", l.stats(), len(truth))
}
