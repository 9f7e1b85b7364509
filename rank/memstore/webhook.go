package memstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// Outbox is the memory engine's webhook registry and delivery queue
// (rank.Outbox): the same semantics as the Redis engine's, for one node.
// Store embeds one; a test double of a rank.Store may embed one too.
type Outbox struct {
	now func() time.Time

	mu      sync.Mutex // guards everything below
	hooks   map[string]rank.Webhook
	markers map[string]time.Time // rank.MarkerKey of a marker -> when it lapses (zero: never)
	swept   int                  // len(markers) after the last sweep of lapsed ones
	dels    map[string]*memDelivery
	logs    map[string][]string // webhook -> delivery ids, oldest first, at most rank.DeliveryLog
}

type memDelivery struct {
	d     rank.Delivery
	token string    // who holds the lease
	due   time.Time // next attempt, or the end of the lease
}

// NewOutbox returns an empty outbox on clock now (nil = time.Now).
func NewOutbox(now func() time.Time) *Outbox {
	if now == nil {
		now = time.Now
	}
	return &Outbox{now: now, hooks: map[string]rank.Webhook{}, markers: map[string]time.Time{},
		dels: map[string]*memDelivery{}, logs: map[string][]string{}}
}

var _ rank.Outbox = (*Outbox)(nil)

// sweepMarkers drops the lapsed markers once the map has doubled since the
// last sweep (as Redis expires its marker keys): a walk of n markers every
// n appends or so, so a node that runs for months keeps only live ones.
// o.mu held.
func (o *Outbox) sweepMarkers(now time.Time) {
	if len(o.markers) < 2*o.swept+1024 {
		return
	}
	for k, until := range o.markers {
		if !until.IsZero() && !now.Before(until) {
			delete(o.markers, k)
		}
	}
	o.swept = len(o.markers)
}

func (o *Outbox) PutWebhook(_ context.Context, w rank.Webhook) (rank.Webhook, error) {
	if err := w.Validate(); err != nil {
		return rank.Webhook{}, fmt.Errorf("memstore: put webhook: %w", err)
	}
	w.Events = slices.Clone(w.Events)
	w.Boards = slices.Clone(w.Boards)
	o.mu.Lock()
	o.hooks[w.ID] = w
	o.mu.Unlock()
	return w, nil
}

func (o *Outbox) GetWebhook(_ context.Context, id string) (rank.Webhook, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.hooks[id]
	if !ok {
		return rank.Webhook{}, fmt.Errorf("memstore: webhook %s: %w", id, rank.ErrNoWebhook)
	}
	return w, nil
}

func (o *Outbox) Webhooks(context.Context) ([]rank.Webhook, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]rank.Webhook, 0, len(o.hooks))
	for _, w := range o.hooks {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (o *Outbox) DeleteWebhook(_ context.Context, id string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.hooks[id]; !ok {
		return fmt.Errorf("memstore: delete webhook %s: %w", id, rank.ErrNoWebhook)
	}
	delete(o.hooks, id)
	for _, d := range o.logs[id] {
		delete(o.dels, d)
	}
	delete(o.logs, id)
	return nil
}

func (o *Outbox) AppendOutbox(_ context.Context, marker string, keep time.Duration, ev rank.OutboxEvent) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	marker = rank.MarkerKey(marker)
	if until, ok := o.markers[marker]; ok && (until.IsZero() || now.Before(until)) {
		return false, nil
	}
	var until time.Time
	if keep > 0 {
		until = now.Add(keep)
	}
	o.markers[marker] = until
	o.sweepMarkers(now)
	for _, w := range o.hooks {
		if !w.Wants(ev.Event, ev.Board) {
			continue
		}
		id := newDeliveryID()
		o.dels[id] = &memDelivery{due: now, d: rank.Delivery{
			ID: id, Webhook: w.ID, Event: ev.Event, Board: ev.Board, TS: ev.TS, Data: ev.Data,
			Created: now, Status: rank.DeliveryPending, NextAttemptAt: now,
		}}
		log := append(o.logs[w.ID], id)
		if len(log) > rank.DeliveryLog {
			// The log's oldest leaves the listing; a delivery still pending
			// keeps its place in the queue.
			if old := o.dels[log[0]]; old != nil && old.d.Status != rank.DeliveryPending {
				delete(o.dels, log[0])
			}
			log = log[1:]
		}
		o.logs[w.ID] = log
	}
	return true, nil
}

func (o *Outbox) LeaseDelivery(_ context.Context, token string, lease time.Duration, skip ...string) (rank.Delivery, rank.Webhook, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	var best *memDelivery
	for id, d := range o.dels {
		if _, ok := o.hooks[d.d.Webhook]; !ok {
			delete(o.dels, id) // its webhook was deleted after the log let go of it
			continue
		}
		if d.d.Status != rank.DeliveryPending || d.due.After(now) || slices.Contains(skip, d.d.Webhook) {
			continue
		}
		if best == nil || d.due.Before(best.due) || (d.due.Equal(best.due) && d.d.ID < best.d.ID) {
			best = d
		}
	}
	if best == nil {
		return rank.Delivery{}, rank.Webhook{}, false, nil
	}
	best.token, best.due = token, now.Add(lease)
	return best.d, o.hooks[best.d.Webhook], true, nil
}

func (o *Outbox) RecordAttempt(_ context.Context, id, token, errText string) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := o.dels[id]
	if d == nil || d.token != token || d.d.Status != rank.DeliveryPending {
		return false, nil
	}
	now := o.now()
	d.token = ""
	d.d.Attempts++
	d.d.LastError = errText
	switch next, ok := rank.NextAttempt(d.d.Created, d.d.Attempts, now); {
	case errText == "":
		d.d.Status, d.d.NextAttemptAt = rank.DeliveryDelivered, time.Time{}
	case !ok:
		d.d.Status, d.d.NextAttemptAt = rank.DeliveryFailed, time.Time{}
	default:
		d.d.NextAttemptAt, d.due = next, next
	}
	return true, nil
}

func (o *Outbox) Deliveries(_ context.Context, webhook string) ([]rank.Delivery, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.hooks[webhook]; !ok {
		return nil, fmt.Errorf("memstore: deliveries of %s: %w", webhook, rank.ErrNoWebhook)
	}
	log := o.logs[webhook]
	out := make([]rank.Delivery, 0, len(log))
	for i := len(log) - 1; i >= 0; i-- {
		if d := o.dels[log[i]]; d != nil {
			out = append(out, d.d)
		}
	}
	return out, nil
}

// newDeliveryID is a random id: receivers dedupe by it (R28), so it must
// not repeat across stores or restarts.
func newDeliveryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
