package bus

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// ViewersReport is one node's open subscriptions per board (docs/protocol.md
// §14). Payload of <prefix>.viewers, JSON. Boards holds the boards that have
// viewers on the node, and a 0 once for a board that just lost its last one;
// a node that reports nothing for a while has none (receivers let its
// counts age out).
type ViewersReport struct {
	Node   string         `json:"node"`
	Boards map[string]int `json:"boards"`
}

// maxViewersBatch bounds the boards of one message: an entry is at most
// ~80 bytes (a 64-byte id, a count), so a message stays far under NATS's
// 1 MB max_payload.
const maxViewersBatch = 4096

func (b *Bus) subjViewers() string { return b.cfg.Subject + ".viewers" }

// PublishViewers sends this node's counts to every other node, in as many
// messages as maxViewersBatch needs; each entry stands alone, so a receiver
// that misses one message misses those boards for one report only. Counts
// are re-sent every few seconds, so they bypass the change queue and are
// not retried: a lost report is replaced by the next.
func (b *Bus) PublishViewers(boards map[string]int) error {
	ids := slices.Sorted(maps.Keys(boards))
	for len(ids) > 0 {
		part := ids[:min(maxViewersBatch, len(ids))]
		ids = ids[len(part):]
		r := ViewersReport{Node: b.cfg.Node, Boards: make(map[string]int, len(part))}
		for _, id := range part {
			r.Boards[id] = boards[id]
		}
		data, _ := json.Marshal(r) // strings and ints cannot fail
		if err := b.nc.Publish(b.subjViewers(), data); err != nil {
			return fmt.Errorf("bus: publish viewers: %w", err)
		}
	}
	return nil
}

// SubscribeViewers calls f with every other node's reports (NoEcho keeps
// this node's own away), from a NATS callback goroutine of its own: f must
// not block. A report it cannot read is logged and skipped; the next one
// replaces it. stop ends the subscription.
func (b *Bus) SubscribeViewers(f func(ViewersReport)) (stop func() error, err error) {
	sub, err := b.nc.Subscribe(b.subjViewers(), func(m *nats.Msg) {
		var r ViewersReport
		if err := json.Unmarshal(m.Data, &r); err != nil || r.Node == "" {
			b.log.Warn("bus: bad viewers report", "err", err)
			return
		}
		f(r)
	})
	if err != nil {
		return nil, fmt.Errorf("bus: subscribe viewers: %w", err)
	}
	return sub.Unsubscribe, nil
}

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

// Viewers holds this node's counts and the other nodes' reports. Its
// methods are safe for concurrent use.
type Viewers struct {
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

// NewViewers returns counts that hear nothing until Start.
func NewViewers(cfg ViewersConfig) (*Viewers, error) {
	if cfg.Every < 0 || cfg.TTL < 0 {
		return nil, errors.New("bus: ViewersConfig.Every and TTL must not be negative")
	}
	if cfg.Every == 0 {
		cfg.Every = DefaultViewersEvery
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultViewersTTL
	}
	if cfg.Every >= cfg.TTL {
		return nil, fmt.Errorf("bus: ViewersConfig.Every (%s) must be shorter than TTL (%s)", cfg.Every, cfg.TTL)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Viewers{
		every: cfg.Every, ttl: cfg.TTL, now: cfg.Now,
		local: map[string]int{}, remote: map[string]map[string]viewerEntry{}, reported: map[string]bool{},
		quit: make(chan struct{}), done: make(chan struct{}),
	}, nil
}

// Viewers is board's open subscriptions over every node: this node's at
// its last tick plus every other node's report younger than TTL
// (api.ViewerCounter).
func (v *Viewers) Viewers(board string) int {
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.countLocked(board, now)
}

func (v *Viewers) countLocked(board string, now time.Time) int {
	return v.local[board] + v.remoteLocked(board, now)
}

// Others is board's subscriptions on the other nodes alone (live's
// Config.OtherViewers).
func (v *Viewers) Others(board string) int {
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.remoteLocked(board, now)
}

func (v *Viewers) remoteLocked(board string, now time.Time) int {
	n := 0
	for _, e := range v.remote[board] {
		if now.Sub(e.at) <= v.ttl {
			n += e.n
		}
	}
	return n
}

// All is every board's count, boards without viewers left out.
func (v *Viewers) All() map[string]int {
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[string]int, len(v.local)+len(v.remote))
	add := func(b string) {
		if n := v.countLocked(b, now); n > 0 {
			out[b] = n
		}
	}
	for b := range v.local {
		add(b)
	}
	for b := range v.remote {
		add(b)
	}
	return out
}

// heard keeps another node's report; a count of 0 forgets that node's
// entry for the board at once (it says the board just emptied there).
func (v *Viewers) heard(r ViewersReport) {
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
func (v *Viewers) tick(local map[string]int) map[string]int {
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

// Start hears the other nodes' reports over b and, every Every until
// Stop, reads this node's counts (count) and reports them.
func (v *Viewers) Start(b *Bus, count func() map[string]int) error {
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
						b.log.Debug("bus: viewers not reported", "err", err)
					}
				}
			case <-v.quit:
				return
			}
		}
	}()
	return nil
}

// Stop ends Start's goroutine and waits for it. Safe to call more than
// once.
func (v *Viewers) Stop() {
	v.stopOnce.Do(func() { close(v.quit) })
	<-v.done
}
