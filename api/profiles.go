package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// ProfileListener hears of every profile written or deleted through the
// API, after the store has it (the node drops its cached copy, re-sends
// the frames that show the member and tells the other nodes).
type ProfileListener interface {
	ProfileChanged(members ...string)
}

// Profile routes (docs/protocol.md §7): PUT by server and admin, GET by any
// valid token, DELETE by admin. Profiles are global: reading one needs no
// board, but writing or deleting one changes every board it shows on, so
// it needs a token not limited to some boards (allBoards).
func (a *API) profileRoutes(add func(method, path string, hs ...fiber.Handler)) {
	const p = "/api/v1/members/:member/profile"
	add(fiber.MethodPut, p, a.authenticate, allBoards, a.putProfile)
	add(fiber.MethodGet, p, a.authenticate, a.getProfile)
	add(fiber.MethodDelete, p, a.authenticate, allBoards, a.deleteProfile)
}

// memberParam is the path's member id, checked for syntax (R15).
func memberParam(c *fiber.Ctx) (string, error) {
	m := c.Params("member")
	if !rank.ValidMemberID(m) {
		return "", fmt.Errorf("%w: %q must match [A-Za-z0-9_.:@-]{1,64}", rank.ErrInvalidMember, m)
	}
	return m, nil
}

// noProfile is the 404 of a member without a profile: not_found (R30).
func noProfile(member string) *Error {
	return errf(proto.CodeNotFound, "member %s has no profile", member)
}

func (a *API) putProfile(c *fiber.Ctx) error {
	m, err := memberParam(c)
	if err != nil {
		return err
	}
	if p := principal(c); p.Role != auth.Server && p.Role != auth.Admin {
		return errf(proto.CodeForbidden, "role %s may not write profiles (server and admin may)", p.Role)
	}
	prof, err := rank.ParseProfile(c.Body())
	if err != nil {
		return err
	}
	if err := a.deps.Profiles.PutProfile(a.ctx(), m, prof); err != nil {
		return fmt.Errorf("api: put profile %s: %w", m, err)
	}
	a.profileChanged(m)
	return c.JSON(prof)
}

func (a *API) getProfile(c *fiber.Ctx) error {
	m, err := memberParam(c)
	if err != nil {
		return err
	}
	prof, err := a.deps.Profiles.GetProfile(a.ctx(), m)
	if errors.Is(err, rank.ErrNoProfile) {
		return noProfile(m)
	}
	if err != nil {
		return fmt.Errorf("api: get profile %s: %w", m, err)
	}
	return c.JSON(prof)
}

func (a *API) deleteProfile(c *fiber.Ctx) error {
	m, err := memberParam(c)
	if err != nil {
		return err
	}
	if p := principal(c); p.Role != auth.Admin {
		return errf(proto.CodeForbidden, "role %s may not delete profiles (admin may)", p.Role)
	}
	err = a.deps.Profiles.DeleteProfile(a.ctx(), m)
	if errors.Is(err, rank.ErrNoProfile) {
		return noProfile(m)
	}
	if err != nil {
		return fmt.Errorf("api: delete profile %s: %w", m, err)
	}
	a.profileChanged(m)
	return c.SendStatus(http.StatusNoContent)
}

func (a *API) profileChanged(member string) {
	if a.deps.ProfileChanges != nil {
		a.deps.ProfileChanges.ProfileChanged(member)
	}
}

// decorate gives the entries of a REST read their profile fields (R20).
func (a *API) decorate(ctx context.Context, lists ...[]rank.Entry) {
	if a.deps.Decorator != nil {
		a.deps.Decorator.Decorate(ctx, lists...)
	}
}
