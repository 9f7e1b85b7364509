package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wsgateway/wsgateway/webhook"
)

// Webhooks (docs/webhooks.md): every node runs a webhook.Watcher, which
// appends what became true on the boards' schedules to the store's outbox
// once over every node, and a webhook.Deliverer, whose leases let one node
// attempt a delivery at a time. The node tells the watcher of every board
// change, its own and the bus's.

// WebhooksConfig tunes the node's webhooks.
type WebhooksConfig struct {
	// AllowPrivate lets webhook URLs reach loopback, private and
	// link-local addresses (--webhook-allow-private).
	AllowPrivate bool
	// AllowLoopback lets them reach loopback addresses only (--dev:
	// webhook.Guard.Loopback).
	AllowLoopback bool
	// Watch is the watcher's webhook.WatchConfig.Every; zero =
	// webhook.DefaultWatch.
	Watch time.Duration
	// Deliver tunes the delivery loop; Node, AllowPrivate and AllowLoopback
	// are filled in.
	Deliver webhook.Config
}

// runWebhooks runs the watcher and the delivery loop until ctx ends.
func (n *Node) runWebhooks(ctx context.Context) (wait func(), err error) {
	dcfg := n.cfg.Webhooks.Deliver
	dcfg.Node, dcfg.AllowPrivate, dcfg.AllowLoopback = n.cfg.ID, n.cfg.Webhooks.AllowPrivate, n.cfg.Webhooks.AllowLoopback
	d, err := webhook.New(n.store, n.log, dcfg)
	if err != nil {
		return nil, fmt.Errorf("node: webhooks: %w", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { n.outbox.Run(ctx) })
	wg.Go(func() { _ = d.Run(ctx) })
	return wg.Wait, nil
}
