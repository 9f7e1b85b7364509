package node

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wsgateway/wsgateway/bus"
)

// Viewer counts (docs/protocol.md §14): open subscriptions per board over
// every node. Each node reports its own counts over the bus every Every and
// keeps the others' reports; a report older than TTL no longer counts, so a
// node that dies stops counting within TTL without anyone telling.
const (
	DefaultViewersEvery = 2 * time.Second
	DefaultViewersTTL   = 5 * time.Second
)

// ViewersConfig tunes the viewer counts. The zero value takes the defaults.
type ViewersConfig struct {
	// Every is how often the node reads its own counts and reports them;
	// zero = DefaultViewersEvery. It must stay well under TTL, or the
	// other nodes' view of this one flickers to zero between reports.
	Every time.Duration
	// TTL is how long another node's report counts; zero =
	// DefaultViewersTTL.
	TTL time.Duration
	// Now is the clock reports age by; nil = time.Now.
	Now func() time.Time
}

// viewerEntry is one node's count of one board, and when it was heard.
type viewerEntry struct {
	n  int
	at time.Time
}

// viewers holds this node's counts and the other nodes' reports. Its
// methods are safe for concurrent use.
type viewers struct {
	every, ttl time.Duration
	now        func() time.Time

	mu       sync.Mutex                        // guards the maps below
	local    map[string]int                    // this node's counts at the last tick
	remote   map[string]map[string]viewerEntry // board → node → its latest count
	reported map[string]bool                   // boards the last report gave a count > 0

	quit     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func newViewers(cfg ViewersConfig) (*viewers, error) {
	if cfg.Every < 0 || cfg.TTL < 0 {
		return nil, errors.New("node: ViewersConfig.Every and TTL must not be negative")
	}
	if cfg.Every == 0 {
		cfg.Every = DefaultViewersEvery
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultViewersTTL
	}
	if cfg.Every >= cfg.TTL {
		return nil, fmt.Errorf("node: ViewersConfig.Every (%s) must be shorter than TTL (%s)", cfg.Every, cfg.TTL)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &viewers{
		every: cfg.Every, ttl: cfg.TTL, now: cfg.Now,
		local: map[string]int{}, remote: map[string]map[string]viewerEntry{}, reported: map[string]bool{},
		quit: make(chan struct{}), done: make(chan struct{}),
	}, nil
}

// Viewers is board's open subscriptions over every node: this node's at
// its last tick plus every other node's report younger than TTL
// (api.ViewerCounter).
func (v *viewers) Viewers(board string) int {
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.countLocked(board, now)
}

func (v *viewers) countLocked(board string, now time.Time) int {
	return v.local[board] + v.remoteLocked(board, now)
}

// others is board's subscriptions on the other nodes alone.
func (v *viewers) others(board string) int {
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.remoteLocked(board, now)
}

func (v *viewers) remoteLocked(board string, now time.Time) int {
	n := 0
	for _, e := range v.remote[board] {
		if now.Sub(e.at) <= v.ttl {
			n += e.n
		}
	}
	return n
}

// all is every board's count, boards without viewers left out.
func (v *viewers) all() map[string]int {
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[string]int, len(v.local)+len(v.remote))
	for b := range v.local {
		out[b] = 0
	}
	for b := range v.remote {
		out[b] = 0
	}
	for b := range out {
		if n := v.countLocked(b, now); n > 0 {
			out[b] = n
		} else {
			delete(out, b)
		}
	}
	return out
}

// heard keeps another node's report; a count of 0 forgets that node's
// entry for the board at once (it says the board just emptied there).
func (v *viewers) heard(r bus.ViewersReport) {
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	for board, n := range r.Boards {
		nodes := v.remote[board]
		if n <= 0 {
			delete(nodes, r.Node)
			if len(nodes) == 0 {
				delete(v.remote, board)
			}
			continue
		}
		if nodes == nil {
			nodes = map[string]viewerEntry{}
			v.remote[board] = nodes
		}
		nodes[r.Node] = viewerEntry{n: n, at: now}
	}
}

// tick records this node's counts, forgets reports past TTL, and returns
// the report to send: the boards with viewers, and a 0 once for each board
// the last report named that has none now. nil when there is nothing to say.
func (v *viewers) tick(local map[string]int) map[string]int {
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	for board, nodes := range v.remote {
		maps.DeleteFunc(nodes, func(_ string, e viewerEntry) bool { return now.Sub(e.at) > v.ttl })
		if len(nodes) == 0 {
			delete(v.remote, board)
		}
	}
	report := make(map[string]int, len(local))
	for board := range v.reported {
		if local[board] <= 0 {
			report[board] = 0
			delete(v.reported, board)
		}
	}
	for board, n := range local {
		if n > 0 {
			report[board] = n
			v.reported[board] = true
		}
	}
	v.local = local
	if len(report) == 0 {
		return nil
	}
	return report
}

// viewersBus is what the viewer counts need of the bus (bus.Bus).
type viewersBus interface {
	PublishViewers(boards map[string]int) error
	SubscribeViewers(f func(bus.ViewersReport)) (stop func() error, err error)
}

// start hears the other nodes' reports and, every Every until stop, reads
// this node's counts and reports them.
func (v *viewers) start(b viewersBus, count func() map[string]int, log *slog.Logger) error {
	unsub, err := b.SubscribeViewers(v.heard)
	if err != nil {
		close(v.done)
		return err
	}
	go func() {
		defer close(v.done)
		defer unsub()
		t := time.NewTicker(v.every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if report := v.tick(count()); report != nil {
					// A lost report is replaced by the next one; other nodes
					// meanwhile keep the last one they heard for TTL.
					if err := b.PublishViewers(report); err != nil {
						log.Debug("node: viewers not reported", "err", err)
					}
				}
			case <-v.quit:
				return
			}
		}
	}()
	return nil
}

// stop ends start's goroutine and waits for it. Safe to call more than
// once (Node.Close is).
func (v *viewers) stop() {
	v.stopOnce.Do(func() { close(v.quit) })
	<-v.done
}

// viewersCollector exports the counts at scrape time: one series per board
// for the boards with the most viewers, the rest summed under "other"
// (board ids come from clients, so the label is bounded).
type viewersCollector struct {
	v    *viewers
	desc *prometheus.Desc
}

func newViewersCollector(v *viewers) *viewersCollector {
	return &viewersCollector{v: v, desc: prometheus.NewDesc("wsgateway_board_viewers",
		"Open subscriptions to a board over every node (docs/protocol.md §14), as this node last heard them.",
		[]string{"board"}, nil)}
}

func (c *viewersCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *viewersCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.v.all()
	boards := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	other := 0
	for i, b := range boards {
		if i < maxBoardLabels {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[b]), b)
		} else {
			other += counts[b]
		}
	}
	if other > 0 {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(other), otherBoards)
	}
}

// startViewers builds the node's viewer counts, exports them and starts
// their reports.
func (n *Node) startViewers() error {
	v, err := newViewers(n.cfg.Viewers)
	if err != nil {
		return err
	}
	if err := n.cfg.Registry.Register(newViewersCollector(v)); err != nil {
		return fmt.Errorf("node: viewers metric: %w", err)
	}
	if err := v.start(n.bus, n.live.Viewers, n.log); err != nil {
		return fmt.Errorf("node: viewers: %w", err)
	}
	n.viewers = v
	return nil
}

// otherViewers is live's OtherViewers: board's subscriptions on the other
// nodes, from their reports younger than TTL. The live engine is built
// before the counts; it calls this only once it runs (Run), after New.
func (n *Node) otherViewers(board string) int {
	if n.viewers == nil {
		return 0
	}
	return n.viewers.others(board)
}
