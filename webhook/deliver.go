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
	// Workers is how many deliveries are attempted at once; default 4.
	Workers int
	// Timeout bounds one attempt (connect, send, the receiver's answer);
	// default 10s.
	Timeout time.Duration
	// Lease is how long an attempt holds its delivery; past it another node
	// may try. Default Timeout + 20s, so a live attempt always ends first.
	Lease time.Duration
	// Poll is how often an idle worker asks the store for due deliveries;
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
		cfg.Workers = 4
	}
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
		d := Dialer(cfg.Timeout)
		if cfg.AllowPrivate {
			d.Control = nil
		}
		tr = &http.Transport{
			DialContext:           d.DialContext,
			TLSHandshakeTimeout:   cfg.Timeout,
			ResponseHeaderTimeout: cfg.Timeout,
			MaxIdleConnsPerHost:   cfg.Workers,
			IdleConnTimeout:       time.Minute,
			// A proxy would dial the target for us, past Control.
			Proxy: nil,
		}
	}
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return &Deliverer{
		store: store, log: log, cfg: cfg, tokens: cfg.Node + "/" + hex.EncodeToString(b[:]) + "/",
		client: &http.Client{
			Transport: tr,
			Timeout:   cfg.Timeout,
			// A redirect is the receiver's answer, not a new target: it is
			// recorded as a failed attempt.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// Run attempts due deliveries with Config.Workers workers until ctx ends.
func (d *Deliverer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range d.cfg.Workers {
		wg.Go(func() { d.work(ctx) })
	}
	wg.Wait()
	return nil
}

func (d *Deliverer) work(ctx context.Context) {
	t := time.NewTicker(d.cfg.Poll)
	defer t.Stop()
	for {
		for {
			did, err := d.Step(ctx)
			if err != nil && ctx.Err() == nil {
				d.log.Warn("webhook: delivery step", "err", err)
			}
			if !did || err != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Step leases the delivery due first, attempts it and records the outcome.
// It reports false when nothing was due.
func (d *Deliverer) Step(ctx context.Context) (bool, error) {
	token := d.tokens + strconv.FormatUint(d.n.Add(1), 10)
	del, hook, ok, err := d.store.LeaseDelivery(ctx, token, d.cfg.Lease)
	if err != nil || !ok {
		return false, err
	}
	errText := d.attempt(ctx, del, hook)
	recorded, err := d.store.RecordAttempt(ctx, del.ID, token, errText)
	if err != nil {
		return true, fmt.Errorf("webhook: record attempt of %s: %w", del.ID, err)
	}
	if !recorded {
		d.log.Warn("webhook: lease ended before the attempt did; another node retries", "delivery", del.ID, "webhook", hook.ID)
	}
	d.log.Debug("webhook: attempt", "delivery", del.ID, "webhook", hook.ID, "event", del.Event, "board", del.Board, "error", errText)
	return true, nil
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
