package live

import (
	"context"
	"errors"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// Cohort top frames (docs/protocol.md §12): a subscription whose Group is
// a cohort gets that cohort's top-N (CohortTop) in its top slot instead of
// the board's, as a standings source (standings.go): on the board's read
// schedule, encoded once per (board, cohort, N). A change names its cohort
// and its ranks are within it, so it marks only its own cohort's frames.

// Cohort is the Group kind of a cohort's standings.
const Cohort = "cohort"

// cohortReader is the store read cohort frames make.
type cohortReader interface {
	CohortTop(ctx context.Context, board string, period rank.PeriodSel, cohort string, offset, limit int) (rank.Page, error)
}

type cohorts struct{ st cohortReader }

func newCohorts(st Store) (source, error) {
	cs, ok := st.(cohortReader)
	if !ok {
		return nil, errors.New("live: Config.Store has no CohortTop")
	}
	return cohorts{cs}, nil
}

func (cohorts) name() string { return Cohort }

func (cohorts) check(cfg rank.Board, id string) error {
	_, _, err := cfg.ParseCohortID(id)
	return err
}

func (cohorts) place(c rank.Change) (string, int64, int64, bool) {
	return c.Cohort, c.Rank, c.PrevRank, c.Cohort != ""
}

func (cs cohorts) top(ctx context.Context, board string, sel rank.PeriodSel, id string, n int) (rank.Page, error) {
	return cs.st.CohortTop(ctx, board, sel, id, 0, n)
}

func (cohorts) label(t *proto.Top, id string) { t.Cohort = id }
