package api

// Erasure and export of a member (docs/protocol.md §13, R29): admin only,
// with a token for every board, since both reach every board.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

func (a *API) eraseRoutes(add func(method, path string, hs ...fiber.Handler)) {
	const p = "/api/v1/members/:member"
	add(fiber.MethodDelete, p, a.authenticate, a.mayModerate, allBoards, a.eraseMember)
	add(fiber.MethodGet, p+"/export", a.authenticate, a.mayModerate, allBoards, a.exportMember)
}

// eraseMember answers {"boards","entries"}: the boards where something of
// the member was and the entries removed. A member the store does not know
// is erased too, with zeros: erasure is idempotent, so a retried request
// answers as the first did as far as the store is concerned.
func (a *API) eraseMember(c *fiber.Ctx) error {
	m, err := memberParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx()
	defer cancel()
	e, err := a.deps.Store.Erase(ctx, m)
	if err != nil {
		return fmt.Errorf("api: erase %s: %w", m, err)
	}
	// A separate profile store (the node's) forgets it too; the store's
	// own is gone with the rest.
	if err := a.deps.Profiles.DeleteProfile(ctx, m); err != nil && !errors.Is(err, rank.ErrNoProfile) {
		return fmt.Errorf("api: erase %s: %w", m, err)
	}
	a.modActions.WithLabelValues("erase").Inc()
	a.log.Info("api: moderation", "action", "erase", "sub", principal(c).Member, "boards", len(e.Boards), "entries", e.Entries)
	// Frames re-read the boards that changed, here and on the other nodes
	// (R29: within one interval).
	if a.deps.Boards != nil {
		for _, b := range e.Boards {
			a.deps.Boards.BoardChanged(b, false)
		}
	}
	a.profileChanged(m)
	a.memberErased(ctx, m)
	return c.JSON(fiber.Map{"boards": len(e.Boards), "entries": e.Entries})
}

// memberErased tells the webhooks that want member.erased. Its marker is
// random rather than the member's id: the erasure is one request, so
// there is nothing to dedupe, and the marker keeps no id.
func (a *API) memberErased(ctx context.Context, member string) {
	data, _ := json.Marshal(map[string]string{"member": member}) // plain types
	var r [12]byte
	_, _ = rand.Read(r[:])
	now, err := a.deps.Store.Now(ctx)
	if err != nil {
		a.log.Warn("api: member.erased not appended", "err", err)
		return
	}
	ev := rank.OutboxEvent{Event: rank.EventMemberErased, TS: now, Data: data}
	if _, err := a.deps.Store.AppendOutbox(ctx, "erased|"+hex.EncodeToString(r[:]), rank.RetryFor, ev); err != nil {
		a.log.Warn("api: member.erased not appended", "err", err)
	}
}

// exportEntry is rank.ExportEntry with its score printed with the board's
// decimals (hot boards).
type exportEntry struct {
	rank.ExportEntry
	Score json.Number `json:"score"`
}

func (a *API) exportMember(c *fiber.Ctx) error {
	m, err := memberParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx()
	defer cancel()
	x, err := a.deps.Store.Export(ctx, m)
	if err != nil {
		return fmt.Errorf("api: export %s: %w", m, err)
	}
	if p, err := a.deps.Profiles.GetProfile(ctx, m); err == nil {
		x.Profile = &p
	}
	entries := make([]exportEntry, len(x.Entries))
	for i, e := range x.Entries {
		entries[i] = exportEntry{ExportEntry: e, Score: json.Number(proto.FormatScore(e.Score, e.Decimals))}
	}
	return c.JSON(fiber.Map{"member": x.Member, "profile": x.Profile, "entries": entries, "history": x.History, "bans": x.Bans})
}
