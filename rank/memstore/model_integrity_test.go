package memstore_test

import (
	"context"

	"github.com/wsgateway/wsgateway/rank"
)

// The model has no boards with a hook or flags (the differential tests'
// configs never set them): nothing is claimed or held, and every member
// sees what Ranks reads.

func (m *model) Reject(context.Context, rank.Event, string, string) (bool, error) { return false, nil }

func (m *model) Held(context.Context, string, rank.PeriodSel) ([]rank.Held, error) {
	return []rank.Held{}, nil
}

func (m *model) ClearHold(context.Context, string, string, rank.PeriodSel) error {
	return rank.ErrNotHeld
}

func (m *model) SelfRanks(ctx context.Context, id string, sel rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	return m.Ranks(ctx, id, sel, members, around)
}
