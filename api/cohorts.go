package api

// Cohorts (docs/protocol.md §12): GET …/cohorts/{cohort}/top pages one
// cohort of a cohort board, as GET …/top pages the whole board.

import (
	"context"
	"fmt"
	"math"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// cohortPageBody answers GET …/cohorts/{cohort}/top: pageBody with the
// cohort; Total is the cohort's member count.
type cohortPageBody struct {
	Board   string        `json:"board"`
	Cohort  string        `json:"cohort"`
	Period  int64         `json:"period,omitempty"`
	Offset  int           `json:"offset"`
	Entries []proto.Entry `json:"entries"`
	Total   int64         `json:"total"`
}

func (a *API) cohortTop(c *fiber.Ctx) error {
	id, err := boardParam(c)
	if err != nil {
		return err
	}
	offset, err := queryInt(c, "offset", 0, 0, math.MaxInt32)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", DefaultLimit, 1, MaxLimit)
	if err != nil {
		return err
	}
	cohort := c.Params("cohort") // its form is the board's (rank.Board.ParseCohortID): the store checks it
	ctx, cancel := a.ctx()
	defer cancel()
	pg, err := a.deps.Store.CohortTop(ctx, id, rank.PeriodSel(c.Query("period")), cohort, offset, limit)
	if err != nil {
		return fmt.Errorf("api: cohort top %s: %w", id, err)
	}
	a.decorate(ctx, pg.Entries)
	return sendScores(c, cohortPageBody{Board: id, Cohort: cohort, Period: pg.Period, Offset: offset, Entries: proto.EntriesOf(pg.Entries), Total: pg.Total}, pg.Decimals)
}

// memberTier is member's tier on board in the period, "" on a board
// without a league; the cached config spares a board without one the
// store call.
func (a *API) memberTier(ctx context.Context, board string, period rank.PeriodSel, member string) (string, error) {
	b, err := a.deps.Store.Board(ctx, board)
	if err != nil {
		return "", fmt.Errorf("api: rank %s: %w", board, err)
	}
	if !b.Leagued() {
		return "", nil
	}
	t, err := a.deps.Store.MemberTier(ctx, board, period, member)
	if err != nil {
		return "", fmt.Errorf("api: member tier %s: %w", board, err)
	}
	return t, nil
}
