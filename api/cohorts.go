package api

// Cohorts (docs/protocol.md §12): GET …/cohorts/{cohort}/top is top's
// (boards.go); member reads and score results carry the cohort and tier.

import (
	"context"
	"fmt"

	"github.com/wsgateway/wsgateway/rank"
)

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
