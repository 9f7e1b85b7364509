package api

// Regions (docs/protocol.md §17): GET …/regions lists a period's regions,
// GET …/regions/{region}/top is top's (boards.go); member reads and score
// results carry the region and the rank there.

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/rank"
)

// warmRegions reads the profiles of a scores array's members on a region
// board in one batch, through the decorator (the node's profile cache), so
// that the apply path finds each member's country cached rather than
// reading the members one by one.
func (a *API) warmRegions(b rank.Board, items []scoreItem) {
	if !b.Regions || a.deps.Decorator == nil {
		return
	}
	seen := make(map[string]bool, len(items))
	es := make([]rank.Entry, 0, len(items))
	for _, it := range items {
		if it.err == nil && !seen[it.ev.Member] {
			seen[it.ev.Member] = true
			es = append(es, rank.Entry{Member: it.ev.Member})
		}
	}
	a.decorate(a.ctx(), es)
}

// regionsBody answers GET …/regions: the regions that hold entries, most
// members first.
type regionsBody struct {
	Board   string             `json:"board"`
	Regions []rank.RegionCount `json:"regions"`
}

func (a *API) regions(c *fiber.Ctx) error {
	id, err := boardParam(c)
	if err != nil {
		return err
	}
	rs, err := a.deps.Store.Regions(a.ctx(), id, rank.PeriodSel(c.Query("period")))
	if err != nil {
		return fmt.Errorf("api: regions %s: %w", id, err)
	}
	return c.JSON(regionsBody{Board: id, Regions: rs})
}
