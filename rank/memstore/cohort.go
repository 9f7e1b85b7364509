package memstore

import (
	"context"
	"fmt"

	"github.com/wsgateway/wsgateway/rank"
)

// CohortTop reads one cohort of a period (§12). Cohort placement lands in
// the engine next; until then no board has cohorts to read.
func (s *Store) CohortTop(ctx context.Context, board string, period rank.PeriodSel, cohort string, offset, limit int) (rank.Page, error) {
	return rank.Page{}, fmt.Errorf("memstore: cohort top %s: %w: cohorts are not supported yet", board, rank.ErrBadRequest)
}

// MemberTier is a member's tier on a league board (§12).
func (s *Store) MemberTier(ctx context.Context, board string, period rank.PeriodSel, member string) (string, error) {
	return "", fmt.Errorf("memstore: member tier %s: %w: cohorts are not supported yet", board, rank.ErrBadRequest)
}
