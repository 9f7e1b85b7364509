package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/webhook"
)

// Webhook routes (docs/protocol.md §13): admin only, and only with a token
// for every board: a webhook may hear of any board, so a token limited to
// some boards may not manage them. Secrets are never answered.
func (a *API) webhookRoutes(add func(method, path string, hs ...fiber.Handler)) {
	const p = "/api/v1/webhooks"
	add(fiber.MethodGet, p, a.authenticate, a.mayManageWebhooks, a.listWebhooks)
	add(fiber.MethodPut, p+"/:id", a.authenticate, a.mayManageWebhooks, a.putWebhook)
	add(fiber.MethodGet, p+"/:id", a.authenticate, a.mayManageWebhooks, a.getWebhook)
	add(fiber.MethodDelete, p+"/:id", a.authenticate, a.mayManageWebhooks, a.deleteWebhook)
	add(fiber.MethodGet, p+"/:id/deliveries", a.authenticate, a.mayManageWebhooks, a.webhookDeliveries)
}

func (a *API) mayManageWebhooks(c *fiber.Ctx) error {
	switch p := principal(c); {
	case p.Role != auth.Admin:
		return errf(proto.CodeForbidden, "role %s may not manage webhooks (admin may)", p.Role)
	case p.Boards != nil:
		return errf(proto.CodeForbidden, "a token limited to some boards may not manage webhooks")
	}
	return c.Next()
}

// webhookID is the path's webhook id, checked for syntax.
func webhookID(c *fiber.Ctx) (string, error) {
	id := c.Params("id")
	if !rank.ValidBoardID(id) {
		return "", fmt.Errorf("%w: field id: %q must match [A-Za-z0-9_.-]{1,64}", rank.ErrInvalidWebhook, id)
	}
	return id, nil
}

func (a *API) resolver() webhook.Resolver {
	if a.deps.Resolver == nil {
		return net.DefaultResolver
	}
	return a.deps.Resolver
}

// checkHookURL refuses a board whose validation hook's URL is a target
// webhooks may not reach (§13, §16), unless --webhook-allow-private.
func (a *API) checkHookURL(ctx context.Context, b rank.Board) error {
	if !b.Validated() || a.cfg.WebhookAllowPrivate {
		return nil
	}
	err := webhook.CheckURL(ctx, a.resolver(), b.Hook.URL)
	if errors.Is(err, rank.ErrInvalidWebhook) {
		_, why, _ := strings.Cut(err.Error(), "field url: ")
		return fmt.Errorf("%w: field validate: url: %s", rank.ErrInvalidConfig, why)
	}
	if err != nil {
		return fmt.Errorf("api: board %s: %w", b.ID, err)
	}
	return nil
}

// noWebhook is the 404 of a webhook that does not exist: not_found (R30).
func noWebhook(id string) *Error { return errf(proto.CodeNotFound, "no webhook %s", id) }

func (a *API) putWebhook(c *fiber.Ctx) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	w, err := rank.ParseWebhook(id, c.Body())
	if err != nil {
		return err
	}
	ctx := a.ctx()
	if !a.cfg.WebhookAllowPrivate {
		if err := (webhook.Guard{Loopback: a.cfg.WebhookAllowLoopback}).CheckURL(ctx, a.resolver(), w.URL); err != nil {
			return fmt.Errorf("api: put webhook %s: %w", id, err)
		}
	}
	stored, err := a.deps.Store.PutWebhook(ctx, w)
	if err != nil {
		return fmt.Errorf("api: put webhook %s: %w", id, err)
	}
	a.log.Info("api: webhook stored", "webhook", id, "by", principal(c).Member) // never the secret
	if a.deps.WebhookChanges != nil {
		a.deps.WebhookChanges.WebhookChanged()
	}
	return c.JSON(stored.Public())
}

func (a *API) getWebhook(c *fiber.Ctx) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	w, err := a.deps.Store.GetWebhook(a.ctx(), id)
	if errors.Is(err, rank.ErrNoWebhook) {
		return noWebhook(id)
	}
	if err != nil {
		return fmt.Errorf("api: get webhook %s: %w", id, err)
	}
	return c.JSON(w.Public())
}

func (a *API) listWebhooks(c *fiber.Ctx) error {
	ws, err := a.deps.Store.Webhooks(a.ctx())
	if err != nil {
		return fmt.Errorf("api: list webhooks: %w", err)
	}
	out := make([]rank.Webhook, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.Public())
	}
	return c.JSON(fiber.Map{"webhooks": out})
}

func (a *API) deleteWebhook(c *fiber.Ctx) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	err = a.deps.Store.DeleteWebhook(a.ctx(), id)
	if errors.Is(err, rank.ErrNoWebhook) {
		return noWebhook(id)
	}
	if err != nil {
		return fmt.Errorf("api: delete webhook %s: %w", id, err)
	}
	a.log.Info("api: webhook deleted", "webhook", id, "by", principal(c).Member)
	return c.SendStatus(http.StatusNoContent)
}

// deliveryBody is one delivery as listed (§13); next_attempt_at is unix
// ms, null once delivered or failed.
type deliveryBody struct {
	ID            string `json:"id"`
	Event         string `json:"event"`
	Board         string `json:"board"`
	Status        string `json:"status"`
	Attempts      int    `json:"attempts"`
	LastError     string `json:"last_error"`
	NextAttemptAt *int64 `json:"next_attempt_at"`
}

func (a *API) webhookDeliveries(c *fiber.Ctx) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	ds, err := a.deps.Store.Deliveries(a.ctx(), id)
	if errors.Is(err, rank.ErrNoWebhook) {
		return noWebhook(id)
	}
	if err != nil {
		return fmt.Errorf("api: deliveries of %s: %w", id, err)
	}
	out := make([]deliveryBody, 0, len(ds))
	for _, d := range ds {
		b := deliveryBody{ID: d.ID, Event: d.Event, Board: d.Board, Status: d.Status, Attempts: d.Attempts, LastError: d.LastError}
		if !d.NextAttemptAt.IsZero() {
			ms := d.NextAttemptAt.UnixMilli()
			b.NextAttemptAt = &ms
		}
		out = append(out, b)
	}
	return c.JSON(fiber.Map{"deliveries": out})
}

// memberBanned tells the webhooks that want member.banned of a ban just
// put (board "" for a global ban). The ban stands whatever this does: a
// store that fails here is logged, and the event is lost.
func (a *API) memberBanned(ctx context.Context, board string, ban rank.Ban) {
	data, _ := json.Marshal(map[string]string{"member": ban.Member}) // plain types
	marker := fmt.Sprintf("banned|%s|%s|%d", board, ban.Member, ban.At.UnixMilli())
	ev := rank.OutboxEvent{Event: rank.EventMemberBanned, Board: board, TS: ban.At, Data: data}
	if _, err := a.deps.Store.AppendOutbox(ctx, marker, rank.RetryFor, ev); err != nil {
		a.log.Warn("api: member.banned not appended", "member", ban.Member, "board", board, "err", err)
	}
}
