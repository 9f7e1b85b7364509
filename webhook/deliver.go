package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// Store is what delivery needs of the rank store: its outbox and its clock.
type Store interface {
	rank.Outbox
	Now(ctx context.Context) (time.Time, error)
}

// Config tunes a Deliverer; its zero value is usable.
type Config struct {
	// Node names this node in lease tokens and logs.
	Node string
	// AllowPrivate lets deliveries reach loopback, private and link-local
	// addresses (--webhook-allow-private).
	AllowPrivate bool
	// AllowLoopback lets deliveries reach loopback addresses, and no other
	// address AllowPrivate would allow (Guard.Loopback: a --dev gateway).
	AllowLoopback bool
	// Workers is how many deliveries this node attempts at once, over all
	// webhooks; default 32.
	Workers int
	// PerWebhook is how many of one webhook's deliveries this node
	// attempts at once; default 4. A receiver that does not answer holds
	// these slots for an attempt's Timeout each, never the others', so
	// Workers / PerWebhook such receivers at once leave the rest on time.
	PerWebhook int
	// Timeout bounds one attempt (connect, send, the receiver's answer);
	// default 10s.
	Timeout time.Duration
	// Lease is how long an attempt holds its delivery; past it another node
	// may try. Default Timeout + 20s, so a live attempt always ends first.
	Lease time.Duration
	// Poll is how often an idle node asks the store for due deliveries;
	// default 1s (the first retry is due within 5 s, R28).
	Poll time.Duration
	// Transport replaces the HTTP transport (tests); nil = one that dials
	// through Control unless AllowPrivate.
	Transport http.RoundTripper
}

// Deliverer attempts the outbox's due deliveries. Many nodes run one each;
// the store's leases keep them from attempting the same delivery at once.
type Deliverer struct {
	store  Store
	log    *slog.Logger
	cfg    Config
	client *http.Client
	tokens string        // this deliverer's random token prefix
	n      atomic.Uint64 // numbers its leases

	mu   sync.Mutex     // guards busy
	busy map[string]int // webhook id -> attempts under way on this node (absent: none)
}

// New returns a Deliverer of store's outbox.
func New(store Store, log *slog.Logger, cfg Config) (*Deliverer, error) {
	if store == nil {
		return nil, errors.New("webhook: a store is required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 32
	}
	if cfg.PerWebhook <= 0 {
		cfg.PerWebhook = 4
	}
	cfg.PerWebhook = min(cfg.PerWebhook, cfg.Workers)
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = cfg.Timeout + 20*time.Second
	}
	if cfg.Lease <= cfg.Timeout {
		return nil, fmt.Errorf("webhook: lease %s must outlast the attempt timeout %s", cfg.Lease, cfg.Timeout)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	tr := cfg.Transport
	if tr == nil {
		d := Guard{Loopback: cfg.AllowLoopback}.Dialer(cfg.Timeout)
		if cfg.AllowPrivate {
			d.Control = nil
		}
		tr = &http.Transport{
			DialContext:           d.DialContext,
			TLSHandshakeTimeout:   cfg.Timeout,
			ResponseHeaderTimeout: cfg.Timeout,
			MaxIdleConnsPerHost:   cfg.PerWebhook,
			IdleConnTimeout:       time.Minute,
			// A proxy would dial the target for us, past Control.
			Proxy: nil,
		}
	}
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return &Deliverer{
		store: store, log: log, cfg: cfg, tokens: cfg.Node + "/" + hex.EncodeToString(b[:]) + "/", busy: map[string]int{},
		client: &http.Client{
			Transport: tr,
			Timeout:   cfg.Timeout,
			// A redirect is the receiver's answer, not a new target: it is
			// recorded as a failed attempt.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// leased is a delivery this node holds the lease of, to attempt.
type leased struct {
	del   rank.Delivery
	hook  rank.Webhook
	token string
}

// Run attempts due deliveries until ctx ends: one loop leases, and
// Config.Workers workers attempt, at most Config.PerWebhook of one webhook
// at once. The loop leases only when a worker is free, passing over the
// webhooks whose slots are full, so a receiver that does not answer
// delays its own deliveries only.
func (d *Deliverer) Run(ctx context.Context) error {
	jobs := make(chan leased) // unbuffered: a lease is handed to a free worker only
	free := make(chan struct{}, d.cfg.Workers)
	for range d.cfg.Workers {
		free <- struct{}{}
	}
	// freed is signalled when an attempt ends, so the loop looks again at
	// once: the webhook it passed over may have a slot now.
	freed := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for range d.cfg.Workers {
		wg.Go(func() {
			for j := range jobs {
				if err := d.finish(ctx, j); err != nil && ctx.Err() == nil {
					d.log.Warn("webhook: delivery", "err", err)
				}
				d.release(j.hook.ID)
				free <- struct{}{}
				select {
				case freed <- struct{}{}:
				default:
				}
			}
		})
	}
	defer wg.Wait()
	defer close(jobs)
	t := time.NewTicker(d.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-free:
		}
		j, ok, err := d.lease(ctx)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("webhook: lease", "err", err)
		}
		if ok {
			jobs <- j
			continue
		}
		free <- struct{}{}
		select { // nothing due that a slot may take: wait for one
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-freed:
		}
	}
}

// lease takes the delivery due first among the webhooks with a slot free
// on this node, and counts it against its webhook's slots.
func (d *Deliverer) lease(ctx context.Context) (leased, bool, error) {
	d.mu.Lock()
	var full []string
	for w, n := range d.busy {
		if n >= d.cfg.PerWebhook {
			full = append(full, w)
		}
	}
	d.mu.Unlock()
	token := d.tokens + strconv.FormatUint(d.n.Add(1), 10)
	del, hook, ok, err := d.store.LeaseDelivery(ctx, token, d.cfg.Lease, full...)
	if err != nil || !ok {
		return leased{}, false, err
	}
	d.mu.Lock()
	d.busy[hook.ID]++
	d.mu.Unlock()
	return leased{del: del, hook: hook, token: token}, true, nil
}

// release gives back a slot of webhook w.
func (d *Deliverer) release(w string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.busy[w] <= 1 {
		delete(d.busy, w)
		return
	}
	d.busy[w]--
}

// finish attempts a leased delivery and records the outcome.
func (d *Deliverer) finish(ctx context.Context, j leased) error {
	del, hook, token := j.del, j.hook, j.token
	errText := d.attempt(ctx, del, hook)
	recorded, err := d.store.RecordAttempt(ctx, del.ID, token, errText)
	if err != nil {
		return fmt.Errorf("webhook: record attempt of %s: %w", del.ID, err)
	}
	if !recorded {
		d.log.Warn("webhook: lease ended before the attempt did; another node retries", "delivery", del.ID, "webhook", hook.ID)
	}
	d.log.Debug("webhook: attempt", "delivery", del.ID, "webhook", hook.ID, "event", del.Event, "board", del.Board, "error", errText)
	return nil
}

// payload is a delivery's body (§13).
type payload struct {
	ID    string          `json:"id"`
	Event string          `json:"event"`
	Board string          `json:"board"`
	TS    int64           `json:"ts"`
	Data  json.RawMessage `json:"data"`
}

// Body is the JSON a delivery POSTs.
func Body(del rank.Delivery) []byte {
	b, _ := json.Marshal(payload{ID: del.ID, Event: del.Event, Board: del.Board, TS: del.TS.UnixMilli(), Data: del.Data}) // plain types
	return b
}

// attempt POSTs del to hook and returns "" for a 2xx, else why not.
func (d *Deliverer) attempt(ctx context.Context, del rank.Delivery, hook rank.Webhook) string {
	now, err := d.store.Now(ctx)
	if err != nil {
		now = time.Now()
	}
	ts := now.Unix()
	body := Body(del)
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(body))
	if err != nil {
		return "bad url: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "wsgateway-webhook")
	req.Header.Set("X-LB-Event", del.Event)
	req.Header.Set("X-LB-Delivery", del.ID)
	req.Header.Set("X-LB-Timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("X-LB-Signature", Sign(hook.Secret, ts, body))
	resp, err := d.client.Do(req)
	if err != nil {
		if errors.Is(err, ErrRefusedTarget) {
			return "refused: the target address is not a public unicast address"
		}
		return clip(err.Error())
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	return ""
}

func clip(s string) string {
	if len(s) > 256 {
		return s[:256]
	}
	return s
}
