package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// Moderation routes (docs/protocol.md §7, R21): admin only. Each action is
// logged with the admin's sub and counted by action; each is a change of
// the boards' reads, so the board listener re-reads frames on every node
// (every board for a global ban).
func (a *API) moderationRoutes(add func(method, path string, hs ...fiber.Handler)) {
	const b = "/api/v1/boards/:board"
	add(fiber.MethodPut, b+"/bans/:member", a.authenticate, a.mayModerate, a.putBan)
	add(fiber.MethodDelete, b+"/bans/:member", a.authenticate, a.mayModerate, a.liftBan)
	add(fiber.MethodGet, b+"/bans", a.authenticate, a.mayModerate, a.listBans)
	add(fiber.MethodDelete, b+"/members/:member", a.authenticate, a.mayModerate, a.removeMember)
	add(fiber.MethodGet, b+"/held", a.authenticate, a.mayModerate, a.listHeld)
	add(fiber.MethodPost, b+"/held/:member", a.authenticate, a.mayModerate, a.review)
	const g = "/api/v1/bans"
	add(fiber.MethodPut, g+"/:member", a.authenticate, a.mayModerate, allBoards, a.putGlobalBan)
	add(fiber.MethodDelete, g+"/:member", a.authenticate, a.mayModerate, allBoards, a.liftGlobalBan)
	add(fiber.MethodGet, g, a.authenticate, a.mayModerate, allBoards, a.listGlobalBans)
}

// moderationMetrics counts moderation actions by action.
func newModerationMetric(reg *prometheus.Registry) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wsgateway_moderation_actions_total",
		Help: "Moderation actions done through the API (ban, lift, global_ban, global_lift, remove, held_clear, held_remove, held_ban).",
	}, []string{"action"})
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("api: register metrics: %w", err)
	}
	return c, nil
}

func (a *API) mayModerate(c *fiber.Ctx) error {
	if p := principal(c); p.Role != auth.Admin {
		return errf(proto.CodeForbidden, "role %s may not moderate (admin may)", p.Role)
	}
	return c.Next()
}

// allBoards lets through only a token whose boards claim does not
// restrict it: a global action (a global ban, a profile written or
// deleted) reaches every board, so a token limited to some may not take it.
func allBoards(c *fiber.Ctx) error {
	if principal(c).Boards != nil {
		return errf(proto.CodeForbidden, "this token is limited to some boards; global bans and profile changes need a token for every board")
	}
	return c.Next()
}

// banBody is a ban as listed (§7).
type banBody struct {
	Member string  `json:"member"`
	Reason string  `json:"reason"`
	Until  *string `json:"until"`
	At     string  `json:"at"`
}

func banJSON(b rank.Ban) banBody {
	out := banBody{Member: b.Member, Reason: b.Reason, At: b.At.UTC().Format(time.RFC3339Nano)}
	if !b.Until.IsZero() {
		u := b.Until.UTC().Format(time.RFC3339Nano)
		out.Until = &u
	}
	return out
}

func bansJSON(bs []rank.Ban) fiber.Map {
	out := make([]banBody, 0, len(bs))
	for _, b := range bs {
		out = append(out, banJSON(b))
	}
	return fiber.Map{"bans": out}
}

// noSuch is the 404 of a lift of no ban or a removal of no entry:
// not_found (R30), as a missing profile.
func noSuch(format string, args ...any) *Error {
	return errf(proto.CodeNotFound, format, args...)
}

// moderated logs and counts a done action and tells the listener.
func (a *API) moderated(c *fiber.Ctx, action, board, member string, attrs ...any) {
	a.modActions.WithLabelValues(action).Inc()
	args := append([]any{"action", action, "member", member, "sub", principal(c).Member}, attrs...)
	if board != "" {
		args = append(args, "board", board)
	}
	a.log.Info("api: moderation", args...)
	if a.deps.Boards == nil {
		return
	}
	if board != "" {
		a.deps.Boards.BoardChanged(board, false)
		return
	}
	// A global action changes every board's reads.
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.Timeout)
	defer cancel()
	bs, err := a.deps.Store.Boards(ctx)
	if err != nil {
		a.log.Warn("api: moderation: boards not re-read", "action", action, "err", err)
		return
	}
	for _, b := range bs {
		a.deps.Boards.BoardChanged(b.ID, false)
	}
}

// banRequest is the ban a PUT …/bans/{member} asks for: the member from
// the path, the reason and until from the body, by the admin's sub.
func banRequest(c *fiber.Ctx) (rank.Ban, error) {
	m, err := memberParam(c)
	if err != nil {
		return rank.Ban{}, err
	}
	ban, err := rank.ParseBan(c.Body())
	if err != nil {
		return rank.Ban{}, err
	}
	ban.Member, ban.By = m, principal(c).Member
	return ban, nil
}

func (a *API) putBan(c *fiber.Ctx) error {
	id, err := boardParam(c)
	if err != nil {
		return err
	}
	ban, err := banRequest(c)
	if err != nil {
		return err
	}
	m := ban.Member
	ctx := a.ctx()
	ban, err = a.deps.Store.BanMember(ctx, id, ban)
	if err != nil {
		return fmt.Errorf("api: ban %s on %s: %w", m, id, err)
	}
	a.moderated(c, "ban", id, m, "reason", ban.Reason, "until", ban.Until)
	a.memberBanned(ctx, id, ban)
	return c.JSON(banJSON(ban))
}

func (a *API) liftBan(c *fiber.Ctx) error {
	id, err := boardParam(c)
	if err != nil {
		return err
	}
	m, err := memberParam(c)
	if err != nil {
		return err
	}
	err = a.deps.Store.LiftBan(a.ctx(), id, m)
	if errors.Is(err, rank.ErrNoBan) {
		return noSuch("member %s is not banned from board %s", m, id)
	}
	if err != nil {
		return fmt.Errorf("api: lift ban %s on %s: %w", m, id, err)
	}
	a.moderated(c, "lift", id, m)
	return c.SendStatus(http.StatusNoContent)
}

func (a *API) listBans(c *fiber.Ctx) error {
	id, err := boardParam(c)
	if err != nil {
		return err
	}
	bs, err := a.deps.Store.Bans(a.ctx(), id)
	if err != nil {
		return fmt.Errorf("api: bans of %s: %w", id, err)
	}
	return c.JSON(bansJSON(bs))
}

func (a *API) removeMember(c *fiber.Ctx) error {
	id, err := boardParam(c)
	if err != nil {
		return err
	}
	m, err := memberParam(c)
	if err != nil {
		return err
	}
	period := rank.PeriodSel(c.Query("period"))
	err = a.deps.Store.RemoveMember(a.ctx(), id, m, period)
	if errors.Is(err, rank.ErrNoEntry) {
		return noSuch("member %s has no entry in that period of board %s", m, id)
	}
	if err != nil {
		return fmt.Errorf("api: remove %s from %s: %w", m, id, err)
	}
	a.moderated(c, "remove", id, m, "period", string(period))
	return c.SendStatus(http.StatusNoContent)
}

func (a *API) putGlobalBan(c *fiber.Ctx) error {
	ban, err := banRequest(c)
	if err != nil {
		return err
	}
	m := ban.Member
	ctx := a.ctx()
	ban, err = a.deps.Store.PutGlobalBan(ctx, ban)
	if err != nil {
		return fmt.Errorf("api: global ban %s: %w", m, err)
	}
	a.moderated(c, "global_ban", "", m, "reason", ban.Reason, "until", ban.Until)
	a.memberBanned(ctx, "", ban)
	return c.JSON(banJSON(ban))
}

func (a *API) liftGlobalBan(c *fiber.Ctx) error {
	m, err := memberParam(c)
	if err != nil {
		return err
	}
	err = a.deps.Store.LiftGlobalBan(a.ctx(), m)
	if errors.Is(err, rank.ErrNoBan) {
		return noSuch("member %s has no global ban", m)
	}
	if err != nil {
		return fmt.Errorf("api: lift global ban %s: %w", m, err)
	}
	a.moderated(c, "global_lift", "", m)
	return c.SendStatus(http.StatusNoContent)
}

func (a *API) listGlobalBans(c *fiber.Ctx) error {
	bs, err := a.deps.Store.GlobalBans(a.ctx())
	if err != nil {
		return fmt.Errorf("api: global bans: %w", err)
	}
	return c.JSON(bansJSON(bs))
}
