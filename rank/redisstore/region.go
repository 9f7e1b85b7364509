package redisstore

import (
	"context"
	"errors"

	"github.com/wsgateway/wsgateway/rank"
)

var errRegionsPending = errors.New("redisstore: region boards are not built yet")

func (s *Store) RegionTop(context.Context, string, rank.PeriodSel, string, int, int) (rank.Page, error) {
	return rank.Page{}, errRegionsPending
}

func (s *Store) Regions(context.Context, string, rank.PeriodSel) ([]rank.RegionCount, error) {
	return nil, errRegionsPending
}

func (s *Store) RegionRanks(context.Context, string, rank.PeriodSel, []string, int) (rank.Ranks, error) {
	return rank.Ranks{}, errRegionsPending
}
