package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// The review queue (docs/protocol.md §16): the members held in a period
// of a board, and the admin's three answers. Admin only, logged and
// counted as the other moderation actions (moderation.go).

// heldBody is a held member as the queue lists it.
type heldBody struct {
	Member string   `json:"member"`
	Reason string   `json:"reason"`
	At     string   `json:"at"`
	Score  int64    `json:"score"`
	Events []string `json:"events"`
}

func (a *API) listHeld(c *fiber.Ctx) error {
	id, err := boardParam(c)
	if err != nil {
		return err
	}
	hs, err := a.deps.Store.Held(a.ctx(), id, rank.PeriodSel(c.Query("period")))
	if err != nil {
		return fmt.Errorf("api: held of %s: %w", id, err)
	}
	out := make([]heldBody, 0, len(hs))
	for _, h := range hs {
		out = append(out, heldBody{Member: h.Member, Reason: h.Reason, At: h.At.UTC().Format(time.RFC3339Nano), Score: h.Score, Events: h.Events})
	}
	return c.JSON(fiber.Map{"held": out})
}

// review is POST …/held/{member}: {"action":"clear"} shows the member
// again, {"action":"remove"} removes its entry from the period,
// {"action":"ban","reason":"…"} bans it from the board (R21).
func (a *API) review(c *fiber.Ctx) error {
	id, err := boardParam(c)
	if err != nil {
		return err
	}
	m, err := memberParam(c)
	if err != nil {
		return err
	}
	action, reason, err := parseReview(c.Body())
	if err != nil {
		return err
	}
	period := rank.PeriodSel(c.Query("period"))
	ctx := a.ctx()
	notHeld := func() error { return noSuch("member %s is not held in that period of board %s", m, id) }
	switch action {
	case "clear":
		err = a.deps.Store.ClearHold(ctx, id, m, period)
	case "remove":
		err = a.deps.Store.RemoveMember(ctx, id, m, period)
		if errors.Is(err, rank.ErrNoEntry) {
			return notHeld()
		}
	case "ban":
		var ban rank.Ban
		if ban, err = a.deps.Store.BanMember(ctx, id, rank.Ban{Member: m, Reason: reason, By: principal(c).Member}); err != nil {
			return fmt.Errorf("api: ban %s on %s: %w", m, id, err)
		}
		a.memberBanned(ctx, id, ban)
		// The ban hides it now; the clear takes it off the queue.
		if err = a.deps.Store.ClearHold(ctx, id, m, period); errors.Is(err, rank.ErrNotHeld) {
			err = nil
		}
	}
	if errors.Is(err, rank.ErrNotHeld) {
		return notHeld()
	}
	if err != nil {
		return fmt.Errorf("api: %s held %s on %s: %w", action, m, id, err)
	}
	a.moderated(c, "held_"+action, id, m, "period", string(period), "reason", reason)
	return c.JSON(fiber.Map{"member": m, "action": action})
}

// parseReview reads a review body strictly: action, and reason with ban.
func parseReview(body []byte) (action, reason string, err error) {
	bad := func(format string, args ...any) (string, string, error) {
		return "", "", errf(proto.CodeBadRequest, format, args...)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return bad(`want a JSON object {"action":"clear"|"remove"|"ban","reason":"…"}`)
	}
	for k := range raw {
		if k != "action" && k != "reason" {
			return bad("field %s: unknown field", k)
		}
	}
	if err := json.Unmarshal(raw["action"], &action); err != nil || (action != "clear" && action != "remove" && action != "ban") {
		return bad(`field action: want "clear", "remove" or "ban"`)
	}
	if r, ok := raw["reason"]; ok {
		if action != "ban" {
			return bad("field reason: only with action ban")
		}
		ban, err := rank.ParseBan(append(append([]byte(`{"reason":`), r...), '}'))
		if err != nil {
			return "", "", err
		}
		reason = ban.Reason
	}
	return action, reason, nil
}
