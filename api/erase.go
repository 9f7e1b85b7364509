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
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

func (a *API) eraseRoutes(add func(method, path string, hs ...fiber.Handler)) {
	const p = "/api/v1/members/:member"
	add(fiber.MethodDelete, p, a.authenticate, a.mayModerate, allBoards, a.eraseMember)
	add(fiber.MethodGet, p+"/export", a.authenticate, a.mayModerate, allBoards, a.exportMember)
}

// eraseBody answers an erasure: the boards where something of the member
// was (an entry, a ban, a name, records), the entries (scores, one per
// board and period) and idempotency records removed, whether a profile
// and a ban from every board were, and whether the erasure is done.
type eraseBody struct {
	Boards    int   `json:"boards"`
	Entries   int64 `json:"entries"`
	Records   int64 `json:"records"`
	Profile   bool  `json:"profile"`
	GlobalBan bool  `json:"global_ban"`
	Done      bool  `json:"done"`
}

// eraseMember answers {"boards","entries","records","profile",
// "global_ban","done"}: 200 when the member is erased, 202 with done false
// when Config.EraseBudget ran out first (a busy board's millions of
// idempotency records): the store kept its place, and the same DELETE
// again goes on from there, its counts including the earlier ones. A
// member the store held nothing of is a 404 not_found (R30), and no
// webhook hears of it: so is a DELETE repeated after the erasure.
func (a *API) eraseMember(c *fiber.Ctx) error {
	m, err := memberParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.EraseBudget)
	defer cancel()
	e, err := a.deps.Store.Erase(ctx, m)
	if err != nil {
		return fmt.Errorf("api: erase %s: %w", m, err)
	}
	body := eraseBody{Boards: len(e.Boards), Entries: e.Entries, Records: e.Records, Profile: e.Profile, GlobalBan: e.GlobalBan, Done: e.Done}
	if !e.Done {
		// Frames re-read what is gone so far; the profile and the event
		// wait for the end.
		a.boardsChanged(e.Boards)
		a.log.Info("api: moderation", "action", "erase", "sub", principal(c).Member, "done", false, "boards", len(e.Boards), "entries", e.Entries, "records", e.Records)
		c.Set(fiber.HeaderRetryAfter, "1")
		return c.Status(http.StatusAccepted).JSON(body)
	}
	ctx = a.ctx()
	// A separate profile store (the node's) forgets it too; the store's
	// own is gone with the rest.
	switch err := a.deps.Profiles.DeleteProfile(ctx, m); {
	case err == nil:
		e.Profile, body.Profile = true, true
	case !errors.Is(err, rank.ErrNoProfile):
		return fmt.Errorf("api: erase %s: %w", m, err)
	}
	if !e.Found() {
		return errf(proto.CodeNotFound, "member %s: nothing to erase (no score, record, ban or profile)", m)
	}
	a.modActions.WithLabelValues("erase").Inc()
	a.log.Info("api: moderation", "action", "erase", "sub", principal(c).Member, "done", true, "boards", len(e.Boards), "entries", e.Entries, "records", e.Records)
	a.boardsChanged(e.Boards)
	a.profileChanged(m)
	a.memberErased(ctx, m)
	return c.JSON(body)
}

// boardsChanged has frames re-read boards an erasure changed, here and on
// the other nodes (R29: within one interval).
func (a *API) boardsChanged(boards []string) {
	if a.deps.Boards == nil {
		return
	}
	for _, b := range boards {
		a.deps.Boards.BoardChanged(b, false)
	}
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
	ctx := a.ctx()
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
